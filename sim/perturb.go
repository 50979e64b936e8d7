package sim

import (
	"math/rand/v2"
	"slices"

	"github.com/huitian/huitian/sim/trace"
)

// A replica of a trace is the trace with a seeded PerturbShare of its jobs
// submitted 1 to PerturbMost seconds later. A replay of a loaded machine
// is chaotic: one start that differs moves every start after it, so one
// run of two policies tells chance from policy poorly (EASY with every
// limit a minute longer moved KTH-SP2's p95 wait on 80 processors between
// ×0.93 and ×1.14 of EASY's over 27 replicas). Compared over replicas, a
// policy's effect is the mean of its ratios, and chance their spread.
const (
	PerturbShare = 0.02
	PerturbMost  = 120 // seconds
)

// Perturb returns replica seed of jobs (sorted by submit, as trace
// readers return them): seed 0 is jobs itself; any other seed a copy in
// which each job, with probability PerturbShare, is submitted 1 to
// PerturbMost seconds later, drawn from a generator seeded with seed,
// sorted by submit again (ties in their order before). jobs is not
// modified.
func Perturb(jobs []trace.Job, seed uint64) []trace.Job {
	if seed == 0 {
		return jobs
	}
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	out := slices.Clone(jobs)
	for i := range out {
		if r.Float64() < PerturbShare {
			out[i].Submit += 1 + r.Int64N(PerturbMost)
		}
	}
	trace.SortBySubmit(out)
	return out
}
