package clp

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestMaxIterationsStopsOnLimits(t *testing.T) {
	p := placementLP(11, 1200, 600, 200, 5000)
	for _, alg := range []Algorithm{DualSimplex, PrimalSimplex} {
		s, err := Solve(p, Options{MaxIterations: 10, Algorithm: alg})
		if err != nil {
			t.Fatal(err)
		}
		if s.Status != StoppedOnLimits {
			t.Errorf("%v: Status = %v after %d iterations, want %v", alg, s.Status, s.Iterations, StoppedOnLimits)
		}
		if len(s.Primal) != p.NumCols || len(s.Dual) != p.NumRows {
			t.Errorf("%v: a stopped solve returned %d primal, %d dual values", alg, len(s.Primal), len(s.Dual))
		}
	}
}

func TestSolveContextPassedDeadlineReturnsPromptly(t *testing.T) {
	p := placementLP(11, 1200, 600, 200, 5000)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	start := time.Now()
	s, err := SolveContext(ctx, p, Options{})
	if !errors.Is(err, context.DeadlineExceeded) || s != nil {
		t.Errorf("SolveContext = %v, %v; want nil, context.DeadlineExceeded", s, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("SolveContext took %v with a passed deadline", d)
	}

	canceled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := SolveContext(canceled, p, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("SolveContext(canceled) error = %v, want context.Canceled", err)
	}
}

func TestSolveContextWithinBudgetIsOptimal(t *testing.T) {
	p := placementLP(11, 120, 60, 20, 500)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := SolveContext(ctx, p, Options{MaxSeconds: 30})
	if err != nil || s.Status != Optimal {
		t.Errorf("SolveContext = %v, %v; want Optimal", s, err)
	}
}

// TestSolveContextBudgetIsWallClock holds the deadline to wall-clock time
// while other goroutines keep every CPU busy. CLP's own MaxSeconds counts
// the process's CPU time, which those goroutines advance too: with it, the
// solve stopped well before the deadline.
func TestSolveContextBudgetIsWallClock(t *testing.T) {
	if testing.Short() {
		t.Skip("needs about a second")
	}
	// About 0.7 s of dual simplex on one idle core of the development machine.
	p := placementLP(1, 12000, 6000, 2000, 50000)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range max(2, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			x := 0
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := range 1 << 16 {
					x += i
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()

	const budget = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	start := time.Now()
	s, err := SolveContext(ctx, p, Options{})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("SolveContext: %v (a budget hit is a Status, not an error)", err)
	}
	t.Logf("status %v (secondary %d) after %d iterations in %v of a %v budget", s.Status, s.Secondary, s.Iterations, took, budget)
	switch s.Status {
	case Optimal:
		if took < budget {
			t.Log("solved within the budget; nothing to check on this machine")
		}
	case StoppedOnLimits:
		// Allow for the budget having been computed a moment after start.
		if took < budget-20*time.Millisecond {
			t.Errorf("stopped after %v, before the %v budget was spent", took, budget)
		}
		// CLP checks the clock between iterations and not inside presolve,
		// so some overrun is expected; a large one is a bug.
		if took > budget+2*time.Second {
			t.Errorf("stopped after %v, far past the %v budget", took, budget)
		}
	default:
		t.Errorf("Status = %v, want %v or %v", s.Status, StoppedOnLimits, Optimal)
	}
}

// TestSeparateModelsSolveConcurrently checks CLP's thread-compatibility
// claim that the package documents: one model per goroutine gives the same
// answers as solving one after another.
func TestSeparateModelsSolveConcurrently(t *testing.T) {
	const n = 16
	want := make([]float64, n)
	for i := range n {
		s, err := Solve(placementLP(uint64(100+i), 120, 60, 20, 500), Options{})
		if err != nil || s.Status != Optimal {
			t.Fatalf("sequential solve %d: %v, %v", i, s, err)
		}
		want[i] = s.Objective
	}
	got := make([]float64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for range 5 {
				s, err := Solve(placementLP(uint64(100+i), 120, 60, 20, 500), Options{})
				if err != nil || s.Status != Optimal {
					return
				}
				got[i] = s.Objective
			}
		})
	}
	wg.Wait()
	for i := range n {
		if got[i] != want[i] {
			t.Errorf("problem %d: concurrent objective %v, sequential %v", i, got[i], want[i])
		}
	}
}
