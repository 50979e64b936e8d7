package clp

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestSolveRejectsMalformedProblems(t *testing.T) {
	nan := math.NaN()
	// good is a valid 2×2 problem; each case breaks one thing in a copy.
	good := func() *Problem {
		return denseLP([][]float64{{1, 2}, {3, 0}}, Problem{
			ColLower: []float64{0, 0}, ColUpper: []float64{1, 1}, Objective: []float64{1, 1},
			RowLower: []float64{-inf, 0}, RowUpper: []float64{4, inf},
		})
	}
	tests := []struct {
		name   string
		mutate func(p *Problem)
		want   string // a substring of the error, naming the field
	}{
		{"a negative row count", func(p *Problem) { p.NumRows = -1 }, "NumRows = -1"},
		{"a negative column count", func(p *Problem) { p.NumCols = -1 }, "NumCols = -1"},
		{"ColStart one short", func(p *Problem) { p.ColStart = p.ColStart[:2] }, "len(ColStart) = 2, want NumCols+1 = 3"},
		{"ColStart not starting at 0", func(p *Problem) { p.ColStart[0] = 1 }, "ColStart[0] = 1"},
		{"ColStart decreasing", func(p *Problem) { p.ColStart[1] = 4 }, "ColStart[2] = 3 is below ColStart[1] = 4"},
		{"RowIndex shorter than ColStart says", func(p *Problem) { p.RowIndex = p.RowIndex[:2] }, "len(RowIndex) = 2"},
		{"Value shorter than ColStart says", func(p *Problem) { p.Value = p.Value[:2] }, "len(Value) = 2"},
		{"a row index past the last row", func(p *Problem) { p.RowIndex[2] = 2 }, "RowIndex[2] = 2 (column 1) is out of range [0, 2)"},
		{"a negative row index", func(p *Problem) { p.RowIndex[0] = -1 }, "RowIndex[0] = -1"},
		{"a row twice in one column", func(p *Problem) { p.RowIndex[1] = 0 }, "RowIndex[1] = 0 repeats a row within column 0"},
		{"a NaN coefficient", func(p *Problem) { p.Value[1] = nan }, "Value[1] = NaN"},
		{"an infinite coefficient", func(p *Problem) { p.Value[0] = inf }, "Value[0] = +Inf"},
		{"ColLower of the wrong length", func(p *Problem) { p.ColLower = []float64{0} }, "len(ColLower) = 1, want NumCols = 2"},
		{"ColUpper of the wrong length", func(p *Problem) { p.ColUpper = []float64{1, 1, 1} }, "len(ColUpper) = 3"},
		{"RowLower of the wrong length", func(p *Problem) { p.RowLower = []float64{} }, "len(RowLower) = 0, want NumRows = 2"},
		{"RowUpper of the wrong length", func(p *Problem) { p.RowUpper = []float64{1} }, "len(RowUpper) = 1"},
		{"Objective of the wrong length", func(p *Problem) { p.Objective = []float64{1} }, "len(Objective) = 1"},
		{"a NaN column bound", func(p *Problem) { p.ColUpper[1] = nan }, "ColUpper[1] = NaN"},
		{"a NaN row bound", func(p *Problem) { p.RowLower[1] = nan }, "RowLower[1] = NaN"},
		{"a lower bound of +Inf", func(p *Problem) { p.ColLower[0] = inf }, "ColLower[0] = +Inf"},
		{"an upper bound of -Inf", func(p *Problem) { p.RowUpper[0] = -inf }, "RowUpper[0] = -Inf"},
		{"a column lower bound above its upper bound", func(p *Problem) { p.ColLower[1] = 2 }, "ColLower[1] = 2 is above ColUpper[1] = 1"},
		{"a row lower bound above its upper bound", func(p *Problem) { p.RowLower[0] = 5 }, "RowLower[0] = 5 is above RowUpper[0] = 4"},
		{"a negative ColUpper with the default ColLower of 0", func(p *Problem) { p.ColLower = nil; p.ColUpper[0] = -1 }, "ColUpper[0] = -1 is below the default ColLower of 0"},
		{"a NaN objective", func(p *Problem) { p.Objective[0] = nan }, "Objective[0] = NaN"},
		{"an infinite objective", func(p *Problem) { p.Objective[1] = -inf }, "Objective[1] = -Inf"},
	}
	if _, err := Solve(good(), Options{}); err != nil {
		t.Fatalf("the unbroken problem: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := good()
			tt.mutate(p)
			_, err := Solve(p, Options{})
			if !errors.Is(err, ErrInvalidProblem) {
				t.Fatalf("Solve error = %v, want ErrInvalidProblem", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Solve error = %q, want it to contain %q", err, tt.want)
			}
			m := NewModel()
			defer m.Close()
			if err := m.Load(p); !errors.Is(err, ErrInvalidProblem) {
				t.Errorf("Model.Load error = %v, want ErrInvalidProblem", err)
			}
		})
	}
}

func TestSolveRejectsNilProblem(t *testing.T) {
	if _, err := Solve(nil, Options{}); !errors.Is(err, ErrInvalidProblem) {
		t.Errorf("Solve(nil) error = %v, want ErrInvalidProblem", err)
	}
}

func TestSolveRejectsBadOptions(t *testing.T) {
	p := denseLP([][]float64{{1}}, Problem{RowUpper: []float64{1}})
	tests := []struct {
		name string
		opt  Options
		want string
	}{
		{"negative MaxSeconds", Options{MaxSeconds: -1}, "Options.MaxSeconds = -1"},
		{"NaN MaxSeconds", Options{MaxSeconds: math.NaN()}, "Options.MaxSeconds = NaN"},
		{"negative MaxIterations", Options{MaxIterations: -5}, "Options.MaxIterations = -5"},
		{"unknown Algorithm", Options{Algorithm: 7}, "Options.Algorithm = 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Solve(p, tt.opt)
			if !errors.Is(err, ErrInvalidProblem) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Solve error = %v, want ErrInvalidProblem containing %q", err, tt.want)
			}
		})
	}
}

func TestSetColBoundsValidates(t *testing.T) {
	m := NewModel()
	defer m.Close()
	if err := m.SetColBounds(nil, nil); err == nil {
		t.Error("SetColBounds before Load: no error")
	}
	if err := m.Load(denseLP([][]float64{{1, 1}}, Problem{RowUpper: []float64{1}})); err != nil {
		t.Fatal(err)
	}
	if err := m.SetColBounds([]float64{0}, nil); !errors.Is(err, ErrInvalidProblem) {
		t.Errorf("short lower bounds: %v, want ErrInvalidProblem", err)
	}
	if err := m.SetColBounds([]float64{0, 2}, []float64{1, 1}); !errors.Is(err, ErrInvalidProblem) {
		t.Errorf("lower above upper: %v, want ErrInvalidProblem", err)
	}
}
