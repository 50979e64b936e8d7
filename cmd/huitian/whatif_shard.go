package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/huitian/huitian/sim"
)

// A sweep split with --shard i/n: each shard makes the runs (workload ×
// policy, numbered in order) whose number is i modulo n and writes them,
// whole (every job's outcome, the series), as a partial result; `huitian
// whatif merge` reads every shard's file, checks that they are the parts
// of one sweep, and writes what the single run would have written, from the
// same code (writeWhatif, writeSuite).

// shardFormat names the partial result's format and its version.
const shardFormat = "huitian-whatif-shard/1"

// The kinds of sweep a partial result is part of.
const (
	shardKindWhatif = "whatif" // one trace under several policies
	shardKindSuite  = "suite"  // the robustness suite
)

// shardFile is a partial result: one shard's runs and the sweep they are
// part of.
type shardFile struct {
	Format string `json:"format"`
	Kind   string `json:"kind"`
	Shard  int    `json:"shard"`
	Shards int    `json:"shards"`
	// Runs is how many runs the whole sweep makes.
	Runs int `json:"runs"`
	// Sweep says what the output says besides the results (a whatifSweep
	// or a suiteSweep): the same in every shard of a sweep.
	Sweep   json.RawMessage `json:"sweep"`
	Results []shardRun      `json:"results"`
}

// shardRun is one run of a shard.
type shardRun struct {
	Run      int         `json:"run"` // its number in the whole sweep
	Workload int         `json:"workload"`
	Policy   string      `json:"policy"`
	Result   *sim.Result `json:"result"`
}

// parseShardFlags checks --shard and the flags it excludes.
func parseShardFlags(cmd *cobra.Command, f *whatifFlags) (sim.Shard, error) {
	if f.shard == "" {
		if f.shardOut != "" {
			return sim.Shard{}, errors.New("--shard-out: give --shard too")
		}
		return sim.Shard{}, nil
	}
	sh, err := sim.ParseShard(f.shard)
	if err != nil {
		return sim.Shard{}, fmt.Errorf("--shard: %w", err)
	}
	for _, other := range []string{"json", "jobs", "report"} {
		if cmd.Flags().Changed(other) {
			return sim.Shard{}, fmt.Errorf("--shard: --%s is for the merge (huitian whatif merge --%s …): a shard writes a partial result", other, other)
		}
	}
	return sh, nil
}

// writeShard writes a shard's partial result to path (standard output
// when empty), through a temporary file renamed into place so that a
// retried pod never leaves half a file; gzip-compressed when path ends in
// .gz. results[w][p] is nil for a run of another shard.
func writeShard(cmd *cobra.Command, path string, sh sim.Shard, kind string, sweep any, results [][]*sim.Result) (err error) {
	raw, err := json.Marshal(sweep)
	if err != nil {
		return fmt.Errorf("--shard: %w", err)
	}
	sf := shardFile{Format: shardFormat, Kind: kind, Shard: sh.Index, Shards: max(sh.Count, 1), Sweep: raw}
	names := policiesOf(sweep)
	for w, rs := range results {
		for p, r := range rs {
			if r != nil {
				sf.Results = append(sf.Results, shardRun{Run: sf.Runs, Workload: w, Policy: names[p], Result: r})
			}
			sf.Runs++
		}
	}
	stderr := cmd.ErrOrStderr()
	if path == "" || path == "-" {
		return encodeShard(cmd.OutOrStdout(), &sf, false)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("--shard-out: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := encodeShard(tmp, &sf, strings.HasSuffix(path, ".gz")); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("--shard-out: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("--shard-out: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--shard-out: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("--shard-out: %w", err)
	}
	fmt.Fprintf(stderr, "shard %s: %d of %d runs written to %s\n", sh, len(sf.Results), sf.Runs, path)
	return nil
}

func encodeShard(w io.Writer, sf *shardFile, gz bool) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var out io.Writer = bw
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(bw)
		out = zw
	}
	if err := json.NewEncoder(out).Encode(sf); err != nil {
		return err
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func policiesOf(sweep any) []string {
	switch s := sweep.(type) {
	case *whatifSweep:
		return s.Policies
	case *suiteSweep:
		return s.Policies
	}
	return nil
}

// readShard reads a partial result, gzip-compressed or not.
func readShard(path string) (*shardFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	var sf shardFile
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sf); err != nil {
		return nil, fmt.Errorf("%s: not a partial result of huitian whatif --shard: %w", path, err)
	}
	switch {
	case sf.Format != shardFormat:
		return nil, fmt.Errorf("%s: format %q, want %q", path, sf.Format, shardFormat)
	case sf.Shards < 1 || sf.Shard < 0 || sf.Shard >= sf.Shards:
		return nil, fmt.Errorf("%s: shard %d of %d: want 0 ≤ shard < shards", path, sf.Shard, sf.Shards)
	case sf.Runs < 0:
		return nil, fmt.Errorf("%s: runs %d: want ≥ 0", path, sf.Runs)
	}
	return &sf, nil
}

func newWhatifMergeCmd() *cobra.Command {
	var o whatifOutputs
	cmd := &cobra.Command{
		Use:   "merge FILE…",
		Short: "Merge the partial results of a sweep run with --shard into its output",
		Long: `Merge reads the partial results that the shards of one sweep wrote
(huitian whatif … --shard i/n --shard-out FILE, for every i from 0 to n-1)
and writes what the same command without --shard writes: the table, or the
JSON (--json), the job CSVs (--jobs) and the report (--report), or the
suite's rows and their pass/fail (with exit status 1 when a row fails).

It refuses files of different sweeps (another trace, cluster, policy list,
estimates, …), a shard given twice and a missing shard. Files ending in .gz
are read decompressed.

  for i in 0 1 2 3; do huitian whatif --trace KTH-SP2.swf.gz --cluster flat \
      --policy easy,conservative,huitian-greedy,huitian --shard $i/4 \
      --shard-out part-$i.json & done; wait
  huitian whatif merge --json part-*.json

deploy/kubernetes/whatif-sweep.yaml runs the shards as a Kubernetes
Indexed Job, one per pod.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runMerge(cmd, o, args) },
	}
	fl := cmd.Flags()
	fl.BoolVar(&o.asJSON, "json", false, "print the results as JSON on stdout")
	fl.StringVar(&o.jobsDir, "jobs", "", "write one CSV per policy into this directory (not for the suite)")
	fl.StringVar(&o.reportDir, "report", "", "write report.md and its plots into this directory (not for the suite)")
	return cmd
}

// runMerge checks that files are every shard of one sweep, once each, and
// writes the sweep's output from their runs.
func runMerge(cmd *cobra.Command, o whatifOutputs, paths []string) error {
	// 1. Read every file; every problem with them exits with status 2.
	files := make([]*shardFile, len(paths))
	for i, p := range paths {
		sf, err := readShard(p)
		if err != nil {
			return exitWith(2, fmt.Errorf("merge: %w", err))
		}
		files[i] = sf
	}
	// 2. The parts of one sweep: same kind, count and sweep, every shard
	// once. The shard count is the files' word: a map, not a list that
	// long.
	first := files[0]
	byShard := make(map[int]string, len(files))
	for i, sf := range files {
		switch {
		case sf.Kind != first.Kind || sf.Shards != first.Shards || sf.Runs != first.Runs || !bytes.Equal(sf.Sweep, first.Sweep):
			return exitWith(2, fmt.Errorf("merge: %s and %s are parts of different sweeps (kind, shard count or what was run differ)", paths[0], paths[i]))
		case byShard[sf.Shard] != "":
			return exitWith(2, fmt.Errorf("merge: %s and %s are both shard %d/%d", byShard[sf.Shard], paths[i], sf.Shard, sf.Shards))
		}
		byShard[sf.Shard] = paths[i]
	}
	if len(byShard) < first.Shards {
		const named = 8
		var missing []string
		for i := 0; len(missing) < named && i < first.Shards; i++ {
			if byShard[i] == "" {
				missing = append(missing, fmt.Sprintf("%d/%d", i, first.Shards))
			}
		}
		if more := first.Shards - len(byShard) - len(missing); more > 0 {
			missing = append(missing, fmt.Sprintf("and %d more", more))
		}
		return exitWith(2, fmt.Errorf("merge: no file for shard %s", strings.Join(missing, ", ")))
	}
	// 3. The runs in their places.
	var (
		policies  []string
		workloads int
		wsw       whatifSweep
		ssw       suiteSweep
	)
	switch first.Kind {
	case shardKindWhatif:
		if err := json.Unmarshal(first.Sweep, &wsw); err != nil {
			return exitWith(2, fmt.Errorf("merge: %s: %w", paths[0], err))
		}
		policies, workloads = wsw.Policies, 1
	case shardKindSuite:
		if err := json.Unmarshal(first.Sweep, &ssw); err != nil {
			return exitWith(2, fmt.Errorf("merge: %s: %w", paths[0], err))
		}
		if o.jobsDir != "" || o.reportDir != "" {
			return exitWith(2, errors.New("merge: --jobs and --report are for a whatif sweep, not the suite"))
		}
		policies, workloads = ssw.Policies, len(ssw.Workloads)*ssw.replicasOf()
	default:
		return exitWith(2, fmt.Errorf("merge: %s: unknown kind %q", paths[0], first.Kind))
	}
	if workloads*len(policies) != first.Runs || len(policies) == 0 {
		return exitWith(2, fmt.Errorf("merge: %s: %d runs, want %d workloads × %d policies", paths[0], first.Runs, workloads, len(policies)))
	}
	results := make([][]*sim.Result, workloads)
	for w := range results {
		results[w] = make([]*sim.Result, len(policies))
	}
	for i, sf := range files {
		sh := sim.Shard{Index: sf.Shard, Count: sf.Shards}
		for _, r := range sf.Results {
			w, p := r.Run/len(policies), r.Run%len(policies)
			switch {
			case r.Run < 0 || r.Run >= first.Runs || r.Workload != w || r.Policy != policies[p] || r.Result == nil:
				return exitWith(2, fmt.Errorf("merge: %s: run %d (workload %d, %s) is not a run of this sweep", paths[i], r.Run, r.Workload, r.Policy))
			case !sh.Has(r.Run):
				return exitWith(2, fmt.Errorf("merge: %s: run %d is not shard %s's", paths[i], r.Run, sh))
			case results[w][p] != nil:
				return exitWith(2, fmt.Errorf("merge: %s: run %d given twice", paths[i], r.Run))
			}
			results[w][p] = r.Result
		}
	}
	for w := range results {
		if p := slices.Index(results[w], nil); p >= 0 {
			run := w*len(policies) + p
			return exitWith(2, fmt.Errorf("merge: run %d (%s) is missing from shard %d's file %s", run, policies[p], run%first.Shards, byShard[run%first.Shards]))
		}
	}
	// 4. The output, as the single run writes it.
	if first.Kind == shardKindSuite {
		return writeSuite(cmd, o.asJSON, &ssw, results)
	}
	return writeWhatif(cmd, o, &wsw, results[0])
}
