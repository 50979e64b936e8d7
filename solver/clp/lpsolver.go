package clp

import (
	"context"

	"github.com/huitian/huitian/solver/lp"
)

// LP solves solver/lp's problems with CLP's dual simplex, one fresh model
// per call (safe for concurrent use: models are not shared).
type LP struct {
	// MaxIterations bounds each solve (0: no bound).
	MaxIterations int
}

// Solve implements lp.Solver. The context's deadline is the time budget.
func (s LP) Solve(ctx context.Context, p *lp.Problem) (*lp.Result, error) {
	sol, err := SolveContext(ctx, &Problem{
		NumRows: p.NumRows, NumCols: p.NumCols, ColStart: p.ColStart, RowIndex: p.RowIndex, Value: p.Value,
		ColLower: p.ColLower, ColUpper: p.ColUpper, Objective: p.Objective, RowLower: p.RowLower, RowUpper: p.RowUpper,
		Maximize: p.Maximize,
	}, Options{MaxIterations: s.MaxIterations})
	if err != nil {
		return nil, err
	}
	return &lp.Result{Primal: sol.Primal, Objective: sol.Objective, Optimal: sol.Status == Optimal}, nil
}
