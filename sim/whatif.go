package sim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/sim/trace"
)

// Policy is one of a what-if's policies: its planner and the options its
// snapshots carry.
type Policy struct {
	// Name names the run in errors and progress (easy, POLICY_EASY, …).
	Name string
	// NewPlanner makes the run's planner, on the goroutine that runs it.
	NewPlanner func() (Planner, error)
	// Options replace Config.Options for this policy's run.
	Options model.Options
}

// WhatIf is one workload replayed under several policies, each with its own
// planner and its own cluster. Both `huitian whatif` (one workload, or the
// suite's many) and the service's WhatIf describe their runs with it and
// replay them with Sweep.
type WhatIf struct {
	Jobs []trace.Job
	// NewCluster makes a fresh cluster for each run: Run seals its
	// cluster, so runs in parallel must not share one.
	NewCluster func() (*model.Cluster, error)
	Policies   []Policy
	// Config is every run's configuration; Cluster and Options are each
	// run's own.
	Config Config
}

// Shard is part Index of Count of a sweep, so that a sweep too large for
// one machine runs as Count independent processes (one per pod of an
// indexed batch job) whose results are merged afterwards. The runs of a
// sweep are numbered workload by workload, policy by policy; shard i has
// the runs whose number is i modulo Count, so that each shard gets a share
// of every workload and every policy. The zero value is the whole sweep.
type Shard struct {
	Index, Count int
}

// ErrShard is wrapped by ParseShard's errors.
var ErrShard = errors.New("sim: shard")

// ParseShard reads "i/n" (0 ≤ i < n).
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("%w %q: want i/n with 0 ≤ i < n", ErrShard, s)
	}
	return Shard{Index: i, Count: n}, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, max(s.Count, 1)) }

// Whole reports whether the shard is the whole sweep.
func (s Shard) Whole() bool { return s.Count <= 1 }

// Has reports whether run number run (from 0) is the shard's.
func (s Shard) Has(run int) bool { return s.Whole() || run%s.Count == s.Index }

// SweepOptions say how Sweep runs.
type SweepOptions struct {
	// Workers is how many runs go at once (GOMAXPROCS when ≤ 0).
	Workers int
	// Shard selects the runs to make; the zero value makes them all.
	Shard Shard
	// Done, when set, is called on a run's goroutine with its what-if's
	// and its policy's index and its result, as soon as it has one.
	Done func(w, p int, res *Result)
}

// Runs is how many runs a sweep of ws makes: one per workload and policy.
func Runs(ws []WhatIf) int {
	n := 0
	for i := range ws {
		n += len(ws[i].Policies)
	}
	return n
}

// Sweep replays every what-if under each of its policies in parallel
// (RunAll) and returns results[w][p], each with its wall time. With a
// shard, it makes only the shard's runs and the others' results are nil.
//
// A failed run is returned as a *ReplayError whose Index is the run's
// number in the whole sweep (the policy's index when there is one
// what-if); otherwise as RunAll.
func Sweep(ctx context.Context, ws []WhatIf, o SweepOptions) ([][]*Result, error) {
	type at struct{ w, p, run int }
	var (
		replays []Replay
		where   []at
	)
	run := 0
	for w := range ws {
		wi := &ws[w]
		for p := range wi.Policies {
			if o.Shard.Has(run) {
				replays = append(replays, wi.replay(w, p, o.Done))
				where = append(where, at{w, p, run})
			}
			run++
		}
	}
	flat, err := RunAll(ctx, replays, o.Workers)
	if err != nil {
		if re, ok := errors.AsType[*ReplayError](err); ok {
			c := *re
			c.Index = where[re.Index].run
			return nil, &c
		}
		return nil, err
	}
	out := make([][]*Result, len(ws))
	for w := range ws {
		out[w] = make([]*Result, len(ws[w].Policies))
	}
	for i, a := range where {
		out[a.w][a.p] = flat[i]
	}
	return out, nil
}

// replay is policy p's run of the what-if.
func (wi *WhatIf) replay(w, p int, done func(w, p int, res *Result)) Replay {
	pol := wi.Policies[p]
	cfg := wi.Config
	cfg.Options = pol.Options
	r := Replay{Name: pol.Name, Jobs: wi.Jobs, NewPlanner: pol.NewPlanner, NewCluster: wi.NewCluster, Config: cfg}
	if done != nil {
		r.Done = func(res *Result) { done(w, p, res) }
	}
	return r
}

// Comparison is every run of a what-if compared with its reference run.
type Comparison struct {
	// Same[i] compares run i with the reference per size class on the same
	// jobs; nil when there is no reference.
	Same [][]SameJobs
	// MainWaitDelta[i] is run i's mean wait of the jobs it started as
	// regular minus the reference's; nil without a reference or without
	// main jobs on either side.
	MainWaitDelta []*float64
}

// Compare compares results (one per policy, as Sweep returns them for the
// what-if) with results[ref]; ref < 0 compares nothing.
func (wi *WhatIf) Compare(results []*Result, ref int) (Comparison, error) {
	c := Comparison{Same: make([][]SameJobs, len(results)), MainWaitDelta: make([]*float64, len(results))}
	if ref < 0 {
		return c, nil
	}
	name := func(i int) string {
		if i < len(wi.Policies) {
			return wi.Policies[i].Name
		}
		return strconv.Itoa(i)
	}
	for i, r := range results {
		same, err := CompareClasses(r, results[ref])
		if err != nil {
			return Comparison{}, fmt.Errorf("%s against %s: %w", name(i), name(ref), err)
		}
		c.Same[i] = same
	}
	if base := results[ref].Summary.MainAvgWait; base != nil {
		for i, r := range results {
			if w := r.Summary.MainAvgWait; w != nil {
				d := *w - *base
				c.MainWaitDelta[i] = &d
			}
		}
	}
	return c, nil
}
