package lp

import (
	"cmp"
	"context"
)

// Greedy places candidates in their order, each on its first option by
// level (the shortest windows it may use) and, among those, the node with
// the fewest cards that still holds it — what huitian-greedy does, in the
// abstract.
func Greedy(in *Instance) ([]Choice, float64) {
	st := newState(in)
	var out []Choice
	total := 0.0
	for j := range in.Cands {
		c := &in.Cands[j]
		best := -1
		bestFree := 0
		for o, op := range c.Opts {
			if best >= 0 && op.Level > c.Opts[best].Level {
				continue
			}
			var free int
			if op.Node >= 0 {
				free = st.atLeast(op.Node, op.Level)
			} else {
				for _, n := range op.Spread {
					free += st.atLeast(n, op.Level)
				}
			}
			if free < c.Cards {
				continue
			}
			if best < 0 || op.Level < c.Opts[best].Level || free < bestFree ||
				free == bestFree && cmp.Compare(op.Value, c.Opts[best].Value) > 0 {
				best, bestFree = o, free
			}
		}
		if best < 0 {
			continue
		}
		if take, ok := st.place(c, best, nil); ok {
			out = append(out, Choice{Cand: j, Opt: best, Take: take})
			total += c.Opts[best].Value
		}
	}
	return out, total
}

// Outcome is a solved placement.
type Outcome struct {
	Choices   []Choice // in placement order
	Objective float64  // value of the choices
	Bound     float64  // the LP optimum: no integer placement is worth more
	Rows      int
	Cols      int
	Greedy    bool // the greedy placement was worth more than the rounded LP
	// Unsolved: the greedy placement took every candidate of positive
	// value at its best option, which no placement can beat (Bound is
	// Σ_j max_o v[j,o]); the solver was not called.
	Unsolved bool
}

// upperBound is Σ over candidates of their best option's value, or 0 when
// none is positive: no placement is worth more.
func upperBound(in *Instance) float64 {
	ub := 0.0
	for _, c := range in.Cands {
		best := 0.0
		for _, o := range c.Opts {
			best = max(best, o.Value)
		}
		ub += best
	}
	return ub
}

// Solve formulates the instance, solves the relaxation with s within the
// context's deadline, rounds it, and keeps the greedy placement instead
// when that is worth more, so the result is never worse than greedy. It
// returns ErrNotOptimal (with the greedy outcome) when the solver stopped
// early.
func Solve(ctx context.Context, in *Instance, s Solver) (*Outcome, error) {
	m, err := Formulate(in)
	if err != nil {
		return nil, err
	}
	gch, gval := Greedy(in)
	out := &Outcome{Choices: gch, Objective: gval, Greedy: true, Rows: m.Problem.NumRows, Cols: m.Problem.NumCols}
	if len(m.X) == 0 {
		out.Greedy = false
		return out, nil
	}
	if ub := upperBound(in); gval >= ub-1e-9*max(1, ub) {
		out.Bound, out.Unsolved = ub, true
		return out, nil
	}
	res, err := s.Solve(ctx, m.Problem)
	if err != nil {
		return out, err
	}
	if !res.Optimal {
		return out, ErrNotOptimal
	}
	out.Bound = res.Objective
	rch, rval := Round(in, m, res.Primal)
	// Rounding by value alone (no LP guidance) covers the rare instance
	// where the LP's fractional order misleads.
	vch, vval := Round(in, m, make([]float64, len(res.Primal)))
	if vval > rval+1e-9 {
		rch, rval = vch, vval
	}
	if rval >= gval-1e-9 {
		out.Choices, out.Objective, out.Greedy = rch, rval, false
	}
	return out, nil
}
