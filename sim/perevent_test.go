package sim

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/huitian/huitian/sim/trace"
)

// TestPerEventSameSecondEnds checks the per-event order at an instant where
// a job that ends at its limit and one that ends early end together and
// nothing arrives. The starts are worked out by hand from pyss's rules
// (sim/README.md, "pyss"): terminations are handled in the order the jobs
// started, each followed by a pass, and a job that reaches its limit at t
// shows its processors free from t on, before its termination is handled.
//
// The first case failed before the fix of issue 15 §5 (C 10/D 20 instead
// of C 15/D 10: one pass with both cards free); the second passed before
// and after.
func TestPerEventSameSecondEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		jobs []trace.Job
		want map[string]int64
	}{
		{
			// At 10, A (started 0) reaches its limit and B (started 1,
			// limit 100) ends early. pyss: A's termination first, a pass
			// that sees A's card free and B's held until 101: C (2 cards)
			// is reserved at 101 and D (1 card, 5 s) backfills at 10.
			// Then B's termination, a pass: C still does not fit (D runs
			// until 15) and starts at 15 when D ends.
			name: "the job at its limit started first: a pass after each end",
			jobs: []trace.Job{
				tj("A", 0, 10, 10, 1),
				tj("B", 1, 9, 100, 1),
				tj("C", 2, 10, 10, 2),
				tj("D", 3, 5, 5, 1),
			},
			want: map[string]int64{"A": 0, "B": 1, "C": 15, "D": 10},
		},
		{
			// B (started 0, limit 100) ends early at 10 and A (started 1)
			// reaches its limit at 10. pyss: B's termination first; its
			// pass already sees A's card free (A is at its limit), so C
			// starts at 10 and D waits for C's end at 20. A's termination
			// changes nothing: no pass.
			name: "the early job started first: one pass with both free",
			jobs: []trace.Job{
				tj("B", 0, 10, 100, 1),
				tj("A", 1, 9, 9, 1),
				tj("C", 2, 10, 10, 2),
				tj("D", 3, 5, 5, 1),
			},
			want: map[string]int64{"A": 1, "B": 0, "C": 10, "D": 20},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, tc.jobs, easy(), Config{Cluster: flat(t, 2), Cycles: CyclesPerEvent})
			got := map[string]int64{}
			for _, r := range res.Jobs {
				got[r.ID] = r.Start
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("starts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTies(t *testing.T) {
	// Job 2 arrives before job 1 in the same second while x holds the
	// only card: by id (the planner's order) 1 goes first, by arrival
	// (pyss's) 2 does.
	jobs := []trace.Job{tj("x", 0, 10, 10, 1), tj("2", 1, 10, 10, 1), tj("1", 1, 10, 10, 1)}
	for _, tc := range []struct {
		ties Ties
		want map[string]int64
	}{
		{TiesID, map[string]int64{"x": 0, "1": 10, "2": 20}},
		{TiesArrival, map[string]int64{"x": 0, "2": 10, "1": 20}},
	} {
		t.Run(tc.ties.String(), func(t *testing.T) {
			res := run(t, jobs, easy(), Config{Cluster: flat(t, 1), Cycles: CyclesPerEvent, Ties: tc.ties})
			got := map[string]int64{}
			for _, r := range res.Jobs {
				got[r.ID] = r.Start
				if r.Submit != map[string]int64{"x": 0, "1": 1, "2": 1}[r.ID] {
					t.Errorf("job %s submit %d: results keep the trace's seconds", r.ID, r.Submit)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("starts (-want +got):\n%s", diff)
			}
		})
	}
	for _, s := range []string{"id", "arrival"} {
		if ti, err := ParseTies(s); err != nil || ti.String() != s {
			t.Errorf("ParseTies(%q) = %v, %v", s, ti, err)
		}
	}
	if _, err := ParseTies("submit"); err == nil {
		t.Error(`ParseTies("submit"): no error`)
	}
}
