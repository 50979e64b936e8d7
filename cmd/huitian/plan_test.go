package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files (only when the change is understood)")

func run(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(args)
	err = cmd.Execute()
	return out.String(), errb.String(), err
}

// TestPlanGolden: the example snapshot's decision under every policy, as
// the readable table, against testdata/plan-<policy>.golden.
func TestPlanGolden(t *testing.T) {
	for _, p := range []string{"fcfs", "easy", "conservative", "easy-sjbf", "hybrid", "huitian-greedy", "huitian"} {
		t.Run(p, func(t *testing.T) {
			out, _, err := run(t, "", "plan", "--example", "--format", "table", "--policy", p)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "plan-"+p+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if out != string(want) {
				t.Errorf("decision changed; got:\n%s\nwant:\n%s", out, want)
			}
		})
	}
}

// TestPlanBadInput: exit status 2, every violation on stderr, nothing on stdout.
func TestPlanBadInput(t *testing.T) {
	bad := strings.Replace(string(exampleSnapshot), `"id": "eval-1", "user": "frank", "jobClass": "evaluation", "cards": 1`,
		`"id": "eval-1", "user": "frank", "jobClass": "evaluation", "cards": 0`, 1)
	bad = strings.Replace(bad, `"id": "hpo-2"`, `"id": "train-a"`, 1)
	out, stderr, err := run(t, bad, "plan", "--snapshot", "-")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 {
		t.Fatalf("err = %v, want exit status 2", err)
	}
	if out != "" {
		t.Errorf("stdout not empty: %q", out)
	}
	for _, w := range []string{"queued[1].cards", "queued[3].id: duplicate of running[0]"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
}

func TestPlanJSON(t *testing.T) {
	out, _, err := run(t, "", "plan", "--example")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"reservations"`) || !strings.Contains(out, `"ALLOCATION_KIND_BACKFILL"`) {
		t.Fatalf("unexpected output:\n%s", out)
	}
}
