package clp

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalidProblem is wrapped by every error that reports a malformed
// Problem or Options; the message names the offending field.
var ErrInvalidProblem = errors.New("clp: invalid problem")

// Problem is a linear program in column-compressed (CSC) form:
//
//	minimize (or maximize) Objective·x
//	subject to RowLower ≤ A·x ≤ RowUpper, ColLower ≤ x ≤ ColUpper
//
// where column j of A holds Value[k] in row RowIndex[k] for k in
// [ColStart[j], ColStart[j+1]). Infinite bounds are math.Inf(±1). Keep
// finite values moderate: CLP takes a bound beyond ±1e27 for infinite, and
// with a huge finite one (a row bound of 1e19, say) its dual simplex may
// call a bounded problem unbounded.
//
// A nil bound or objective slice takes CLP's default for every entry:
// ColLower 0, ColUpper +Inf, Objective 0, RowLower -Inf, RowUpper +Inf.
// A non-nil one must have one entry per column (or row).
type Problem struct {
	NumRows, NumCols int

	ColStart []int32 // len NumCols+1, ColStart[0] = 0, non-decreasing
	RowIndex []int32 // len ColStart[NumCols]; no row twice within a column
	Value    []float64

	ColLower, ColUpper []float64 // len NumCols or nil
	Objective          []float64 // len NumCols or nil
	RowLower, RowUpper []float64 // len NumRows or nil

	Maximize bool
}

// Validate reports the first thing wrong with p, or nil. The error wraps
// ErrInvalidProblem and names the field and index at fault.
func (p *Problem) Validate() error {
	if p == nil {
		return fmt.Errorf("%w: nil problem", ErrInvalidProblem)
	}
	if p.NumRows < 0 || p.NumRows > math.MaxInt32 {
		return invalid("NumRows = %d is out of range [0, %d]", p.NumRows, math.MaxInt32)
	}
	if p.NumCols < 0 || p.NumCols > math.MaxInt32-1 {
		return invalid("NumCols = %d is out of range [0, %d]", p.NumCols, math.MaxInt32-1)
	}
	if err := p.validateMatrix(); err != nil {
		return err
	}
	if err := checkBounds("ColLower", "ColUpper", p.ColLower, p.ColUpper, p.NumCols, "NumCols", 0); err != nil {
		return err
	}
	if err := checkBounds("RowLower", "RowUpper", p.RowLower, p.RowUpper, p.NumRows, "NumRows", math.Inf(-1)); err != nil {
		return err
	}
	if p.Objective != nil {
		if len(p.Objective) != p.NumCols {
			return invalid("len(Objective) = %d, want NumCols = %d", len(p.Objective), p.NumCols)
		}
		for j, c := range p.Objective {
			if math.IsNaN(c) || math.IsInf(c, 0) {
				return invalid("Objective[%d] = %v is not finite", j, c)
			}
		}
	}
	return nil
}

func (p *Problem) validateMatrix() error {
	if len(p.ColStart) != p.NumCols+1 {
		return invalid("len(ColStart) = %d, want NumCols+1 = %d", len(p.ColStart), p.NumCols+1)
	}
	if p.ColStart[0] != 0 {
		return invalid("ColStart[0] = %d, want 0", p.ColStart[0])
	}
	for j := 1; j <= p.NumCols; j++ {
		if p.ColStart[j] < p.ColStart[j-1] {
			return invalid("ColStart[%d] = %d is below ColStart[%d] = %d", j, p.ColStart[j], j-1, p.ColStart[j-1])
		}
	}
	nnz := int(p.ColStart[p.NumCols])
	if len(p.RowIndex) != nnz {
		return invalid("len(RowIndex) = %d, want ColStart[NumCols] = %d", len(p.RowIndex), nnz)
	}
	if len(p.Value) != nnz {
		return invalid("len(Value) = %d, want ColStart[NumCols] = %d", len(p.Value), nnz)
	}
	// lastCol[i] is 1 + the last column seen with an entry in row i; CLP
	// rejects (or silently sums) duplicates, so they are an input error here.
	lastCol := make([]int32, p.NumRows)
	for j := 0; j < p.NumCols; j++ {
		for k := p.ColStart[j]; k < p.ColStart[j+1]; k++ {
			i := p.RowIndex[k]
			if i < 0 || int(i) >= p.NumRows {
				return invalid("RowIndex[%d] = %d (column %d) is out of range [0, %d)", k, i, j, p.NumRows)
			}
			if lastCol[i] == int32(j)+1 {
				return invalid("RowIndex[%d] = %d repeats a row within column %d", k, i, j)
			}
			lastCol[i] = int32(j) + 1
			if v := p.Value[k]; math.IsNaN(v) || math.IsInf(v, 0) {
				return invalid("Value[%d] = %v (row %d, column %d) is not finite", k, v, i, j)
			}
		}
	}
	return nil
}

// checkBounds checks one pair of bound slices of length n (or nil); a nil
// lower bound stands for loDefault everywhere, a nil upper bound for +Inf.
func checkBounds(loName, upName string, lo, up []float64, n int, nName string, loDefault float64) error {
	if lo != nil && len(lo) != n {
		return invalid("len(%s) = %d, want %s = %d", loName, len(lo), nName, n)
	}
	if up != nil && len(up) != n {
		return invalid("len(%s) = %d, want %s = %d", upName, len(up), nName, n)
	}
	for i, v := range lo {
		if math.IsNaN(v) || math.IsInf(v, 1) {
			return invalid("%s[%d] = %v, want a number below +Inf", loName, i, v)
		}
	}
	for i, v := range up {
		if math.IsNaN(v) || math.IsInf(v, -1) {
			return invalid("%s[%d] = %v, want a number above -Inf", upName, i, v)
		}
		l := loDefault
		if lo != nil {
			l = lo[i]
		}
		if l > v {
			if lo == nil {
				return invalid("%s[%d] = %v is below the default %s of %v (%s is nil)", upName, i, v, loName, l, loName)
			}
			return invalid("%s[%d] = %v is above %s[%d] = %v", loName, i, l, upName, i, v)
		}
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidProblem}, args...)...)
}

// Algorithm is the simplex variant CLP runs.
type Algorithm int

const (
	// DualSimplex is CLP's dual simplex, usually the faster one; the default.
	DualSimplex Algorithm = iota
	// PrimalSimplex is CLP's primal simplex.
	PrimalSimplex
)

func (a Algorithm) String() string {
	switch a {
	case DualSimplex:
		return "dual simplex"
	case PrimalSimplex:
		return "primal simplex"
	}
	return fmt.Sprintf("Algorithm(%d)", int(a))
}

// Options bound one solve. The zero value runs the dual simplex with no
// limits.
type Options struct {
	// MaxSeconds bounds the solve in wall-clock seconds; 0 means no limit.
	// CLP checks it between simplex iterations, so a solve can run over by
	// one iteration (or one presolve pass).
	MaxSeconds float64
	// MaxIterations bounds the simplex iterations; 0 means no limit.
	MaxIterations int
	Algorithm     Algorithm
}

func (o Options) validate() error {
	if math.IsNaN(o.MaxSeconds) || o.MaxSeconds < 0 {
		return invalid("Options.MaxSeconds = %v, want ≥ 0", o.MaxSeconds)
	}
	if o.MaxIterations < 0 || o.MaxIterations > math.MaxInt32 {
		return invalid("Options.MaxIterations = %d is out of range [0, %d]", o.MaxIterations, math.MaxInt32)
	}
	if o.Algorithm != DualSimplex && o.Algorithm != PrimalSimplex {
		return invalid("Options.Algorithm = %d is unknown", int(o.Algorithm))
	}
	return nil
}

// Status is how a solve ended; the values are CLP's problem status codes.
type Status int

const (
	// Optimal: the solution is optimal within CLP's tolerances.
	Optimal Status = 0
	// PrimalInfeasible: no x satisfies the constraints.
	PrimalInfeasible Status = 1
	// DualInfeasible: the objective is unbounded (if the problem is feasible).
	DualInfeasible Status = 2
	// StoppedOnLimits: MaxSeconds, MaxIterations or the context deadline
	// stopped the solve; the solution is CLP's last iterate, neither optimal
	// nor necessarily feasible.
	StoppedOnLimits Status = 3
	// Errors: CLP gave up (numerical trouble or an internal check failed).
	Errors Status = 4
)

func (s Status) String() string {
	switch s {
	case Optimal:
		return "optimal"
	case PrimalInfeasible:
		return "primal infeasible"
	case DualInfeasible:
		return "dual infeasible (unbounded)"
	case StoppedOnLimits:
		return "stopped on limits"
	case Errors:
		return "errors"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Solution is what CLP reports after a solve. The vectors are copies that
// the caller owns; they are meaningful when Status is Optimal and CLP's last
// iterate otherwise.
type Solution struct {
	Status Status
	// Secondary is CLP's secondary status, kept for diagnostics: 0 none;
	// with Optimal, 2/3/4 mean the scaled problem is optimal but the
	// unscaled one has small primal/dual/both infeasibilities and 6 that the
	// problem has no rows or no columns; with StoppedOnLimits, 9 means the
	// time limit (rather than the iteration limit).
	Secondary int
	// Objective is Objective·x in the problem's own sense (the maximum when
	// Maximize is set).
	Objective   float64
	Primal      []float64 // x, one per column
	RowActivity []float64 // A·x, one per row
	// Dual holds the row duals (shadow prices) and ReducedCost the column
	// reduced costs, as CLP reports them: the derivative of the reported
	// Objective with respect to each row bound (for a maximization, a binding
	// ≤ row has a non-negative dual).
	Dual        []float64
	ReducedCost []float64
	Iterations  int
}
