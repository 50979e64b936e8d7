package clp

import (
	"math/rand/v2"
	"slices"
)

// placementLP builds an assignment-like LP shaped like the planner's
// backfill relaxation: jobs rows ("each job at most once", ≤ 1) and
// capacity rows (cards free per node or domain); each column x[j,p] ∈ [0,1]
// places job j on option p and uses its cards in one node row and, for
// half of the columns, in one domain row too. It maximizes value.
func placementLP(seed uint64, jobs, nodes, domains, cols int) *Problem {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	rows := jobs + nodes + domains
	p := &Problem{
		NumRows:  rows,
		NumCols:  cols,
		ColStart: make([]int32, 1, cols+1),
		ColLower: make([]float64, cols),
		ColUpper: make([]float64, cols),
		RowLower: make([]float64, rows),
		RowUpper: make([]float64, rows),
		Maximize: true,
	}
	cards := make([]float64, jobs)
	for j := range jobs {
		cards[j] = float64([]int{1, 1, 1, 2, 2, 4, 8}[r.IntN(7)])
		p.RowUpper[j] = 1
	}
	for n := range nodes {
		p.RowUpper[jobs+n] = float64(r.IntN(9))
	}
	for d := range domains {
		p.RowUpper[jobs+nodes+d] = float64(8 + r.IntN(25))
	}
	for c := range cols {
		j := c % jobs // every job gets ⌊cols/jobs⌋ or one more options
		node := r.IntN(nodes)
		type entry struct {
			row int32
			v   float64
		}
		es := []entry{{int32(j), 1}, {int32(jobs + node), cards[j]}}
		if r.IntN(2) == 0 {
			es = append(es, entry{int32(jobs + nodes + node%domains), cards[j]})
		}
		slices.SortFunc(es, func(a, b entry) int { return int(a.row - b.row) })
		for _, e := range es {
			p.RowIndex = append(p.RowIndex, e.row)
			p.Value = append(p.Value, e.v)
		}
		p.ColStart = append(p.ColStart, int32(len(p.RowIndex)))
		p.ColUpper[c] = 1
		p.Objective = append(p.Objective, cards[j]*(1+9*r.Float64()))
	}
	return p
}
