package clp

import (
	"testing"
)

// BenchmarkSolve solves a placement-shaped LP of 2,000 rows (1,200 job
// rows, 600 node and 200 domain capacity rows) and 5,000 columns, about
// the size of one planning cycle's backfill relaxation, in a fresh model
// per solve.
func BenchmarkSolve(b *testing.B) {
	p := placementLP(42, 1200, 600, 200, 5000)
	for _, alg := range []Algorithm{DualSimplex, PrimalSimplex} {
		b.Run(alg.String(), func(b *testing.B) {
			// Assert a real answer before timing anything.
			s, err := Solve(p, Options{Algorithm: alg})
			if err != nil || s.Status != Optimal {
				b.Fatalf("Solve: %v, %v", s, err)
			}
			b.ReportMetric(float64(s.Iterations), "iterations")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Solve(p, Options{Algorithm: alg}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
