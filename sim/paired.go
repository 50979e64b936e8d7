package sim

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/huitian/huitian/model"
)

// Paired drives a run with Lead while Shadow plans every same snapshot
// alongside without being acted on: a comparison of two planners'
// decisions in identical states. Whole runs are chaotic — one different
// start changes every state after it, and average slowdowns of two runs
// can differ by tens of percent for that alone — so the paired counts show
// what a planner does differently where a comparison of two runs cannot.
//
// Both planners see every job event. A Shadow with memory is told Lead's
// decisions (the ones the cluster acted on), so its memory — reservations
// kept from the last cycle, the tuner's measures — follows the run and
// only the placement of the current cycle differs.
type Paired struct {
	Lead, Shadow Planner
	// Runtime, when set, gives a job's actual runtime in seconds, for
	// Side.Relief (evaluation only: neither planner sees it). Unset, the
	// relief uses the time limit.
	Runtime func(jobID string) (float64, bool)
	// Log, when set, gets every cycle whose started jobs differ
	// (PairedStats.DifferJobs): the jobs only one planner starts, the
	// first reservation of each, and Lead's preemptions (logCycle).
	Log   io.Writer
	Stats PairedStats
}

// PairedStats counts what the two planners decided, cycle by cycle.
type PairedStats struct {
	Cycles int `json:"cycles"`
	// Differ counts the cycles whose starts (job, kind and cards) differ;
	// DifferJobs those whose sets of started jobs differ.
	Differ     int  `json:"differ"`
	DifferJobs int  `json:"differ_jobs"`
	Lead       Side `json:"lead"`
	Shadow     Side `json:"shadow"`
}

// Side sums one planner's starts over the cycles.
type Side struct {
	Starts int `json:"starts"`
	Cards  int `json:"cards"`
	// Relief sums 1 / max(runtime, 10 s) over the started jobs: the
	// bounded slowdown that starting them now saves per second they would
	// otherwise wait. The runtime is the actual one when Paired.Runtime
	// knows it, else the time limit.
	Relief float64 `json:"relief"`
	// Risk sums the preemption probabilities of the starts.
	Risk float64 `json:"risk"`
}

// Plan plans with both and returns Lead's decision.
func (p *Paired) Plan(ctx context.Context, s *model.Snapshot) (*model.Decision, error) {
	dl, err := p.Lead.Plan(ctx, s)
	if err != nil {
		return nil, err
	}
	ds, err := p.Shadow.Plan(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("shadow planner: %w", err)
	}
	runtime := make(map[string]float64, len(s.Queued))
	for i := range s.Queued {
		j := &s.Queued[i]
		runtime[j.ID] = j.TimeLimit.Seconds()
		if p.Runtime != nil {
			if r, ok := p.Runtime(j.ID); ok {
				runtime[j.ID] = r
			}
		}
	}
	p.Stats.Cycles++
	kl, jl := p.Stats.Lead.add(dl, runtime)
	ks, js := p.Stats.Shadow.add(ds, runtime)
	if !slices.Equal(kl, ks) {
		p.Stats.Differ++
	}
	if !slices.Equal(jl, js) {
		p.Stats.DifferJobs++
		if p.Log != nil {
			if err := p.logCycle(s, dl, ds, jl, js); err != nil {
				return nil, fmt.Errorf("paired log: %w", err)
			}
		}
	}
	return dl, nil
}

// logCycle writes a cycle whose started jobs differ, as
//
//	cycle 3491 at 2000-01-24T12:34:56Z: 52 queued, 8 running
//	  lead only: 1401 backfill on 8 cards
//	  shadow only: 1369 backfill on 15 cards
//	  first reservation: lead 1365 in 59m42s, shadow 1365 in 2h29m48s
//	  lead preempts: 1401 requeue
//
// with the started jobs of each (jl, js) sorted.
func (p *Paired) logCycle(s *model.Snapshot, dl, ds *model.Decision, jl, js []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "cycle %d at %s: %d queued, %d running\n", p.Stats.Cycles, s.Now.UTC().Format(time.RFC3339), len(s.Queued), len(s.Running))
	only := func(role string, d *model.Decision, other []string) {
		for _, st := range d.Starts {
			if _, found := slices.BinarySearch(other, st.JobID); !found {
				fmt.Fprintf(&b, "  %s only: %s %v on %d cards\n", role, st.JobID, st.Kind, len(st.Cards))
			}
		}
	}
	only("lead", dl, js)
	only("shadow", ds, jl)
	first := func(d *model.Decision) string {
		if len(d.Reservations) == 0 {
			return "none"
		}
		r := d.Reservations[0]
		return r.JobID + " in " + r.Start.Sub(s.Now).String()
	}
	fmt.Fprintf(&b, "  first reservation: lead %s, shadow %s\n", first(dl), first(ds))
	for _, pr := range dl.Preemptions {
		fmt.Fprintf(&b, "  lead preempts: %s %v\n", pr.JobID, pr.Action)
	}
	_, err := io.WriteString(p.Log, b.String())
	return err
}

// add counts a decision's starts and returns their keys, sorted: with
// cards and kind, and the job ids alone.
func (sd *Side) add(d *model.Decision, runtime map[string]float64) (keys, jobs []string) {
	for _, st := range d.Starts {
		sd.Starts++
		sd.Cards += len(st.Cards)
		sd.Relief += 1 / max(runtime[st.JobID], 10)
		sd.Risk += st.PreemptProb
		var b strings.Builder
		fmt.Fprintf(&b, "%s %v", st.JobID, st.Kind)
		for _, c := range st.Cards {
			fmt.Fprintf(&b, " %s/%d", c.Node, c.Index)
		}
		keys = append(keys, b.String())
		jobs = append(jobs, st.JobID)
	}
	slices.Sort(keys)
	slices.Sort(jobs)
	return keys, jobs
}

// Observe tells both planners a job event.
func (p *Paired) Observe(e model.Event) {
	if l, ok := p.Lead.(Learner); ok {
		l.Observe(e)
	}
	if l, ok := p.Shadow.(Learner); ok {
		l.Observe(e)
	}
}

// Decided tells both planners the decision the cluster acted on: Lead's.
func (p *Paired) Decided(s *model.Snapshot, d *model.Decision) {
	if l, ok := p.Lead.(Learner); ok {
		l.Decided(s, d)
	}
	if l, ok := p.Shadow.(Learner); ok {
		l.Decided(s, d)
	}
}
