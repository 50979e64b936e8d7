package clp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rssBytes reads the process's resident set size from /proc/self/statm.
func rssBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc/self/statm: %v", err)
	}
	f := strings.Fields(string(b))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatalf("statm %q: %v", b, err)
	}
	return pages * int64(os.Getpagesize())
}

// TestSolveDoesNotLeak solves a small LP 100,000 times, each in a fresh C
// model, and checks that the C heap in use (glibc's count, over all
// arenas) stays flat after a warm-up: a model that is not freed costs
// kilobytes of C heap per solve. The resident set is logged but not
// judged: it moves by megabytes with the Go heap and with glibc's
// per-thread arenas (a CI run read +4.5 MiB with no leak behind it). Every tenth
// solve also re-solves a long-lived Model after SetColBounds. The solves
// are spread over a few goroutines, one model each, to take less time.
func TestSolveDoesNotLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 solves take a few seconds")
	}
	p := placementLP(5, 6, 4, 2, 16)
	workers := min(4, runtime.GOMAXPROCS(0))
	models := make([]*Model, workers)
	for w := range models {
		models[w] = NewModel()
		defer models[w].Close()
		if err := models[w].Load(p); err != nil {
			t.Fatal(err)
		}
	}
	// run does n solves on each worker and reports the first failure.
	run := func(n int) error {
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				up := make([]float64, p.NumCols)
				for i := range n {
					s, err := Solve(p, Options{})
					if err == nil && s.Status != Optimal {
						err = fmt.Errorf("status %v", s.Status)
					}
					if err == nil && i%10 == 0 {
						for j := range up {
							up[j] = float64((i/10 + j) % 2)
						}
						err = models[w].SetColBounds(nil, up)
						if err == nil {
							s, err = models[w].Solve(context.Background(), Options{})
						}
						if err == nil && s.Status != Optimal {
							err = fmt.Errorf("model status %v", s.Status)
						}
					}
					if err != nil {
						errs[w] = fmt.Errorf("worker %d, solve %d: %w", w, i, err)
						return
					}
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}

	const warmUp, solves = 5_000, 100_000
	if err := run(warmUp / workers); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	before, cBefore := rssBytes(t), cHeapInUse()
	start := time.Now()
	if err := run(solves / workers); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	runtime.GC()
	after, cAfter := rssBytes(t), cHeapInUse()
	growth := cAfter - cBefore
	t.Logf("C heap in use %.1f MiB after %d warm-up solves, %.1f MiB after %d more (%+d KiB, %.2f bytes/solve); RSS %.1f → %.1f MiB; %d goroutines, %v",
		float64(cBefore)/(1<<20), warmUp, float64(cAfter)/(1<<20), solves, growth/1024, float64(growth)/solves,
		float64(before)/(1<<20), float64(after)/(1<<20), workers, took.Round(time.Millisecond))
	// A leak of 10 bytes per solve would show as 1 MB; an unfreed model
	// costs kilobytes.
	if growth > 1<<20 {
		t.Errorf("C heap in use grew by %d KiB over %d solves", growth/1024, solves)
	}
}

// TestSolveIsSilent runs solves, including infeasible, unbounded and
// stopped ones, in a child process and checks that CLP wrote nothing to
// stdout or stderr. A child is needed because C stdio buffers are flushed
// only at exit.
func TestSolveIsSilent(t *testing.T) {
	if os.Getenv("HUITIAN_CLP_SILENCE_CHILD") == "1" {
		for _, p := range []*Problem{
			placementLP(1, 120, 60, 20, 500),
			denseLP([][]float64{{1, 1}, {1, 1}}, Problem{RowLower: []float64{-inf, 3}, RowUpper: []float64{1, inf}}),
			denseLP([][]float64{{1, -1}}, Problem{Objective: []float64{1, 1}, RowUpper: []float64{1}, Maximize: true}),
		} {
			for _, opt := range []Options{{}, {Algorithm: PrimalSimplex}, {MaxIterations: 2}} {
				if _, err := Solve(p, opt); err != nil {
					os.Exit(3)
				}
			}
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSolveIsSilent$")
	cmd.Env = append(os.Environ(), "HUITIAN_CLP_SILENCE_CHILD=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\nstderr: %s", err, stderr.String())
	}
	// The child's testing package prints "PASS"; anything else is CLP's.
	if out := strings.TrimSpace(stdout.String()); out != "PASS" {
		t.Errorf("solves wrote to stdout:\n%s", out)
	}
	if stderr.Len() > 0 {
		t.Errorf("solves wrote to stderr:\n%s", stderr.String())
	}
}
