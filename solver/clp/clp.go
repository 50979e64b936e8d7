package clp

/*
#cgo pkg-config: clp
#include <limits.h>
#include "coin/Clp_C_Interface.h"
#include "wallclock.h"
*/
import "C"

import (
	"context"
	"errors"
	"math"
	"time"
	"unsafe"
)

// The problem's index slices are handed to CLP without a copy, so the Go
// and C integer types must have the same size. Each line fails to compile
// (constant overflow) when the sizes differ.
const (
	_ = uintptr(unsafe.Sizeof(C.CoinBigIndex(0)) - unsafe.Sizeof(int32(0)))
	_ = uintptr(unsafe.Sizeof(int32(0)) - unsafe.Sizeof(C.CoinBigIndex(0)))
	_ = uintptr(unsafe.Sizeof(C.int(0)) - unsafe.Sizeof(int32(0)))
	_ = uintptr(unsafe.Sizeof(int32(0)) - unsafe.Sizeof(C.int(0)))
)

// ErrClosed is returned by the methods of a Model after Close.
var ErrClosed = errors.New("clp: model is closed")

// ErrNotLoaded is returned by Model.Solve and Model.SetColBounds before
// Model.Load.
var ErrNotLoaded = errors.New("clp: no problem loaded")

// Solve solves p with no deadline; see SolveContext.
func Solve(p *Problem, opt Options) (*Solution, error) {
	return SolveContext(context.Background(), p, opt)
}

// SolveContext solves p in a fresh CLP model, freed before it returns.
//
// The context's deadline is the time budget: MaxSeconds becomes the time
// left (or stays, if smaller), and a solve cut short by it ends with Status
// StoppedOnLimits and a nil error. A context already done returns its error
// (context.DeadlineExceeded for a passed deadline) without solving. CLP
// cannot be interrupted, so a cancellation during the solve is not seen.
//
// Only an invalid p or opt (ErrInvalidProblem) and a done context are
// errors; an infeasible or unbounded problem is a Status.
func SolveContext(ctx context.Context, p *Problem, opt Options) (*Solution, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := opt.validate(); err != nil {
		return nil, err
	}
	if _, err := budget(ctx, opt); err != nil {
		return nil, err
	}
	m := NewModel()
	defer m.Close()
	if err := m.load(p); err != nil {
		return nil, err
	}
	return m.Solve(ctx, opt)
}

// Model is one CLP model that keeps its problem and basis between solves,
// so that a solve after SetColBounds starts from the previous basis.
//
// A Model owns C memory that only Close frees (there is no finalizer):
// call Close, typically with defer, on every Model. A Model is not safe for
// concurrent use; use one model per goroutine (CLP itself is
// thread-compatible: separate models may be solved in parallel).
type Model struct {
	c          unsafe.Pointer // the C Clp_Simplex; nil once closed
	rows, cols int
	loaded     bool
}

// NewModel returns an empty model with CLP's log output silenced.
func NewModel() *Model {
	c := C.Clp_newModel()
	C.Clp_setLogLevel(c, 0)
	return &Model{c: c}
}

// Close frees the C model. It is safe to call more than once.
func (m *Model) Close() {
	if m.c != nil {
		C.Clp_deleteModel(m.c)
		m.c = nil
	}
}

// Load replaces the model's problem with p. CLP copies p, which the caller
// may change or reuse afterwards.
func (m *Model) Load(p *Problem) error {
	if m.c == nil {
		return ErrClosed
	}
	if err := p.Validate(); err != nil {
		return err
	}
	return m.load(p)
}

// load is Load for a validated p.
func (m *Model) load(p *Problem) error {
	// Go memory may be passed for the duration of the call: Clp_loadProblem
	// copies every array, and none of them holds Go pointers.
	var index *C.int
	var value *C.double
	if len(p.RowIndex) > 0 {
		index = (*C.int)(unsafe.Pointer(&p.RowIndex[0]))
		value = (*C.double)(unsafe.Pointer(&p.Value[0]))
	}
	C.Clp_loadProblem(m.c, C.int(p.NumCols), C.int(p.NumRows),
		(*C.CoinBigIndex)(unsafe.Pointer(&p.ColStart[0])), index, value,
		bounds(p.ColLower), bounds(p.ColUpper), doubles(p.Objective),
		bounds(p.RowLower), bounds(p.RowUpper))
	sense := 1.0
	if p.Maximize {
		sense = -1
	}
	C.Clp_setObjSense(m.c, C.double(sense))
	m.rows, m.cols = p.NumRows, p.NumCols
	m.loaded = true
	return nil
}

// SetColBounds replaces every column's bounds (nil: lower 0, upper +Inf)
// and keeps the basis, so that the next Solve is a warm start.
func (m *Model) SetColBounds(lower, upper []float64) error {
	if m.c == nil {
		return ErrClosed
	}
	if !m.loaded {
		return ErrNotLoaded
	}
	if err := checkBounds("ColLower", "ColUpper", lower, upper, m.cols, "NumCols", 0); err != nil {
		return err
	}
	if m.cols == 0 {
		return nil
	}
	C.Clp_chgColumnLower(m.c, bounds(lower))
	C.Clp_chgColumnUpper(m.c, bounds(upper))
	return nil
}

// Solve solves the loaded problem, from the previous basis if there is one.
// The context and opt work as for SolveContext.
func (m *Model) Solve(ctx context.Context, opt Options) (*Solution, error) {
	if m.c == nil {
		return nil, ErrClosed
	}
	if !m.loaded {
		return nil, ErrNotLoaded
	}
	if err := opt.validate(); err != nil {
		return nil, err
	}
	seconds, err := budget(ctx, opt)
	if err != nil {
		return nil, err
	}

	// 1. Limits: set on every solve, since the model outlives one call.
	maxIter := C.int(C.INT_MAX)
	if opt.MaxIterations > 0 {
		maxIter = C.int(opt.MaxIterations)
	}
	C.Clp_setMaximumIterations(m.c, maxIter)
	C.Clp_setNumberIterations(m.c, 0)
	// Clp_setMaximumSeconds counts the whole process's CPU time, which
	// other goroutines advance too (see wallclock.cc); the budget is wall
	// time, so that limit stays off and the wall-clock one is used.
	C.Clp_setMaximumSeconds(m.c, -1)
	if seconds > 0 {
		C.huitian_clp_set_maximum_wall_seconds(m.c, C.double(seconds))
	} else {
		C.huitian_clp_set_maximum_wall_seconds(m.c, -1)
	}

	// 2. Solve, from the basis that the last solve left, if any. CLP's
	// presolve (Clp_initialSolve) is not used: on the planner's placement
	// LPs it cost more than it saved (2,000×5,000: 36 ms with it, 26 ms
	// without; a tiny LP: 150 µs against 75 µs).
	if opt.Algorithm == PrimalSimplex {
		C.Clp_primal(m.c, 0)
	} else {
		C.Clp_dual(m.c, 0)
	}

	// 3. Copy the results out of C memory.
	s := &Solution{
		Status:      status(int(C.Clp_status(m.c))),
		Secondary:   int(C.Clp_secondaryStatus(m.c)),
		Objective:   float64(C.Clp_objectiveValue(m.c)),
		Primal:      copyOut(C.Clp_getColSolution(m.c), m.cols),
		RowActivity: copyOut(C.Clp_getRowActivity(m.c), m.rows),
		Dual:        copyOut(C.Clp_getRowPrice(m.c), m.rows),
		ReducedCost: copyOut(C.Clp_getReducedCost(m.c), m.cols),
		Iterations:  int(C.Clp_numberIterations(m.c)),
	}
	return s, nil
}

// budget returns the seconds a solve may take (0: no limit), the smaller
// of opt.MaxSeconds and the time left before ctx's deadline, or the
// context's error when it is done.
func budget(ctx context.Context, opt Options) (float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	seconds := opt.MaxSeconds
	if deadline, ok := ctx.Deadline(); ok {
		left := time.Until(deadline).Seconds()
		if left <= 0 {
			return 0, context.DeadlineExceeded
		}
		if seconds == 0 || left < seconds {
			seconds = left
		}
	}
	return seconds, nil
}

// status maps CLP's problem status to a Status. CLP documents -1 (unknown,
// e.g. postsolve found the result not optimal) and 5 (stopped by an event
// handler, which this package never installs); both count as Errors.
func status(clp int) Status {
	switch s := Status(clp); s {
	case Optimal, PrimalInfeasible, DualInfeasible, StoppedOnLimits:
		return s
	}
	return Errors
}

// bounds returns a pointer to a copy of v with ±Inf replaced by CLP's
// infinity (±DBL_MAX), or nil for nil (CLP's default).
func bounds(v []float64) *C.double {
	if v == nil {
		return nil
	}
	c := make([]float64, len(v)+1) // +1: a valid pointer even when len(v) == 0
	for i, x := range v {
		switch {
		case math.IsInf(x, 1):
			x = math.MaxFloat64
		case math.IsInf(x, -1):
			x = -math.MaxFloat64
		}
		c[i] = x
	}
	return (*C.double)(unsafe.Pointer(&c[0]))
}

// doubles returns a pointer to v's first element, or nil for an empty v.
func doubles(v []float64) *C.double {
	if len(v) == 0 {
		return nil
	}
	return (*C.double)(unsafe.Pointer(&v[0]))
}

// copyOut copies n doubles from C memory into a new Go slice.
func copyOut(p *C.double, n int) []float64 {
	out := make([]float64, n)
	if p != nil && n > 0 {
		copy(out, unsafe.Slice((*float64)(unsafe.Pointer(p)), n))
	}
	return out
}
