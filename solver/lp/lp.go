package lp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
)

// Instance is a backfill placement problem in the abstract. Node n has
// Avail[n][l] free cards whose window is at level l exactly; levels are
// ordered by window length, the last being "no reservation claims it". A
// card of level l can hold a job allowed from level L when l ≥ L.
type Instance struct {
	Levels int
	Avail  [][]int // [node][level]
	Cands  []Cand
}

// Cand is a backfill candidate and where it may go.
type Cand struct {
	Cards int
	Opts  []Opt
}

// Opt is a placement option: all the job's cards on Node, or spread over
// Spread (at most PerNode per node when PerNode > 0, exactly PerNode on
// each node used in rounding), on cards of level ≥ Level.
type Opt struct {
	Level   int
	Node    int   // ≥ 0: a single-node option
	Spread  []int // the nodes of a spread option (Node < 0)
	PerNode int
	Value   float64 // objective gain when chosen
}

// Problem is an LP in column-compressed form, maximised or minimised.
type Problem struct {
	NumRows, NumCols              int
	ColStart                      []int32
	RowIndex                      []int32
	Value                         []float64
	ColLower, ColUpper, Objective []float64
	RowLower, RowUpper            []float64
	Maximize                      bool
}

// Result is a solved LP.
type Result struct {
	Primal    []float64
	Objective float64
	Optimal   bool // false when stopped by a limit: the solution is not a bound
}

// Solver solves an LP within the context's deadline.
type Solver interface {
	Solve(ctx context.Context, p *Problem) (*Result, error)
}

// ErrNotOptimal is returned when the LP stopped before optimality.
var ErrNotOptimal = errors.New("lp: not solved to optimality")

// Var locates x[j,o] among the LP's columns.
type Var struct{ Cand, Opt int }

// Model is a formulated instance: the LP and what its columns mean.
type Model struct {
	Problem *Problem
	X       []Var // columns 0..len(X)-1 are the x variables
	// yOf[k] lists, for spread x-column k, the y columns and their nodes.
	yOf map[int][]yVar
}

type yVar struct{ col, node int }

type builder struct {
	cols   [][]entry
	lo, up []float64
	obj    []float64
	rowLo  []float64
	rowUp  []float64
}

type entry struct {
	row int32
	v   float64
}

func (b *builder) col(lo, up, obj float64) int {
	b.cols = append(b.cols, nil)
	b.lo = append(b.lo, lo)
	b.up = append(b.up, up)
	b.obj = append(b.obj, obj)
	return len(b.cols) - 1
}

func (b *builder) row(lo, up float64) int {
	b.rowLo = append(b.rowLo, lo)
	b.rowUp = append(b.rowUp, up)
	return len(b.rowLo) - 1
}

func (b *builder) set(row, col int, v float64) {
	b.cols[col] = append(b.cols[col], entry{int32(row), v})
}

// capAtLeast returns the free cards of node n at level ≥ l.
func (in *Instance) capAtLeast(n, l int) int {
	s := 0
	for k := l; k < in.Levels; k++ {
		s += in.Avail[n][k]
	}
	return s
}

// Validate checks an instance's shape.
func (in *Instance) Validate() error {
	for n, a := range in.Avail {
		if len(a) != in.Levels {
			return fmt.Errorf("lp: node %d has %d levels, want %d", n, len(a), in.Levels)
		}
	}
	for j, c := range in.Cands {
		if c.Cards < 1 {
			return fmt.Errorf("lp: candidate %d needs %d cards", j, c.Cards)
		}
		for o, op := range c.Opts {
			if op.Level < 0 || op.Level >= in.Levels {
				return fmt.Errorf("lp: candidate %d option %d: level %d out of range", j, o, op.Level)
			}
			if op.Node >= len(in.Avail) || op.Node < 0 && len(op.Spread) == 0 {
				return fmt.Errorf("lp: candidate %d option %d: no node", j, o)
			}
			for _, n := range op.Spread {
				if n < 0 || n >= len(in.Avail) {
					return fmt.Errorf("lp: candidate %d option %d: node %d out of range", j, o, n)
				}
			}
		}
	}
	return nil
}

// Formulate builds the LP relaxation:
//
//	max Σ value[j,o]·x[j,o]
//	s.t. Σ_o x[j,o] ≤ 1                                   each job at most once
//	     Σ_n y[j,o,n] = cards_j · x[j,o]                   spread options
//	     y[j,o,n] ≤ u[j,o,n] · x[j,o]                      per-node share of a spread
//	     Σ_{(j,o) on n, level ≥ l} use ≤ free_n(level ≥ l)   each node, each level
//	     0 ≤ x ≤ 1, y ≥ 0
//
// The capacity rows are Hall's condition for nested sets: jobs allowed only
// on long windows compete for fewer cards than jobs that accept any.
func Formulate(in *Instance) (*Model, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	b := &builder{}
	m := &Model{yOf: map[int][]yVar{}}
	// x columns first.
	for j, c := range in.Cands {
		for o, op := range c.Opts {
			b.col(0, 1, op.Value)
			m.X = append(m.X, Var{j, o})
		}
	}
	// Job rows.
	k := 0
	for _, c := range in.Cands {
		if len(c.Opts) == 0 {
			continue
		}
		r := b.row(-1e30, 1)
		for range c.Opts {
			b.set(r, k, 1)
			k++
		}
	}
	// Usage per node and level: which columns use node n at level L, and how.
	type use struct {
		col   int
		level int
		coef  float64
	}
	uses := make([][]use, len(in.Avail))
	for xc, v := range m.X {
		c := &in.Cands[v.Cand]
		op := &c.Opts[v.Opt]
		if op.Node >= 0 {
			uses[op.Node] = append(uses[op.Node], use{xc, op.Level, float64(c.Cards)})
			continue
		}
		link := b.row(0, 0)
		b.set(link, xc, -float64(c.Cards))
		for _, n := range op.Spread {
			u := min(in.capAtLeast(n, op.Level), c.Cards)
			if op.PerNode > 0 {
				u = min(u, op.PerNode)
			}
			if u <= 0 {
				continue
			}
			yc := b.col(0, float64(u), 0)
			b.set(link, yc, 1)
			tie := b.row(-1e30, 0)
			b.set(tie, yc, 1)
			b.set(tie, xc, -float64(u))
			uses[n] = append(uses[n], use{yc, op.Level, 1})
			m.yOf[xc] = append(m.yOf[xc], yVar{yc, n})
		}
	}
	for n, us := range uses {
		if len(us) == 0 {
			continue
		}
		for l := 0; l < in.Levels; l++ {
			// A row per level where the set of users changes, or level 0.
			any := false
			for _, u := range us {
				if u.level == l {
					any = true
					break
				}
			}
			if !any {
				continue
			}
			// A row that cannot bind (its users at their upper bounds fit)
			// is left out: the LP is the same, and smaller.
			most := 0.0
			for _, u := range us {
				if u.level >= l {
					most += u.coef * b.up[u.col]
				}
			}
			room := float64(in.capAtLeast(n, l))
			if most <= room {
				continue
			}
			r := b.row(-1e30, room)
			for _, u := range us {
				if u.level >= l {
					b.set(r, u.col, u.coef)
				}
			}
		}
	}
	p := &Problem{NumRows: len(b.rowLo), NumCols: len(b.cols), Maximize: true,
		ColLower: b.lo, ColUpper: b.up, Objective: b.obj, RowLower: b.rowLo, RowUpper: b.rowUp}
	p.ColStart = make([]int32, 0, len(b.cols)+1)
	for _, col := range b.cols {
		p.ColStart = append(p.ColStart, int32(len(p.RowIndex)))
		for _, e := range col {
			p.RowIndex = append(p.RowIndex, e.row)
			p.Value = append(p.Value, e.v)
		}
	}
	p.ColStart = append(p.ColStart, int32(len(p.RowIndex)))
	m.Problem = p
	return m, nil
}

// Choice is a rounded decision: candidate Cand takes option Opt, on
// Take[n] cards of node n.
type Choice struct {
	Cand, Opt int
	Take      map[int]int
}

// Round turns an LP solution into an integer assignment: options in
// decreasing LP value (ties: larger objective value, then lower indices),
// each placed if the remaining capacity holds it, taking the shortest
// windows that suffice. It returns the choices in placement order and
// their total value.
func Round(in *Instance, m *Model, primal []float64) ([]Choice, float64) {
	type cv struct {
		xc int
		x  float64
	}
	var order []cv
	for xc := range m.X {
		if primal[xc] > 1e-6 {
			order = append(order, cv{xc, primal[xc]})
		}
	}
	slices.SortFunc(order, func(a, b cv) int {
		if c := cmp.Compare(b.x, a.x); c != 0 {
			return c
		}
		va := in.Cands[m.X[a.xc].Cand].Opts[m.X[a.xc].Opt].Value
		vb := in.Cands[m.X[b.xc].Cand].Opts[m.X[b.xc].Opt].Value
		if c := cmp.Compare(vb, va); c != 0 {
			return c
		}
		return cmp.Compare(a.xc, b.xc)
	})
	st := newState(in)
	placed := make([]bool, len(in.Cands))
	var out []Choice
	total := 0.0
	for _, o := range order {
		v := m.X[o.xc]
		if placed[v.Cand] {
			continue
		}
		// Spread options try their LP nodes first, largest share first.
		var pref []int
		for _, y := range m.yOf[o.xc] {
			if primal[y.col] > 1e-6 {
				pref = append(pref, y.node)
			}
		}
		if take, ok := st.place(&in.Cands[v.Cand], v.Opt, pref); ok {
			placed[v.Cand] = true
			out = append(out, Choice{Cand: v.Cand, Opt: v.Opt, Take: take})
			total += in.Cands[v.Cand].Opts[v.Opt].Value
		}
	}
	// Then a greedy pass over what is left: the remaining options by value,
	// highest first.
	var restOpts []Var
	for j := range in.Cands {
		if placed[j] {
			continue
		}
		for o := range in.Cands[j].Opts {
			restOpts = append(restOpts, Var{j, o})
		}
	}
	slices.SortStableFunc(restOpts, func(a, b Var) int {
		return cmp.Compare(in.Cands[b.Cand].Opts[b.Opt].Value, in.Cands[a.Cand].Opts[a.Opt].Value)
	})
	for _, v := range restOpts {
		if placed[v.Cand] || in.Cands[v.Cand].Opts[v.Opt].Value <= 0 {
			continue
		}
		if take, ok := st.place(&in.Cands[v.Cand], v.Opt, nil); ok {
			placed[v.Cand] = true
			out = append(out, Choice{Cand: v.Cand, Opt: v.Opt, Take: take})
			total += in.Cands[v.Cand].Opts[v.Opt].Value
		}
	}
	return out, total
}

// state is the remaining capacity during rounding or search.
type state struct {
	in    *Instance
	avail [][]int
}

func newState(in *Instance) *state {
	s := &state{in: in, avail: make([][]int, len(in.Avail))}
	size := 0
	for n := range in.Avail {
		size += len(in.Avail[n])
	}
	// One array for every node's copy: a cluster's nodes were an
	// allocation each.
	flat := make([]int, 0, size)
	for n := range in.Avail {
		k := len(flat)
		flat = append(flat, in.Avail[n]...)
		s.avail[n] = flat[k:len(flat):len(flat)]
	}
	return s
}

func (s *state) atLeast(n, l int) int {
	t := 0
	for k := l; k < len(s.avail[n]); k++ {
		t += s.avail[n][k]
	}
	return t
}

// take removes k cards of level ≥ l from node n, shortest windows first.
func (s *state) take(n, l, k int) {
	for lv := l; k > 0 && lv < len(s.avail[n]); lv++ {
		d := min(k, s.avail[n][lv])
		s.avail[n][lv] -= d
		k -= d
	}
}

// place places option o of c if it fits, returning cards taken per node.
func (s *state) place(c *Cand, o int, pref []int) (map[int]int, bool) {
	op := &c.Opts[o]
	if op.Node >= 0 {
		if s.atLeast(op.Node, op.Level) < c.Cards {
			return nil, false
		}
		s.take(op.Node, op.Level, c.Cards)
		return map[int]int{op.Node: c.Cards}, true
	}
	// Spread: preferred nodes, then the rest by most free first.
	nodes := slices.Clone(pref)
	rest := slices.Clone(op.Spread)
	slices.SortStableFunc(rest, func(a, b int) int { return cmp.Compare(s.atLeast(b, op.Level), s.atLeast(a, op.Level)) })
	for _, n := range rest {
		if !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	take := map[int]int{}
	left := c.Cards
	for _, n := range nodes {
		if left == 0 {
			break
		}
		a := s.atLeast(n, op.Level)
		k := min(a, left)
		if op.PerNode > 0 {
			if a < op.PerNode {
				continue
			}
			k = op.PerNode
		}
		take[n] = k
		left -= k
	}
	if left != 0 {
		return nil, false
	}
	for n, k := range take {
		s.take(n, op.Level, k)
	}
	return take, true
}
