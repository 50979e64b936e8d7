package clp

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// randomLP returns a feasible LP whose columns all have finite bounds (so
// it is bounded), with ≤, ≥, equality and ranged rows. Feasibility comes
// from a point x0 inside the column bounds that every row admits.
func randomLP(r *rand.Rand) *Problem {
	m, n := 1+r.IntN(8), 1+r.IntN(8)
	a := make([][]float64, m)
	x0 := make([]float64, n)
	p := &Problem{
		ColLower: make([]float64, n), ColUpper: make([]float64, n), Objective: make([]float64, n),
		RowLower: make([]float64, m), RowUpper: make([]float64, m),
		Maximize: r.IntN(2) == 0,
	}
	for j := range n {
		if r.IntN(2) == 0 {
			p.ColLower[j] = -10 * r.Float64()
		}
		p.ColUpper[j] = p.ColLower[j] + 0.5 + 10*r.Float64()
		x0[j] = p.ColLower[j] + r.Float64()*(p.ColUpper[j]-p.ColLower[j])
		p.Objective[j] = math.Round(20*r.Float64()-10) / 2
	}
	equalities := 0
	for i := range m {
		a[i] = make([]float64, n)
		act := 0.0
		for j := range n {
			if r.Float64() < 0.6 || j == i%n { // no empty rows
				a[i][j] = math.Round(200*r.Float64()-100) / 20
				if a[i][j] == 0 {
					a[i][j] = 1
				}
			}
			act += a[i][j] * x0[j]
		}
		kind := r.IntN(4)
		if kind == 2 && equalities == n {
			// More equality rows than columns would leave the standard
			// form without full row rank, which gonum's simplex requires.
			kind = 3
		}
		switch kind {
		case 0: // ≤
			p.RowLower[i], p.RowUpper[i] = -inf, act+3*r.Float64()
		case 1: // ≥
			p.RowLower[i], p.RowUpper[i] = act-3*r.Float64(), inf
		case 2: // =
			p.RowLower[i], p.RowUpper[i] = act, act
			equalities++
		default: // ranged
			p.RowLower[i], p.RowUpper[i] = act-2*r.Float64(), act+2*r.Float64()
		}
	}
	p.NumRows, p.NumCols, p.ColStart, p.RowIndex, p.Value = dense(a)
	return p
}

// standardForm rewrites p (with finite column bounds) as gonum's
//
//	minimize cᵀy  s.t.  Ay = b, y ≥ 0
//
// with y = x - ColLower, a slack per column upper bound and per row
// inequality, and a second slack for a ranged row's width. It returns the
// constant to add to the standard form's optimum to get p's objective.
func standardForm(p *Problem) (c []float64, a *mat.Dense, b []float64, offset float64) {
	n := p.NumCols
	// Count the standard form's rows and columns.
	rows, cols := n, 2*n // column bounds: y_j + u_j = up_j - lo_j
	for i := range p.NumRows {
		lo, up := p.RowLower[i], p.RowUpper[i]
		switch {
		case lo == up: // equality
			rows++
		case math.IsInf(lo, -1) || math.IsInf(up, 1): // one slack
			rows, cols = rows+1, cols+1
		default: // ranged: a·y + s = up', s + t = up - lo
			rows, cols = rows+2, cols+2
		}
	}
	a = mat.NewDense(rows, cols, nil)
	b = make([]float64, rows)
	c = make([]float64, cols)
	sense := 1.0
	if p.Maximize {
		sense = -1
	}
	for j := range n {
		c[j] = sense * p.Objective[j]
		offset += p.Objective[j] * p.ColLower[j]
		a.Set(j, j, 1)
		a.Set(j, n+j, 1)
		b[j] = p.ColUpper[j] - p.ColLower[j]
	}
	// shift[i] = row i's activity at x = ColLower.
	shift := make([]float64, p.NumRows)
	for j := range n {
		for k := p.ColStart[j]; k < p.ColStart[j+1]; k++ {
			shift[p.RowIndex[k]] += p.Value[k] * p.ColLower[j]
		}
	}
	row, slack := n, 2*n
	for i := range p.NumRows {
		for j := range n {
			for k := p.ColStart[j]; k < p.ColStart[j+1]; k++ {
				if int(p.RowIndex[k]) == i {
					a.Set(row, j, p.Value[k])
				}
			}
		}
		lo, up := p.RowLower[i], p.RowUpper[i]
		switch {
		case lo == up:
			b[row] = up - shift[i]
			row++
		case math.IsInf(lo, -1):
			a.Set(row, slack, 1)
			b[row] = up - shift[i]
			row, slack = row+1, slack+1
		case math.IsInf(up, 1):
			a.Set(row, slack, -1)
			b[row] = lo - shift[i]
			row, slack = row+1, slack+1
		default:
			a.Set(row, slack, 1)
			b[row] = up - shift[i]
			a.Set(row+1, slack, 1)
			a.Set(row+1, slack+1, 1)
			b[row+1] = up - lo
			row, slack = row+2, slack+2
		}
	}
	return c, a, b, offset
}

// TestSolveAgreesWithGonumSimplex solves random feasible bounded LPs with
// CLP and with gonum's dense simplex, an independent implementation.
func TestSolveAgreesWithGonumSimplex(t *testing.T) {
	const problems = 300
	r := rand.New(rand.NewPCG(2024, 11))
	compared, skipped, worst := 0, 0, 0.0
	for k := range problems {
		p := randomLP(r)
		s, err := Solve(p, Options{Algorithm: Algorithm(k % 2)})
		if err != nil {
			t.Fatalf("problem %d: %v", k, err)
		}
		if s.Status != Optimal {
			t.Fatalf("problem %d (feasible and bounded by construction): Status = %v", k, s.Status)
		}
		checkFeasible(t, p, s)

		c, a, b, offset := standardForm(p)
		f, _, err := lp.Simplex(c, a, b, 1e-10, nil)
		if err != nil {
			// gonum's textbook simplex gives up on some degenerate or
			// rank-deficient inputs; CLP's answer was still checked above.
			skipped++
			t.Logf("problem %d: gonum: %v", k, err)
			continue
		}
		want := f + offset
		if p.Maximize {
			want = -f + offset
		}
		compared++
		diff := math.Abs(s.Objective-want) / math.Max(1, math.Abs(want))
		worst = max(worst, diff)
		if diff > 1e-6 {
			t.Errorf("problem %d (%d×%d, maximize %v): CLP objective %v, gonum %v", k, p.NumRows, p.NumCols, p.Maximize, s.Objective, want)
		}
	}
	t.Logf("%d random LPs: %d compared with gonum, %d skipped (gonum failed), max relative objective difference %.3g",
		problems, compared, skipped, worst)
	if compared < 200 {
		t.Errorf("only %d LPs compared with gonum, want at least 200", compared)
	}
}
