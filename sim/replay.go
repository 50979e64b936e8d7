package sim

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/sim/trace"
)

// Replay is one run of RunAll: a workload, how to make its planner and its
// cluster, and the run's configuration.
type Replay struct {
	// Name names the run in errors (a policy's name).
	Name string
	Jobs []trace.Job
	// NewPlanner makes the run's planner, on the goroutine that runs it.
	NewPlanner func() (Planner, error)
	// NewCluster makes the run's own cluster, which replaces
	// Config.Cluster: Run seals its cluster, so runs in parallel must not
	// share one.
	NewCluster func() (*model.Cluster, error)
	Config     Config
	// Done, when set, is called on the run's goroutine with its result
	// as soon as it has one.
	Done func(*Result)
}

// ReplayError is the failure of one of RunAll's replays.
type ReplayError struct {
	Index int // into RunAll's replays
	Name  string
	Err   error
	// Panic is the value a panicking replay was recovered with, and
	// Stack where it panicked; nil when it did not panic.
	Panic any
	Stack []byte
}

func (e *ReplayError) Error() string {
	if e.Panic != nil {
		return fmt.Sprintf("%s: panic: %v", e.Name, e.Panic)
	}
	return fmt.Sprintf("%s: %v", e.Name, e.Err)
}

func (e *ReplayError) Unwrap() error { return e.Err }

// RunAll runs replays in parallel, at most workers at once (GOMAXPROCS
// when workers ≤ 0), each with its own planner and its own cluster, and
// returns their results in the order given, each with its wall time.
// This is the one place the simulator starts goroutines: both `huitian
// whatif` and the service's WhatIf run their policies through it.
//
// The first replay that fails stops the others and is returned as a
// *ReplayError (a panic in a planner or in the simulator is recovered
// into one); when ctx ends first, its cause is returned. Either way RunAll
// returns only after every replay it started has ended.
func RunAll(ctx context.Context, replays []Replay, workers int) ([]*Result, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	results := make([]*Result, len(replays))
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for i := range replays {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-rctx.Done():
				return
			}
			defer func() { <-sem }()
			if rctx.Err() != nil {
				return
			}
			res, err := replayOne(rctx, i, &replays[i])
			if err != nil {
				cancel(err)
				return
			}
			results[i] = res
			if replays[i].Done != nil {
				replays[i].Done(res)
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	if err := context.Cause(rctx); err != nil {
		return nil, err
	}
	return results, nil
}

// replayOne runs one replay, recovering a panic into its *ReplayError.
func replayOne(ctx context.Context, i int, r *Replay) (res *Result, err error) {
	fail := func(err error) *ReplayError { return &ReplayError{Index: i, Name: r.Name, Err: err} }
	defer func() {
		if p := recover(); p != nil {
			res = nil
			err = &ReplayError{Index: i, Name: r.Name, Err: fmt.Errorf("panic: %v", p), Panic: p, Stack: debug.Stack()}
		}
	}()
	if r.NewPlanner == nil || r.NewCluster == nil {
		return nil, fail(errors.New("sim: replay needs NewPlanner and NewCluster"))
	}
	pl, err := r.NewPlanner()
	if err != nil {
		return nil, fail(err)
	}
	c, err := r.NewCluster()
	if err != nil {
		return nil, fail(err)
	}
	cfg := r.Config
	cfg.Cluster = c
	t0 := time.Now()
	res, err = Run(ctx, r.Jobs, pl, cfg)
	if err != nil {
		return nil, fail(err)
	}
	res.Wall = time.Since(t0)
	return res, nil
}
