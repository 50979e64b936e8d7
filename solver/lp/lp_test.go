package lp_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/huitian/huitian/solver/clp"
	"github.com/huitian/huitian/solver/lp"
)

// clpSolver is the planner's LP solver.
type clpSolver = clp.LP

// randomInstance draws ≤ 12 candidates on ≤ 32 cards: nodes of 2–8 cards
// whose free cards sit at 1–3 window levels, candidates of 1–8 cards with
// single-node options from a random minimum level, values like the
// planner's (cards × runtime, weighted).
func randomInstance(r *rand.Rand) *lp.Instance {
	levels := 1 + r.IntN(3)
	in := &lp.Instance{Levels: levels}
	cards := 0
	for cards < 32 {
		size := 2 + r.IntN(7)
		if cards+size > 32 {
			size = 32 - cards
		}
		a := make([]int, levels)
		for range size {
			if r.IntN(3) > 0 { // a third of the cards are busy
				a[r.IntN(levels)]++
			}
		}
		in.Avail = append(in.Avail, a)
		cards += size
		if r.IntN(4) == 0 {
			break
		}
	}
	for range 1 + r.IntN(12) {
		c := lp.Cand{Cards: []int{1, 1, 1, 2, 2, 4, 8}[r.IntN(7)]}
		lvl := r.IntN(levels)
		runtime := math.Exp(r.NormFloat64()*1.5 + 7)
		for n := range in.Avail {
			if r.IntN(5) == 0 {
				continue // not every node suits every job
			}
			// Longer windows are worth a little more (less risk), and
			// some nodes fragment more.
			v := float64(c.Cards) * runtime * (1 + 0.1*float64(lvl)) * (0.8 + 0.4*r.Float64())
			c.Opts = append(c.Opts, lp.Opt{Level: lvl, Node: n, Value: v})
		}
		in.Cands = append(in.Cands, c)
	}
	return in
}

// TestRoundingNearOptimum: over 1,000 random small instances the rounded
// LP placement is worth ≥ 97% of the integer optimum on average, and never
// worse than greedy by more than 1%.
func TestRoundingNearOptimum(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 1000
	if testing.Short() {
		n = 200
	}
	sumRatio, worst, lpWins, greedyWins := 0.0, 1.0, 0, 0
	for i := range n {
		in := randomInstance(r)
		opt, err := lp.Exact(in)
		if err != nil {
			t.Fatal(err)
		}
		out, err := lp.Solve(context.Background(), in, clpSolver{})
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		_, gval := lp.Greedy(in)
		if out.Objective < gval*0.99-1e-9 {
			t.Fatalf("instance %d: %v worse than greedy %v", i, out.Objective, gval)
		}
		if out.Objective > opt+1e-6 || out.Bound < opt-1e-6 {
			t.Fatalf("instance %d: objective %v, bound %v, optimum %v: the bound must hold", i, out.Objective, out.Bound, opt)
		}
		ratio := 1.0
		if opt > 0 {
			ratio = out.Objective / opt
		}
		sumRatio += ratio
		worst = min(worst, ratio)
		if out.Greedy {
			greedyWins++
		} else if out.Objective > gval+1e-9 {
			lpWins++
		}
	}
	avg := sumRatio / float64(n)
	t.Logf("%d instances: mean rounded/optimum %.4f, worst %.4f; rounded LP beat greedy %d times, greedy kept %d times", n, avg, worst, lpWins, greedyWins)
	if avg < 0.97 {
		t.Fatalf("mean rounded/optimum %.4f < 0.97", avg)
	}
}

// TestWorkedExample: greedy in queue order gives the only 4-card node to a
// 1-card job; the LP sees that the 4-card job is worth more there and the
// 1-card job fits on the single card elsewhere.
func TestWorkedExample(t *testing.T) {
	in := &lp.Instance{
		Levels: 1,
		Avail:  [][]int{{4}, {1}}, // node 0: 4 free cards; node 1: 1 free card
		Cands: []lp.Cand{
			// j0, first in queue: 1 card for an hour; best fit puts it on
			// node 1, but say node 1 is not of its card model: only node 0.
			{Cards: 1, Opts: []lp.Opt{{Node: 0, Value: 1 * 3600}}},
			// j1: 4 cards on one node for two hours: only node 0.
			{Cards: 4, Opts: []lp.Opt{{Node: 0, Value: 4 * 7200}}},
			// j2: 1 card for an hour, any model.
			{Cards: 1, Opts: []lp.Opt{{Node: 0, Value: 3600}, {Node: 1, Value: 3600}}},
		},
	}
	_, g := lp.Greedy(in)
	out, err := lp.Solve(context.Background(), in, clpSolver{})
	if err != nil {
		t.Fatal(err)
	}
	if g != 2*3600 {
		t.Fatalf("greedy = %v, want 7200 (j0 on node 0 blocks j1)", g)
	}
	if out.Objective != 4*7200+3600 || out.Greedy {
		t.Fatalf("LP placement = %v (greedy used %v), want %v", out.Objective, out.Greedy, 4*7200+3600)
	}
}

// countingSolver counts the LPs it is given and solves them with CLP.
type countingSolver struct{ n *int }

func (s countingSolver) Solve(ctx context.Context, p *lp.Problem) (*lp.Result, error) {
	*s.n++
	return clpSolver{}.Solve(ctx, p)
}

// TestGreedyAtTheBoundSkipsTheSolver: when the greedy placement takes
// every candidate at its best option, nothing is worth more and the LP is
// not solved; when it does not (the worked example), it is.
func TestGreedyAtTheBoundSkipsTheSolver(t *testing.T) {
	roomy := &lp.Instance{
		Levels: 1,
		Avail:  [][]int{{4}, {4}},
		Cands: []lp.Cand{
			{Cards: 2, Opts: []lp.Opt{{Node: 0, Value: 10}, {Node: 1, Value: 9}}},
			{Cards: 4, Opts: []lp.Opt{{Node: 1, Value: 20}}},
			{Cards: 1, Opts: []lp.Opt{{Node: 0, Value: 5}}},
		},
	}
	calls := 0
	out, err := lp.Solve(context.Background(), roomy, countingSolver{&calls})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 0 || !out.Unsolved || out.Objective != 35 || out.Bound != 35 {
		t.Errorf("roomy: %d solves, unsolved %v, objective %v, bound %v; want 0, true, 35, 35", calls, out.Unsolved, out.Objective, out.Bound)
	}
	// The second option of the first candidate is worth less: a greedy
	// that took it would not be at the bound, and the LP would run.
	tight := &lp.Instance{
		Levels: 1,
		Avail:  [][]int{{4}, {1}},
		Cands: []lp.Cand{
			{Cards: 1, Opts: []lp.Opt{{Node: 0, Value: 1 * 3600}}},
			{Cards: 4, Opts: []lp.Opt{{Node: 0, Value: 4 * 7200}}},
			{Cards: 1, Opts: []lp.Opt{{Node: 0, Value: 3600}, {Node: 1, Value: 3600}}},
		},
	}
	out, err = lp.Solve(context.Background(), tight, countingSolver{&calls})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || out.Unsolved {
		t.Errorf("worked example: %d solves, unsolved %v; want 1, false", calls, out.Unsolved)
	}
}
