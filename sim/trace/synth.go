package trace

import (
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/huitian/huitian/model"
)

// SynthOptions size a synthetic GPU workload. Zero Load, Cards and Users take the
// defaults; Jobs must be set.
type SynthOptions struct {
	Jobs  int     // number of jobs, 1 … 100,000,000
	Seed  uint64  // the same seed gives the same jobs
	Load  float64 // offered load relative to Cards, [0.001, 100]; 0 means 0.9
	Cards int     // cluster size the load is relative to; 0 means 1024
	Users int     // user population; 0 means 256
}

const (
	defaultSynthLoad  = 0.9
	defaultSynthCards = 1024
	defaultSynthUsers = 256
	maxSynthJobs      = 100_000_000
	minSynthLoad      = 0.001
)

func (o SynthOptions) withDefaults() SynthOptions {
	if o.Load == 0 {
		o.Load = defaultSynthLoad
	}
	if o.Cards == 0 {
		o.Cards = defaultSynthCards
	}
	if o.Users == 0 {
		o.Users = defaultSynthUsers
	}
	return o
}

func (o SynthOptions) validate() error {
	switch {
	case o.Jobs < 1 || o.Jobs > maxSynthJobs:
		return fmt.Errorf("trace: synth: jobs %d: want 1 … %d", o.Jobs, maxSynthJobs)
	case !(o.Load >= minSynthLoad && o.Load <= 100):
		return fmt.Errorf("trace: synth: load %v: want in [0.001, 100]", o.Load)
	case o.Cards < 1 || o.Cards > maxCards:
		return fmt.Errorf("trace: synth: cards %d: want 1 … %d", o.Cards, maxCards)
	case o.Users < 1 || o.Users > 1_000_000:
		return fmt.Errorf("trace: synth: users %d: want 1 … 1000000", o.Users)
	}
	return nil
}

// The synthetic workload's distributions. Sources: the per-trace summaries in
// AcmeTrace data/cluster_summary.csv (Hu et al., NSDI'24: rows Seren, Kalos, Philly,
// Helios, PAI) and HeliosArtifact helios_cluster_summary.csv (Hu et al., SC'21), and
// the SWF logs' user estimates. Where no summary gives a number the value is a stated
// assumption.
var (
	// synthCards is the GPU count of a job and its probability: 70% one card, 27% 2–8,
	// 3% gangs of 16–64. Mean 2.78 GPUs, median 1: every summary has median 1
	// (med_gpu_num), and the mean lies between Philly's 1.928 and Helios's 3.716
	// (avg_gpu_num; Seren 5.68 and Kalos 26.77 are LLM clusters with larger gangs).
	synthCards = [...]struct {
		cards int
		p     float64
	}{{1, 0.70}, {2, 0.10}, {4, 0.09}, {8, 0.08}, {16, 0.015}, {32, 0.01}, {64, 0.005}}

	// synthClass is the class mix by size (assumption: the summaries give none; Acme's
	// job types are pretrain/SFT/eval/debug, Helios's single-GPU jobs are mostly
	// debugging and evaluation). Gangs of 16+ cards are all training.
	synthClassSmall = [...]classP{{"training", 0.40}, {"evaluation", 0.30}, {"preprocessing", 0.10}, {"search", 0.20}}
	synthClassMulti = [...]classP{{"training", 0.85}, {"evaluation", 0.10}, {"search", 0.05}}

	// synthCheckpoint is the probability that a job of a class can checkpoint
	// (assumption): training and search resume from checkpoints, evaluation restarts.
	synthCheckpoint = map[string]float64{"training": 0.5, "search": 0.3, "preprocessing": 0.1, "evaluation": 0}
)

type classP struct {
	class string
	p     float64
}

const (
	// Runtime is lognormal with the median and mean of Helios's GPU jobs (all four
	// clusters): med_run_time_gpu 206 s, avg_run_time_gpu 6651.681 s, so
	// μ = ln 206 and σ = √(2 ln(6651.681/206)) = 2.636. It is rounded to whole seconds,
	// at least 1 s and at most Helios's max_run_time_gpu (4,320,009 s, 50 days).
	// Philly (874 s / 18,006 s) and Seren (122 s / 1,414 s) bracket it.
	synthRuntimeMedian = 206.0
	synthRuntimeMean   = 6651.681
	synthRuntimeMax    = 4_320_000

	// synthOverrun is the share of jobs that reach their limit and are killed there:
	// their Runtime equals their Limit. KTH-SP2 has 475 of 28,489 jobs (1.7%) running
	// past the requested time; Helios and Acme report TIMEOUT as "very rare".
	synthOverrun = 0.02

	// synthAccuracyMin: a job's runtime/limit before rounding is uniform in
	// [synthAccuracyMin, 1]; the limit is then rounded up to a round request
	// (LimitBuckets), as users do, and short jobs get at least a minute. Together they
	// give mean(runtime/limit) ≈ 0.48 (measured: 100k jobs, seed 1), as the SWF
	// logs' field 9 does (KTH-SP2 0.48, HPC2N 0.46), spread from ~0.01 (jobs of seconds
	// under a one-minute request) to 1 (Tsafrir et al. 2005: estimates are inaccurate
	// and modal).
	synthAccuracyMin = 0.45

	// Checkpoint cost is log-uniform in [30 s, 300 s] (assumption: saving optimizer
	// state of a single- to multi-node job).
	synthCkptMin, synthCkptMax = 30.0, 300.0

	// Backfill preference (assumption: most users accept backfill; the design's opt-out
	// and low-risk choices are each represented): 85% allow, 7% opt out, 8% low risk
	// only, with MaxPreemptProb uniform in [0.05, 0.2].
	synthOptOut, synthLowRisk  = 0.07, 0.08
	synthRiskMin, synthRiskMax = 0.05, 0.2

	// Users are Zipf-distributed over the population with exponent 1.2 (assumption: a
	// few heavy users submit most jobs, as in every trace; KTH-SP2 has 214 users, the
	// default population is 256).
	synthZipfS = 1.2

	// The seeds' second words, so that attributes and arrivals are independent streams.
	synthStreamAttrs    = 0x9e3779b97f4a7c15
	synthStreamArrivals = 0xd1b54a32d192ed03
)

// synthSigma is the lognormal σ matching synthRuntimeMedian and synthRuntimeMean.
var synthSigma = math.Sqrt(2 * math.Log(synthRuntimeMean/synthRuntimeMedian))

// synthJob is a job's attributes before it has an id and a submit time.
type synthJob struct {
	runtime, limit int64
	spec           model.Job
}

// synthGen draws jobs' attributes from one stream.
type synthGen struct {
	r     *rand.Rand
	zipf  *rand.Zipf
	users []string
	cards int // cluster size: larger jobs are capped to it
}

func newSynthGen(o SynthOptions, users []string) *synthGen {
	r := rand.New(rand.NewPCG(o.Seed, synthStreamAttrs))
	return &synthGen{r: r, zipf: rand.NewZipf(r, synthZipfS, 1, uint64(o.Users-1)), users: users, cards: o.Cards}
}

func (g *synthGen) next() synthJob {
	r := g.r
	var j synthJob

	// 1. Size, capped to the cluster (to its largest power of two).
	u := r.Float64()
	cards := synthCards[len(synthCards)-1].cards
	for _, c := range synthCards {
		if u < c.p {
			cards = c.cards
			break
		}
		u -= c.p
	}
	for cards > g.cards {
		cards /= 2
	}
	s := &j.spec
	s.Cards = cards

	// 2. Placement: one node up to 8 cards, 8 per node under one switch beyond.
	switch {
	case cards == 1:
		s.Topology = model.TopologyAny
	case cards <= DefaultCardsPerNode:
		s.CardsPerNode, s.Topology = cards, model.TopologySameNode
	default:
		s.CardsPerNode, s.Topology = DefaultCardsPerNode, model.TopologySameSwitch
	}

	// 3. Class, communication, checkpointing.
	switch {
	case cards == 1:
		s.Class = pickClass(r, synthClassSmall[:])
	case cards <= DefaultCardsPerNode:
		s.Class = pickClass(r, synthClassMulti[:])
	default:
		s.Class = "training"
	}
	switch {
	case cards == 1:
		s.Comm = model.CommNone
	case s.Class == "training":
		s.Comm = model.CommHigh
	default:
		s.Comm = model.CommLow
	}
	if r.Float64() < synthCheckpoint[s.Class] {
		s.Checkpointable = true
		c := synthCkptMin * math.Pow(synthCkptMax/synthCkptMin, r.Float64())
		s.CheckpointCost = time.Duration(math.Round(c)) * time.Second
	}

	// 4. Runtime and the user's limit.
	rt := math.Exp(math.Log(synthRuntimeMedian) + synthSigma*r.NormFloat64())
	j.runtime = int64(math.Round(min(max(rt, 1), synthRuntimeMax)))
	acc := synthAccuracyMin + (1-synthAccuracyMin)*r.Float64()
	j.limit = bucketUp(int64(math.Ceil(float64(j.runtime) / acc)))
	if r.Float64() < synthOverrun {
		j.runtime = j.limit
	}

	// 5. Backfill preference and user.
	switch u := r.Float64(); {
	case u < synthOptOut:
		s.Backfill = model.BackfillOptOut
	case u < synthOptOut+synthLowRisk:
		s.Backfill = model.BackfillLowRiskOnly
		s.MaxPreemptProb = synthRiskMin + (synthRiskMax-synthRiskMin)*r.Float64()
	default:
		s.Backfill = model.BackfillAllow
	}
	s.User = g.users[g.zipf.Uint64()]
	return j
}

func pickClass(r *rand.Rand, cs []classP) string {
	u := r.Float64()
	for _, c := range cs {
		if u < c.p {
			return c.class
		}
		u -= c.p
	}
	return cs[len(cs)-1].class
}

// synthPlan is what the first pass learns: the arrival time scale.
type synthPlan struct {
	o     SynthOptions
	users []string
	scale float64 // seconds per unit of the summed exponential gaps
	work  float64 // Σ cards × runtime
	span  float64 // the arrival window, seconds
}

// planSynth makes the first pass. Arrivals are a Poisson process conditioned on Jobs
// arrivals in a window whose length makes the offered load exactly Load: draw Jobs+1
// exponential gaps, then scale them so that they sum to the window
// Σ cards × runtime / (Load × Cards). Scaled unit-exponential gaps are the spacings of
// uniform order statistics, which is what a Poisson process with a given count is.
func planSynth(o SynthOptions) (*synthPlan, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	p := &synthPlan{o: o, users: make([]string, o.Users)}
	for i := range p.users {
		p.users[i] = "u" + strconv.Itoa(i+1)
	}
	g := newSynthGen(o, p.users)
	arr := rand.New(rand.NewPCG(o.Seed, synthStreamArrivals))
	var gaps float64
	for range o.Jobs {
		j := g.next()
		p.work += float64(j.spec.Cards) * float64(j.runtime)
		gaps += arr.ExpFloat64()
	}
	gaps += arr.ExpFloat64() // the gap after the last arrival closes the window
	p.span = p.work / (o.Load * float64(o.Cards))
	p.scale = p.span / gaps
	return p, nil
}

// each makes the second pass, calling yield with each job until it returns false.
func (p *synthPlan) each(id func(i int) string, yield func(Job) bool) {
	g := newSynthGen(p.o, p.users)
	arr := rand.New(rand.NewPCG(p.o.Seed, synthStreamArrivals))
	var t float64
	for i := range p.o.Jobs {
		sj := g.next()
		t += arr.ExpFloat64()
		j := Job{ID: id(i), Submit: int64(math.Round(t * p.scale)), Runtime: sj.runtime, Limit: sj.limit, Spec: sj.spec}
		j.Spec.ID = j.ID
		if !yield(j) {
			return
		}
	}
}

// SynthSeq is the synthetic workload of Synth as a sequence, for runs too large to
// hold: it makes a first pass to set the arrival rate, then yields the jobs in submit
// order without keeping them. Each iteration yields the same jobs.
func SynthSeq(o SynthOptions) (iter.Seq[Job], error) {
	p, err := planSynth(o)
	if err != nil {
		return nil, err
	}
	return func(yield func(Job) bool) {
		p.each(func(i int) string { return "j" + strconv.Itoa(i+1) }, yield)
	}, nil
}

// Synth generates a synthetic GPU workload shaped after the Helios, Philly and Acme
// summaries (the distributions are documented on their constants): mostly single-card
// jobs, heavy-tailed lognormal runtimes, overestimated user limits, checkpointable
// jobs, a Zipf user population, four job classes and every backfill preference. Jobs
// arrive as a Poisson process whose rate makes the offered load Σ cards × runtime /
// (Cards × span) equal to Load. IDs are "j1" … "jN" in submit order. The same options
// give the same trace: all randomness comes from PCG sources seeded with Seed.
func Synth(o SynthOptions) (*Trace, error) {
	p, err := planSynth(o)
	if err != nil {
		return nil, err
	}
	o = p.o
	// All ids live in one string, so that a million jobs cost one allocation for them.
	var buf []byte
	ends := make([]int32, 0, o.Jobs)
	for i := range o.Jobs {
		buf = append(buf, 'j')
		buf = strconv.AppendInt(buf, int64(i+1), 10)
		ends = append(ends, int32(len(buf)))
	}
	ids := string(buf)
	id := func(i int) string {
		start := int32(0)
		if i > 0 {
			start = ends[i-1]
		}
		return ids[start:ends[i]]
	}
	t := newTrace()
	t.Jobs = make([]Job, 0, o.Jobs)
	p.each(id, func(j Job) bool {
		t.Jobs = append(t.Jobs, j)
		return true
	})
	t.Records = len(t.Jobs)
	t.MaxCards = o.Cards
	t.MaxNodes = (o.Cards + DefaultCardsPerNode - 1) / DefaultCardsPerNode
	t.notef("synthetic workload %s: %.0f card-seconds over a %.0f s arrival window", o, p.work, p.span)
	return t, nil
}
