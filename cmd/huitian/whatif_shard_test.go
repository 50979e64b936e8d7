package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runShards runs args as n shards, each writing part-i.json (part-i.json.gz
// for odd i, to read both) into dir, and returns the files in reverse order
// (the merge must not depend on it).
func runShards(t *testing.T, dir string, n int, args ...string) []string {
	t.Helper()
	var files []string
	for i := n - 1; i >= 0; i-- {
		name := fmt.Sprintf("part-%d.json", i)
		if i%2 == 1 {
			name += ".gz"
		}
		path := filepath.Join(dir, name)
		out, stderr, err := runCLI(t, append(args, "--shard", fmt.Sprintf("%d/%d", i, n), "--shard-out", path)...)
		var ee *exitError
		if err != nil && !(errors.As(err, &ee) && ee.code == 1) {
			t.Fatalf("shard %d/%d: %v\n%s", i, n, err, stderr)
		}
		if out != "" {
			t.Errorf("shard %d/%d wrote to stdout: %q", i, n, out)
		}
		files = append(files, path)
	}
	return files
}

// sameFiles fails unless the two folders hold the same files, byte for byte.
func sameFiles(t *testing.T, want, got string) {
	t.Helper()
	wantFiles, err := filepath.Glob(filepath.Join(want, "*"))
	if err != nil || len(wantFiles) == 0 {
		t.Fatalf("%s: no files (%v)", want, err)
	}
	for _, w := range wantFiles {
		a, err := os.ReadFile(w)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(got, filepath.Base(w)))
		if err != nil {
			t.Errorf("merged: %v", err)
			continue
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the merge's differs from the single run's", filepath.Base(w))
		}
	}
	gotFiles, _ := filepath.Glob(filepath.Join(got, "*"))
	if len(gotFiles) != len(wantFiles) {
		t.Errorf("merged %d files, the single run %d", len(gotFiles), len(wantFiles))
	}
}

// TestShardWhatifMergeEqualsSingleRun: four policies split over three
// shards (one shard gets two runs) and merged give the single run's JSON,
// table, job CSVs and report, byte for byte.
func TestShardWhatifMergeEqualsSingleRun(t *testing.T) {
	dir := t.TempDir()
	args := []string{"whatif", "--trace", "synth:jobs=250,seed=3,cards=32", "--cluster", "hgx:4",
		"--policy", "easy,fcfs,conservative,huitian-greedy", "--reference", "conservative"}
	single := filepath.Join(dir, "single")
	wantJSON, stderr, err := runCLI(t, append(args, "--json", "--jobs", filepath.Join(single, "jobs"), "--report", filepath.Join(single, "report"))...)
	if err != nil {
		t.Fatalf("single run: %v\n%s", err, stderr)
	}
	wantTable, stderr, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("single run: %v\n%s", err, stderr)
	}

	files := runShards(t, dir, 3, args...)
	merged := filepath.Join(dir, "merged")
	gotJSON, stderr, err := runCLI(t, append([]string{"whatif", "merge", "--json", "--jobs", filepath.Join(merged, "jobs"), "--report", filepath.Join(merged, "report")}, files...)...)
	if err != nil {
		t.Fatalf("merge: %v\n%s", err, stderr)
	}
	if gotJSON != wantJSON {
		t.Errorf("merged JSON differs from the single run's:\n%s\nwant:\n%s", gotJSON, wantJSON)
	}
	gotTable, stderr, err := runCLI(t, append([]string{"whatif", "merge"}, files...)...)
	if err != nil {
		t.Fatalf("merge: %v\n%s", err, stderr)
	}
	if gotTable != wantTable {
		t.Errorf("merged table differs from the single run's:\n%s\nwant:\n%s", gotTable, wantTable)
	}
	sameFiles(t, filepath.Join(single, "jobs"), filepath.Join(merged, "jobs"))
	sameFiles(t, filepath.Join(single, "report"), filepath.Join(merged, "report"))
}

// TestShardSuiteMergeEqualsSingleRun: the suite's synthetic workloads (two
// seeds × two loads × two policies and the control: twelve runs, or 24 with
// two replicas) split over three shards and merged give the whole suite's
// JSON, byte for byte.
func TestShardSuiteMergeEqualsSingleRun(t *testing.T) {
	for _, extra := range [][]string{nil, {"--replicas", "2"}} {
		t.Run(strings.Join(append([]string{"one run"}, extra...), " "), func(t *testing.T) {
			testShardSuiteMerge(t, extra)
		})
	}
}

// testShardSuiteMerge is TestShardSuiteMergeEqualsSingleRun with extra
// flags (--replicas: each workload's replicas are runs of their own).
func testShardSuiteMerge(t *testing.T, extra []string) {
	dir := t.TempDir()
	args := append([]string{"whatif", "--suite", "--traces", dir, "--suite-traces", "synth", "--suite-seeds", "1-2",
		"--suite-loads", "0.8,1.1", "--suite-synth-jobs", "150", "--policy", "easy,huitian-greedy"}, extra...)
	want, stderr, err := runCLI(t, append(args, "--json")...)
	var ee *exitError
	if err != nil && !(errors.As(err, &ee) && ee.code == 1) {
		t.Fatalf("suite: %v\n%s", err, stderr)
	}
	wantCode := 0
	if err != nil {
		wantCode = 1
	}
	files := runShards(t, dir, 3, args...)
	got, stderr, err := runCLI(t, append([]string{"whatif", "merge", "--json"}, files...)...)
	gotCode := 0
	if errors.As(err, &ee) {
		gotCode = ee.code
	} else if err != nil {
		t.Fatalf("merge: %v\n%s", err, stderr)
	}
	if got != want || gotCode != wantCode {
		t.Errorf("merged suite (exit %d) differs from the whole suite's (exit %d):\n%s\nwant:\n%s", gotCode, wantCode, got, want)
	}
	if !strings.Contains(want, `"workload": "synth:jobs=150,seed=2"`) {
		t.Errorf("the suite did not run the second seed:\n%s", want)
	}
}

// TestShardMergeRefuses: a missing shard, a shard given twice, parts of
// another sweep and flags a shard cannot honour exit with status 2.
func TestShardMergeRefuses(t *testing.T) {
	dir := t.TempDir()
	args := []string{"whatif", "--trace", "synth:jobs=60,seed=1,cards=16", "--cluster", "hgx:2", "--policy", "easy,fcfs"}
	files := runShards(t, dir, 2, args...)
	other := runShards(t, t.TempDir(), 2, append(args[:len(args):len(args)], "--estimates", "exact")...)
	ties := runShards(t, t.TempDir(), 2, append(args[:len(args):len(args)], "--ties", "arrival")...)
	// part-0.json claiming a sweep of 2^62 shards, and one claiming to be
	// shard 5 of 2.
	part0, err := os.ReadFile(files[1])
	if err != nil {
		t.Fatal(err)
	}
	huge, beyond := filepath.Join(dir, "huge.json"), filepath.Join(dir, "beyond.json")
	for path, edit := range map[string][2]string{huge: {`"shards":2`, `"shards":4611686018427387904`}, beyond: {`"shard":0`, `"shard":5`}} {
		if !bytes.Contains(part0, []byte(edit[0])) {
			t.Fatalf("part-0.json has no %s", edit[0])
		}
		if err := os.WriteFile(path, bytes.Replace(part0, []byte(edit[0]), []byte(edit[1]), 1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a shard is missing", []string{"whatif", "merge", files[0]}, "no file for shard"},
		{"2^62 shards", []string{"whatif", "merge", huge}, "no file for shard 1/4611686018427387904, 2/4611686018427387904"},
		{"a shard beyond the count", []string{"whatif", "merge", beyond, files[0]}, "shard 5 of 2"},
		{"a shard twice", []string{"whatif", "merge", files[0], files[1], files[0]}, "are both shard"},
		{"another sweep", []string{"whatif", "merge", files[0], other[0]}, "different sweeps"},
		{"other ties", []string{"whatif", "merge", files[0], ties[0]}, "different sweeps"},
		{"not a partial result", []string{"whatif", "merge", filepath.Join(dir, "nothing.json")}, "merge"},
		{"--json on a shard", append(args, "--shard", "0/2", "--json"), "--json is for the merge"},
		{"a shard out of range", append(args, "--shard", "2/2"), "--shard"},
		{"--shard-out alone", append(args, "--shard-out", filepath.Join(dir, "x.json")), "--shard-out"},
		{"--pair sharded", []string{"whatif", "--trace", "synth:jobs=60,seed=1,cards=16", "--cluster", "hgx:2", "--pair", "easy,fcfs", "--shard", "0/2"}, "--pair"},
	} {
		_, _, err := runCLI(t, tc.args...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want exit status 2 and %q", tc.name, err, tc.want)
		}
	}
}
