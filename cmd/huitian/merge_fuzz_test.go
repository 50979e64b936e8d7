package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// FuzzMerge merges an arbitrary file as the one shard of a sweep: a
// partial result that is not one (damaged, edited, of another version)
// is refused with exit status 2 and a message, never a panic; what a
// merge accepts it writes as a single run would (the table, with --json
// the JSON). The seeds are real shards' files, of a whatif sweep and of
// the suite, whole and with the shard count and a run number made bad.
func FuzzMerge(f *testing.F) {
	dir := f.TempDir()
	for i, args := range [][]string{
		{"whatif", "--trace", "synth:jobs=4,seed=1,cards=8", "--cluster", "hgx:1", "--policy", "easy,fcfs"},
		{"whatif", "--suite", "--traces", f.TempDir(), "--suite-traces", "synth", "--suite-seeds", "1", "--suite-loads", "0.7",
			"--suite-synth-jobs", "6", "--suite-control=false"},
	} {
		path := filepath.Join(dir, fmt.Sprintf("part-%d.json", i))
		root := newRootCmd()
		var out, errb bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errb)
		root.SetArgs(append(args, "--shard", "0/1", "--shard-out", path))
		var ee *exitError
		if err := root.Execute(); err != nil && !(errors.As(err, &ee) && ee.code == 1) { // 1: a suite row failed
			f.Fatalf("shard: %v\n%s", err, errb.String())
		}
		seed, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(seed)
		f.Add(bytes.Replace(seed, []byte(`"shards":1`), []byte(`"shards":4611686018427387904`), 1))
		f.Add(bytes.Replace(seed, []byte(`"run":1`), []byte(`"run":-1`), 1))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "part.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, asJSON := range []bool{false, true} {
			args := []string{"whatif", "merge", path}
			if asJSON {
				args = append(args, "--json")
			}
			root := newRootCmd()
			var out, errb bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&errb)
			root.SetArgs(args)
			err := root.Execute()
			var ee *exitError
			if err != nil && !(errors.As(err, &ee) && (ee.code == 2 || ee.code == 1)) {
				t.Fatalf("merge: %v, want exit status 2 for a file that is not a partial result", err)
			}
		}
	})
}
