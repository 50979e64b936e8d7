package lp

import (
	"cmp"
	"errors"
	"slices"
)

// ErrTooLarge is returned by Exact for instances beyond its reach.
var ErrTooLarge = errors.New("lp: instance too large for exhaustive search")

// Exact finds the optimum of the integer program behind Formulate by
// branch and bound, for small instances with single-node options only (at
// most 16 candidates). It is the oracle the rounding is measured against.
func Exact(in *Instance) (float64, error) {
	if len(in.Cands) > 16 {
		return 0, ErrTooLarge
	}
	for _, c := range in.Cands {
		for _, o := range c.Opts {
			if o.Node < 0 {
				return 0, ErrTooLarge
			}
		}
	}
	// Branch on the most valuable candidates first; the bound is the sum
	// of the best option value of every candidate not yet decided.
	order := make([]int, len(in.Cands))
	best := make([]float64, len(in.Cands))
	for j := range order {
		order[j] = j
		for _, o := range in.Cands[j].Opts {
			best[j] = max(best[j], o.Value)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(best[b], best[a]) })
	suffix := make([]float64, len(order)+1)
	for i := len(order) - 1; i >= 0; i-- {
		suffix[i] = suffix[i+1] + best[order[i]]
	}
	st := newState(in)
	opt := 0.0
	var dfs func(i int, val float64)
	dfs = func(i int, val float64) {
		if val > opt {
			opt = val
		}
		if i == len(order) || val+suffix[i] <= opt+1e-12 {
			return
		}
		c := &in.Cands[order[i]]
		for _, o := range c.Opts {
			if o.Value <= 0 || st.atLeast(o.Node, o.Level) < c.Cards {
				continue
			}
			saved := slices.Clone(st.avail[o.Node])
			st.take(o.Node, o.Level, c.Cards)
			dfs(i+1, val+o.Value)
			st.avail[o.Node] = saved
		}
		dfs(i+1, val) // leave it out
	}
	dfs(0, 0)
	return opt, nil
}
