package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/shape"
	"github.com/huitian/huitian/solver"
)

// Now is the benchmark snapshots' "now".
var Now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// Cluster returns cards/8 nodes of 8 cards, one NVLink island each, under
// leaf switches of 32 nodes, sealed.
func Cluster(cards int) *model.Cluster {
	c := shape.Uniform{
		ID: fmt.Sprintf("bench-%d", cards), Nodes: (cards + 7) / 8, CardsPerNode: 8, NodesPerSwitch: 32,
		NodeName: shape.Names{Prefix: "node", Digits: 5}, SwitchName: shape.Names{Prefix: "sw", Digits: 3},
		Card: model.Card{Model: "H100", MemBytes: 80 << 30, Island: "nvl0"},
	}.Cluster()
	if err := c.Seal(); err != nil {
		panic(err) // a generated cluster is valid by construction
	}
	return c
}

var sizes = []struct {
	cards int
	p     float64
}{{1, 0.70}, {2, 0.10}, {4, 0.09}, {8, 0.08}, {16, 0.015}, {32, 0.01}, {64, 0.005}}

func drawJob(r *rand.Rand, id string, users int) model.Job {
	u := r.Float64()
	cards := 1
	for _, s := range sizes {
		if u < s.p {
			cards = s.cards
			break
		}
		u -= s.p
	}
	j := model.Job{
		ID: id, User: fmt.Sprintf("u%03d", int(math.Floor(math.Pow(r.Float64(), 2)*float64(users)))),
		Class: []string{"training", "evaluation", "preprocessing", "search"}[r.IntN(4)], Cards: cards,
	}
	switch {
	case cards > 8:
		j.Topology, j.CardsPerNode, j.Comm, j.Class = model.TopologySameSwitch, 8, model.CommHigh, "training"
	case cards > 1:
		j.Topology, j.Comm = model.TopologySameNode, model.CommHigh
	}
	// Lognormal runtimes (median ≈ 200 s, heavy tail), limits ≈ 2× runtime
	// rounded up to 10 minutes.
	rt := math.Min(math.Exp(r.NormFloat64()*2.6+5.3), 30*86400)
	j.TimeLimit = time.Duration(math.Ceil(rt*(1+r.Float64())/600)*600) * time.Second
	if r.IntN(3) == 0 {
		j.Checkpointable, j.CheckpointCost = true, time.Duration(30+r.IntN(270))*time.Second
	}
	switch r.IntN(14) {
	case 0:
		j.Backfill = model.BackfillOptOut
	case 1:
		j.Backfill, j.MaxPreemptProb = model.BackfillLowRiskOnly, 0.1
	}
	return j
}

// Snapshot returns a snapshot of a cluster of the given cards with a
// quarter of them busy (whole-node and partial jobs, some backfill) and
// queued jobs waiting, the first of them a gang that wants a whole switch
// (256 cards, 8 per node), which no switch has free: it gets a
// reservation and the rest of the queue is backfill. The same arguments
// give the same snapshot.
func Snapshot(cards, queued int, seed uint64) *model.Snapshot {
	r := rand.New(rand.NewPCG(seed, 0x68756974))
	c := Cluster(cards)
	s := &model.Snapshot{Now: Now, Cluster: c}
	lay := c.Layout()
	// 1. Running jobs on a quarter of the cards, on nodes in random order
	// so that every switch has some busy nodes.
	busy := 0
	for _, node := range r.Perm(len(lay.Nodes)) {
		if busy >= cards/4 {
			break
		}
		nd := lay.Nodes[node]
		want := 1 + r.IntN(nd.Len)
		used := 0
		for used < want && busy < cards/4 {
			j := drawJob(r, fmt.Sprintf("run-%d", len(s.Running)), 64)
			if room := min(want-used, cards/4-busy); j.Cards > room {
				j.Cards, j.CardsPerNode, j.Topology = room, 0, model.TopologySameNode
			}
			start := Now.Add(-time.Duration(r.Float64()*j.TimeLimit.Seconds()) * time.Second)
			j.Submit = start.Add(-time.Minute)
			rj := model.Running{Job: j, Start: start}
			if r.IntN(5) == 0 {
				rj.Kind = model.Backfill
			}
			for k := range j.Cards {
				rj.Cards = append(rj.Cards, model.CardRef{Node: nd.Name, Index: used + k})
			}
			s.Running = append(s.Running, rj)
			used += j.Cards
			busy += j.Cards
		}
	}
	// 2. The queue, submitted over the last day.
	for i := range queued {
		j := drawJob(r, fmt.Sprintf("q-%d", i), 64)
		if i == 0 {
			j.Cards, j.CardsPerNode, j.Topology, j.Comm = min(256, cards), 8, model.TopologySameSwitch, model.CommHigh
			j.TimeLimit = 12 * time.Hour
		}
		j.Submit = Now.Add(-time.Duration(queued-i) * 86400 * time.Second / time.Duration(queued))
		s.Queued = append(s.Queued, j)
	}
	return s
}

// History returns finished-job events that teach a planner the workload's
// runtime ratios (what a service would have learned).
func History(n int, seed uint64) []model.Event {
	r := rand.New(rand.NewPCG(seed, 0x68697374))
	evs := make([]model.Event, 0, n)
	for i := range n {
		j := drawJob(r, fmt.Sprintf("h-%d", i), 64)
		start := Now.Add(-time.Duration(n-i) * time.Minute)
		run := time.Duration(r.Float64() * float64(j.TimeLimit))
		evs = append(evs, model.Event{Kind: model.EventFinished, JobID: j.ID, Job: &j, Start: start,
			Time: start.Add(run), Exit: model.ExitCompleted})
	}
	return evs
}

// Policies are the policies the sweep measures, EASY first (the ratios'
// reference).
var Policies = []model.Policy{model.PolicyEASY, model.PolicyConservative, model.PolicyHuitianGreedy, model.PolicyHuitian}

// NewPlanner returns a planner for a policy, taught the history when it
// learns.
func NewPlanner(p model.Policy, hist []model.Event) (solver.Planner, error) {
	pl, err := solver.New(p, 0)
	if err != nil {
		return nil, err
	}
	if l, ok := pl.(solver.Learner); ok {
		for _, e := range hist {
			l.Observe(e)
		}
	}
	return pl, nil
}

// Result is one policy's measurements at one size.
type Result struct {
	Policy      string  `json:"policy"`
	Cards       int     `json:"cards"`
	Queued      int     `json:"queued"`
	Running     int     `json:"running"`
	P50ms       float64 `json:"p50_ms"`
	P99ms       float64 `json:"p99_ms"`
	RatioToEASY float64 `json:"ratio_to_easy"`
	Candidates  int     `json:"candidates"`
	LPRows      int     `json:"lp_rows"`
	LPCols      int     `json:"lp_cols"`
	Gap         float64 `json:"gap"`
	Fallbacks   int     `json:"fallbacks"`
	Runs        int     `json:"runs"`
	Starts      int     `json:"starts"`
	Backfills   int     `json:"backfill_starts"`
}

// Measure plans the snapshot runs times under the budget and reports
// latency percentiles; clock is the caller's (only cmd and tests own one).
func Measure(ctx context.Context, pl solver.Planner, s *model.Snapshot, runs int, budget time.Duration, clock func() time.Time) (Result, error) {
	var lat []float64
	var res Result
	for range runs {
		cctx, cancel := context.WithDeadline(ctx, clock().Add(budget))
		t0 := clock()
		d, err := pl.Plan(cctx, s)
		el := clock().Sub(t0)
		cancel()
		if err != nil {
			return res, err
		}
		lat = append(lat, float64(el)/float64(time.Millisecond))
		if d.Stats.Fallback {
			res.Fallbacks++
		}
		res.Candidates, res.LPRows, res.LPCols, res.Gap = d.Stats.Candidates, d.Stats.LPRows, d.Stats.LPCols, d.Stats.Gap
		res.Starts = len(d.Starts)
		res.Backfills = 0
		for _, st := range d.Starts {
			if st.Kind == model.Backfill {
				res.Backfills++
			}
		}
	}
	slices.Sort(lat)
	res.P50ms = lat[len(lat)/2]
	res.P99ms = lat[min(len(lat)-1, int(math.Ceil(0.99*float64(len(lat))))-1)]
	res.Runs = runs
	res.Cards, res.Queued, res.Running = len(s.Cluster.Layout().Cards), len(s.Queued), len(s.Running)
	return res, nil
}
