// Package preempt holds the rules for taking cards back from backfill
// jobs: protection after start, the notice a job gets, when a job that
// cannot checkpoint may be requeued, which victims lose the least work, and
// the bounded priority compensation of a requeued job. Main (regular) jobs
// are never preempted.
package preempt

import (
	"cmp"
	"slices"
	"time"

	"github.com/huitian/huitian/model"
)

// Config holds the rules' parameters.
type Config struct {
	// Threshold: a job that cannot checkpoint is requeued only after the
	// reserved job has waited this long past its first reserved start
	// (default 30 min) and no other cards can serve it now.
	Threshold time.Duration
	// Margin is added to the checkpoint cost in the notice, and is the
	// notice of a requeue (default 1 min).
	Margin time.Duration
	// CompensationStep and CompensationCap bound the priority a requeued
	// job gains: step per requeue, at most cap (defaults 1 and 3).
	CompensationStep, CompensationCap int
	// Lookahead: a job is told to yield once the reservation that needs
	// its cards is within its notice plus this (default 10 min), with a
	// notice that runs out when the reservation starts.
	Lookahead time.Duration
	// MinGain: backfill jobs are preempted for a reservation only when
	// that starts it more than this much earlier than waiting (default
	// 10 min): a suspension costs the job two checkpoints and a requeue.
	MinGain time.Duration
}

// Defaults returns the documented defaults.
func Defaults() Config {
	return Config{Threshold: 30 * time.Minute, Margin: time.Minute, CompensationStep: 1, CompensationCap: 3, Lookahead: 10 * time.Minute, MinGain: 10 * time.Minute}
}

// Compensation is the bounded priority bonus of a job requeued n times.
func Compensation(c Config, requeues int) int {
	return min(max(requeues, 0)*c.CompensationStep, c.CompensationCap)
}

// Release says when and how a reservation may take a running job's cards.
type Release struct {
	OK     bool
	At     time.Time // the earliest time the cards are free if the job is told now (or at protection end)
	Action model.PreemptAction
	Notice time.Duration
	Lost   float64 // card-seconds of work lost (Lost)
}

// Lost is the card-seconds of work a preemption of r loses: a requeued job
// its whole run until it stops (at stop), a suspended one its checkpoint,
// written and read back when it resumes (as the simulator counts it).
func Lost(r *model.Running, action model.PreemptAction, stop time.Time) float64 {
	cards := float64(r.CardCount())
	if action == model.PreemptSuspend {
		return cards * 2 * r.Job.CheckpointCost.Seconds()
	}
	return cards * stop.Sub(r.Start).Seconds()
}

// Notice is the notice job j is told to yield with: its checkpoint cost
// and the margin when it can checkpoint (it is suspended), the margin
// alone when it cannot (it is requeued).
func Notice(c Config, j *model.Job) time.Duration {
	if j.Checkpointable {
		return j.CheckpointCost + c.Margin
	}
	return c.Margin
}

// ReleaseOf applies the rules to one running job at now. thresholdPassed
// says whether the reserved job that wants the cards has waited past the
// threshold (only then may a job that cannot checkpoint be requeued).
func ReleaseOf(c Config, r *model.Running, now time.Time, thresholdPassed bool) Release {
	if r.Kind != model.Backfill {
		return Release{} // main jobs are never preempted
	}
	from := now
	if r.ProtectedUntil.After(now) {
		from = r.ProtectedUntil
	}
	if r.Job.Checkpointable {
		n := Notice(c, &r.Job)
		return Release{OK: true, At: from.Add(n), Action: model.PreemptSuspend, Notice: n, Lost: Lost(r, model.PreemptSuspend, from)}
	}
	if !thresholdPassed {
		return Release{}
	}
	stop := from.Add(c.Margin)
	return Release{OK: true, At: stop, Action: model.PreemptRequeue, Notice: c.Margin, Lost: Lost(r, model.PreemptRequeue, stop)}
}

// Candidate is a running job a reservation might take cards from.
type Candidate struct {
	Index   int // into the snapshot's running jobs
	Release Release
	Start   time.Time
	ID      string
}

// Order sorts victims so that those losing the least work come first, then
// the youngest (latest start), then by id.
func Order(vs []Candidate) {
	slices.SortFunc(vs, func(a, b Candidate) int {
		if c := cmp.Compare(a.Release.Lost, b.Release.Lost); c != 0 {
			return c
		}
		if c := b.Start.Compare(a.Start); c != 0 {
			return c
		}
		return model.CompareIDs(a.ID, b.ID)
	})
}
