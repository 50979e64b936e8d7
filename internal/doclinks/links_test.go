package doclinks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRepositoryDocs checks README.md and docs/*.md of this repository.
func TestRepositoryDocs(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found from %s: %v", root, err)
	}
	docs, err := Documents(root)
	if err != nil {
		t.Fatal(err)
	}
	problems, err := Check(root, docs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		doc  string // written as docs/a.md
		want []string
	}{
		{"a link to a file of the repository passes", "see [b](b.md) and [up](../README.md)\n", nil},
		{"a link to a folder passes", "see [docs](../docs/)\n", nil},
		{"a link to a heading that exists passes", "see [h](b.md#the-cycle-step-1)\n", nil},
		{"a link to a heading of the same file passes", "# Top\nsee [t](#top)\n", nil},
		{"web links are not checked", "see [w](https://example.com/x.md) and <a href=\"mailto:x@y\">m</a>\n", nil},
		{"a link to a missing file fails", "see [m](missing.md)\n",
			[]string{"docs/a.md:1: link missing.md: no such file in the repository"}},
		{"a link to a missing heading fails", "x\n\nsee [h](b.md#nope)\n",
			[]string{"docs/a.md:3: link b.md#nope: docs/b.md has no heading #nope"}},
		{"a link outside the repository fails", "see\n[s](../../shared/DESIGN.md)\n",
			[]string{"docs/a.md:2: ../../shared/DESIGN.md leads outside the repository",
				"docs/a.md:2: link ../../shared/DESIGN.md leads outside the repository"}},
		{"an absolute link fails", "see [s](/docs/b.md)\n",
			[]string{"docs/a.md:1: link /docs/b.md is absolute: give a path relative to docs/a.md"}},
		{"a reference definition is checked", "[s][x]\n\n[x]: gone.md\n",
			[]string{"docs/a.md:3: link gone.md: no such file in the repository"}},
		{"a path in a code block that leaves the repository fails", "```\nwhatif --traces ../../traces\n```\n",
			[]string{"docs/a.md:2: ../../traces leads outside the repository"}},
		{"links in code blocks are not links", "```\n[x](missing.md)\n```\n", nil},
		{"a link text may span lines", "see [the\nfile](b.md) and [the\nother](c.md)\n",
			[]string{"docs/a.md:3: link c.md: no such file in the repository"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			must(t, os.MkdirAll(filepath.Join(root, "docs"), 0o755))
			must(t, os.WriteFile(filepath.Join(root, "README.md"), []byte("# huitian\n"), 0o644))
			must(t, os.WriteFile(filepath.Join(root, "docs", "b.md"), []byte("# B\n\n## The cycle, step 1\n"), 0o644))
			must(t, os.WriteFile(filepath.Join(root, "docs", "a.md"), []byte(tt.doc), 0o644))
			got, err := Check(root, []string{"docs/a.md"})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckNamesTheFolderAroundTheRepository(t *testing.T) {
	around := t.TempDir()
	root := filepath.Join(around, "repo")
	must(t, os.MkdirAll(root, 0o755))
	text := "the traces are in " + filepath.ToSlash(around) + "/shared/traces\n"
	must(t, os.WriteFile(filepath.Join(root, "README.md"), []byte(text), 0o644))
	got, err := Check(root, []string{"README.md"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.Contains(got[0], "README.md:1: ") || !strings.Contains(got[0], "is outside the repository") {
		t.Errorf("problems = %q, want one naming README.md:1 and the folder outside", got)
	}
}

func TestAnchors(t *testing.T) {
	text := "# huitian (回填, \"backfill\")\n## The promise, and how the cycle keeps it\n## The tuner (tune/)\n" +
		"```\n# not a heading\n```\n### Users: huitian jobs / huitian job\n## Words\n## Words\n#no-space\n"
	want := []string{"huitian-回填-backfill", "the-promise-and-how-the-cycle-keeps-it", "the-tuner-tune",
		"users-huitian-jobs--huitian-job", "words", "words-1"}
	if diff := cmp.Diff(want, Anchors(text)); diff != "" {
		t.Errorf("anchors (-want +got):\n%s", diff)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
