package clp

import (
	"context"
	"errors"
	"math"
	"testing"
)

var inf = math.Inf(1)

// dense builds a Problem's matrix from rows of a dense matrix, dropping
// zeros, so that hand-written tests read like the LP on paper.
func dense(rows [][]float64) (numRows, numCols int, colStart, rowIndex []int32, value []float64) {
	numRows = len(rows)
	if numRows > 0 {
		numCols = len(rows[0])
	}
	colStart = []int32{0}
	for j := range numCols {
		for i := range numRows {
			if v := rows[i][j]; v != 0 {
				rowIndex = append(rowIndex, int32(i))
				value = append(value, v)
			}
		}
		colStart = append(colStart, int32(len(rowIndex)))
	}
	return
}

// denseLP is a Problem whose matrix is given densely by rows.
func denseLP(a [][]float64, p Problem) *Problem {
	p.NumRows, p.NumCols, p.ColStart, p.RowIndex, p.Value = dense(a)
	return &p
}

// near reports whether a and b agree to 1e-6, relative where they are large.
func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-6*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func nearAll(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !near(a[i], b[i]) {
			return false
		}
	}
	return true
}

func TestSolveHandChecked(t *testing.T) {
	tests := []struct {
		name   string
		p      *Problem
		status Status
		obj    float64
		x      []float64 // nil: not checked (several optima or not optimal)
		dual   []float64 // nil: not checked
	}{
		{
			name: "a maximum sits where a row and a column upper bound bind",
			// max 3x + 2y  s.t.  x + y ≤ 4,  x + 3y ≤ 7,  0 ≤ x ≤ 3,  y ≥ 0
			p: denseLP([][]float64{{1, 1}, {1, 3}}, Problem{
				ColUpper: []float64{3, inf}, Objective: []float64{3, 2},
				RowUpper: []float64{4, 7}, Maximize: true,
			}),
			status: Optimal, obj: 11, x: []float64{3, 1}, dual: []float64{2, 0},
		},
		{
			name: "a minimum over ≥ rows is the intersection of both rows",
			// min x + y  s.t.  x + 2y ≥ 4,  3x + y ≥ 6,  x, y ≥ 0
			p: denseLP([][]float64{{1, 2}, {3, 1}}, Problem{
				Objective: []float64{1, 1}, RowLower: []float64{4, 6},
			}),
			status: Optimal, obj: 2.8, x: []float64{1.6, 1.2}, dual: []float64{0.4, 0.2},
		},
		{
			name: "equality rows fix all but the cheapest column, which sits at its bound",
			// min 2x + 3y + z  s.t.  x + y + z = 10,  x - y = 2,  x ≤ 4,  z ≤ 5
			p: denseLP([][]float64{{1, 1, 1}, {1, -1, 0}}, Problem{
				ColUpper: []float64{4, inf, 5}, Objective: []float64{2, 3, 1},
				RowLower: []float64{10, 2}, RowUpper: []float64{10, 2},
			}),
			status: Optimal, obj: 16.5, x: []float64{3.5, 1.5, 5},
		},
		{
			name: "a ranged row and column upper bounds",
			// max x + 2y  s.t.  1 ≤ x + y ≤ 2,  x ≤ 1,  y ≤ 1.5
			p: denseLP([][]float64{{1, 1}}, Problem{
				ColUpper: []float64{1, 1.5}, Objective: []float64{1, 2},
				RowLower: []float64{1}, RowUpper: []float64{2}, Maximize: true,
			}),
			status: Optimal, obj: 3.5, x: []float64{0.5, 1.5},
		},
		{
			name: "a free column is pushed to the row's bound, a negative column bound binds",
			// max x  s.t.  2x + y ≤ 10,  x free,  -3 ≤ y ≤ 0
			p: denseLP([][]float64{{2, 1}}, Problem{
				ColLower: []float64{-inf, -3}, ColUpper: []float64{inf, 0},
				Objective: []float64{1, 0}, RowUpper: []float64{10}, Maximize: true,
			}),
			status: Optimal, obj: 6.5, x: []float64{6.5, -3}, dual: []float64{0.5},
		},
		{
			name: "a problem with no rows is solved by column bounds alone",
			p: &Problem{
				NumCols: 2, ColStart: []int32{0, 0, 0},
				ColLower: []float64{-2, -inf}, ColUpper: []float64{5, 7}, Objective: []float64{1, -1},
			},
			status: Optimal, obj: -9, x: []float64{-2, 7},
		},
		{
			name:   "an empty problem is optimal with objective 0",
			p:      &Problem{ColStart: []int32{0}},
			status: Optimal, obj: 0, x: []float64{},
		},
		{
			name: "a maximum that grows without bound is dual infeasible",
			// max x + y  s.t.  x - y ≤ 1,  x, y ≥ 0
			p: denseLP([][]float64{{1, -1}}, Problem{
				Objective: []float64{1, 1}, RowUpper: []float64{1}, Maximize: true,
			}),
			status: DualInfeasible,
		},
		{
			name: "a minimum that falls without bound is dual infeasible",
			// min -x  s.t.  x - y = 0,  x, y ≥ 0
			p: denseLP([][]float64{{1, -1}}, Problem{
				Objective: []float64{-1, 0}, RowLower: []float64{0}, RowUpper: []float64{0},
			}),
			status: DualInfeasible,
		},
		{
			name: "contradicting rows are primal infeasible",
			// x + y ≤ 1,  x + y ≥ 3
			p: denseLP([][]float64{{1, 1}, {1, 1}}, Problem{
				Objective: []float64{1, 1},
				RowLower:  []float64{-inf, 3}, RowUpper: []float64{1, inf},
			}),
			status: PrimalInfeasible,
		},
		{
			name: "a row out of reach of the column bounds is primal infeasible",
			// x + y ≥ 5,  0 ≤ x ≤ 2,  0 ≤ y ≤ 2
			p: denseLP([][]float64{{1, 1}}, Problem{
				ColUpper: []float64{2, 2}, Objective: []float64{1, 1}, RowLower: []float64{5},
			}),
			status: PrimalInfeasible,
		},
	}
	for _, tt := range tests {
		for _, alg := range []Algorithm{DualSimplex, PrimalSimplex} {
			t.Run(tt.name+"/"+alg.String(), func(t *testing.T) {
				s, err := Solve(tt.p, Options{Algorithm: alg})
				if err != nil {
					t.Fatalf("Solve: %v", err)
				}
				if s.Status != tt.status {
					t.Fatalf("Status = %v (secondary %d), want %v", s.Status, s.Secondary, tt.status)
				}
				if len(s.Primal) != tt.p.NumCols || len(s.ReducedCost) != tt.p.NumCols ||
					len(s.RowActivity) != tt.p.NumRows || len(s.Dual) != tt.p.NumRows {
					t.Fatalf("vector lengths %d/%d cols, %d/%d rows; want %d cols, %d rows",
						len(s.Primal), len(s.ReducedCost), len(s.RowActivity), len(s.Dual), tt.p.NumCols, tt.p.NumRows)
				}
				if tt.status != Optimal {
					return
				}
				if !near(s.Objective, tt.obj) {
					t.Errorf("Objective = %v, want %v", s.Objective, tt.obj)
				}
				if tt.x != nil && !nearAll(s.Primal, tt.x) {
					t.Errorf("Primal = %v, want %v", s.Primal, tt.x)
				}
				if tt.dual != nil && !nearAll(s.Dual, tt.dual) {
					t.Errorf("Dual = %v, want %v", s.Dual, tt.dual)
				}
				checkFeasible(t, tt.p, s)
			})
		}
	}
}

// checkFeasible fails t unless s's primal solution satisfies p's bounds
// and rows and its objective and row activities match the primal solution.
func checkFeasible(t *testing.T, p *Problem, s *Solution) {
	t.Helper()
	const tol = 1e-7
	get := func(v []float64, i int, def float64) float64 {
		if v == nil {
			return def
		}
		return v[i]
	}
	obj := 0.0
	act := make([]float64, p.NumRows)
	for j := range p.NumCols {
		x := s.Primal[j]
		if lo, up := get(p.ColLower, j, 0), get(p.ColUpper, j, inf); x < lo-tol*math.Max(1, math.Abs(lo)) || x > up+tol*math.Max(1, math.Abs(up)) {
			t.Errorf("Primal[%d] = %v is outside [%v, %v]", j, x, lo, up)
		}
		obj += get(p.Objective, j, 0) * x
		for k := p.ColStart[j]; k < p.ColStart[j+1]; k++ {
			act[p.RowIndex[k]] += p.Value[k] * x
		}
	}
	for i, a := range act {
		lo, up := get(p.RowLower, i, -inf), get(p.RowUpper, i, inf)
		if a < lo-1e-6*math.Max(1, math.Abs(lo)) || a > up+1e-6*math.Max(1, math.Abs(up)) {
			t.Errorf("row %d activity %v is outside [%v, %v]", i, a, lo, up)
		}
		if !near(a, s.RowActivity[i]) {
			t.Errorf("RowActivity[%d] = %v, want A·x = %v", i, s.RowActivity[i], a)
		}
	}
	if !near(obj, s.Objective) {
		t.Errorf("Objective = %v, want c·x = %v", s.Objective, obj)
	}
}

func TestSolveLeavesProblemUnchanged(t *testing.T) {
	p := placementLP(3, 60, 30, 10, 240)
	before := clone(p)
	if _, err := Solve(p, Options{}); err != nil {
		t.Fatal(err)
	}
	if !equalProblems(p, before) {
		t.Error("Solve modified its Problem")
	}
}

func clone(p *Problem) *Problem {
	c := *p
	c.ColStart = append([]int32(nil), p.ColStart...)
	c.RowIndex = append([]int32(nil), p.RowIndex...)
	for _, v := range []*[]float64{&c.Value, &c.ColLower, &c.ColUpper, &c.Objective, &c.RowLower, &c.RowUpper} {
		if *v != nil {
			*v = append([]float64{}, *v...)
		}
	}
	return &c
}

func equalProblems(a, b *Problem) bool {
	eqF := func(x, y []float64) bool {
		if len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for i := range x {
			if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
				return false
			}
		}
		return true
	}
	eqI := func(x, y []int32) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	return a.NumRows == b.NumRows && a.NumCols == b.NumCols && a.Maximize == b.Maximize &&
		eqI(a.ColStart, b.ColStart) && eqI(a.RowIndex, b.RowIndex) && eqF(a.Value, b.Value) &&
		eqF(a.ColLower, b.ColLower) && eqF(a.ColUpper, b.ColUpper) && eqF(a.Objective, b.Objective) &&
		eqF(a.RowLower, b.RowLower) && eqF(a.RowUpper, b.RowUpper)
}

func TestModelWarmStartAfterFixingColumns(t *testing.T) {
	p := placementLP(7, 300, 150, 50, 1200)
	m := NewModel()
	defer m.Close()
	if err := m.Load(p); err != nil {
		t.Fatal(err)
	}
	first, err := m.Solve(context.Background(), Options{})
	if err != nil || first.Status != Optimal {
		t.Fatalf("first solve: %v, %v", first, err)
	}

	// Fix the columns that the LP put at 1 (as rounding would) and cap the
	// rest at 0; the warm solve must give the fixed columns' objective.
	lo, up := make([]float64, p.NumCols), make([]float64, p.NumCols)
	want := 0.0
	for j, x := range first.Primal {
		if x > 1-1e-9 {
			lo[j], up[j] = 1, 1
			want += p.Objective[j]
		}
	}
	if err := m.SetColBounds(lo, up); err != nil {
		t.Fatal(err)
	}
	second, err := m.Solve(context.Background(), Options{})
	if err != nil || second.Status != Optimal {
		t.Fatalf("warm solve: %v, %v", second, err)
	}
	if !near(second.Objective, want) {
		t.Errorf("warm Objective = %v, want %v", second.Objective, want)
	}
	if second.Iterations > first.Iterations {
		t.Errorf("warm solve took %d iterations, the cold one %d", second.Iterations, first.Iterations)
	}

	// A fresh solve of the same bounds agrees.
	q := clone(p)
	q.ColLower, q.ColUpper = lo, up
	fresh, err := Solve(q, Options{})
	if err != nil || !near(fresh.Objective, second.Objective) {
		t.Errorf("fresh solve: %v (err %v), warm %v", fresh.Objective, err, second.Objective)
	}
}

func TestModelAfterClose(t *testing.T) {
	m := NewModel()
	m.Close()
	m.Close() // a second Close is a no-op
	if err := m.Load(denseLP([][]float64{{1}}, Problem{})); !errors.Is(err, ErrClosed) {
		t.Errorf("Load after Close: %v, want ErrClosed", err)
	}
	if _, err := m.Solve(context.Background(), Options{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Solve after Close: %v, want ErrClosed", err)
	}
	if err := m.SetColBounds(nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("SetColBounds after Close: %v, want ErrClosed", err)
	}
}

func TestModelSolveBeforeLoad(t *testing.T) {
	m := NewModel()
	defer m.Close()
	if _, err := m.Solve(context.Background(), Options{}); err == nil {
		t.Error("Solve before Load: no error")
	}
}
