package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/huitian/huitian/sim/trace"
)

// A replica of a trace is the trace with a seeded share of its jobs
// submitted up to some seconds later (Perturbation; by default
// PerturbShare of them, by 1 to PerturbMost seconds). A replay of a
// loaded machine is chaotic: one start that differs moves every start
// after it, so one run of two policies tells chance from policy poorly
// (EASY with every limit a minute longer moved KTH-SP2's p95 wait on 80
// processors between ×0.93 and ×1.14 of EASY's over 27 replicas).
// Compared over replicas, a policy's effect is the mean of its ratios,
// and chance their spread. Replicas that move few jobs by little share
// most of the trace's timing, and with it most of its chance: over 27 of
// them huitian-greedy on KTH-SP2 at 80 processors waited ×1.036 ± 0.012
// of EASY's p95, and ×1.011 ± 0.007 over 27 that move a fifth of the
// jobs by up to an hour (solver/README.md).
const (
	PerturbShare = 0.02
	PerturbMost  = 120 // seconds
)

// Perturbation is how far a replica departs from its trace: each job, with
// probability Share, is submitted 1 to Most seconds later.
type Perturbation struct {
	Share float64
	Most  int64 // seconds
}

// DefaultPerturbation moves PerturbShare of the jobs by 1 to PerturbMost
// seconds.
func DefaultPerturbation() Perturbation { return Perturbation{PerturbShare, PerturbMost} }

// Validate says what is wrong with a perturbation, naming the field.
func (p Perturbation) Validate() error {
	switch {
	case !(p.Share > 0 && p.Share <= 1):
		return fmt.Errorf("replica share %v: want a share of the jobs in (0, 1]", p.Share)
	case p.Most < 1:
		return fmt.Errorf("replica delay %d s: want at least 1 s", p.Most)
	}
	return nil
}

// Perturb returns replica seed of jobs (sorted by submit, as trace
// readers return them): seed 0 is jobs itself; any other seed a copy in
// which each job, with probability p.Share, is submitted 1 to p.Most
// seconds later, drawn from a generator seeded with seed, sorted by
// submit again (ties in their order before). jobs is not modified; p must
// be valid.
func Perturb(jobs []trace.Job, seed uint64, p Perturbation) []trace.Job {
	if seed == 0 {
		return jobs
	}
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	out := slices.Clone(jobs)
	for i := range out {
		if r.Float64() < p.Share {
			out[i].Submit += 1 + r.Int64N(p.Most)
		}
	}
	trace.SortBySubmit(out)
	return out
}
