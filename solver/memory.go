package solver

import (
	"time"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/solver/estimate"
	"github.com/huitian/huitian/solver/tune"
)

// memory is what the huitian planner learns across cycles: the history of
// finished jobs, the controller's state, and the first reserved start of
// each waiting main job. The owner feeds it through Observe and Decided.
type memory struct {
	hist  *estimate.Window
	tuner tune.State
	// firstReserved: the reservation start a job got when first reserved.
	firstReserved map[string]time.Time
	// window: when the window ends of each running backfill job admitted
	// on its predicted runtime into claimed cards (Start.WindowEnd).
	window map[string]time.Time
	// preempted: jobs preempted since they last started; their partial runs
	// do not teach the runtime history.
	preempted map[string]bool

	lastNow                time.Time
	lastIdle, lastBackfill int
}

func newMemory(cfg Config) memory {
	return memory{
		hist:          estimate.NewWindow(cfg.Estimate),
		tuner:         tune.NewState(cfg.Tune),
		firstReserved: map[string]time.Time{},
		window:        map[string]time.Time{},
		preempted:     map[string]bool{},
	}
}

// Observe records a job event.
func (h *Huitian) Observe(e model.Event) {
	m := &h.mem
	switch e.Kind {
	case model.EventStarted:
		if first, ok := m.firstReserved[e.JobID]; ok {
			if e.Alloc == model.Regular {
				m.tuner.MainWait(h.cfg.Tune, e.Time.Sub(first))
			}
			delete(m.firstReserved, e.JobID)
		}
	case model.EventPreempted:
		m.preempted[e.JobID] = true
		delete(m.window, e.JobID)
		m.tuner.Backfill(h.cfg.Tune, false, e.Time)
	case model.EventFinished:
		wasPreempted := m.preempted[e.JobID]
		delete(m.preempted, e.JobID)
		delete(m.firstReserved, e.JobID)
		delete(m.window, e.JobID)
		if e.Alloc == model.Backfill && !wasPreempted {
			m.tuner.Backfill(h.cfg.Tune, true, e.Time)
		}
		if e.Job == nil || wasPreempted || e.Start.IsZero() || e.Exit == model.ExitFailed {
			return
		}
		rec := estimate.Record{
			User: e.Job.User, Class: e.Job.Class, Cards: e.Job.Cards,
			Limit: e.Job.TimeLimit.Seconds(), Runtime: e.Time.Sub(e.Start).Seconds(),
		}
		if scored, exceeded := m.hist.Score(rec); scored {
			m.tuner.Estimator(h.cfg.Tune, exceeded)
		}
		m.hist.Add(rec)
	}
}

// Decided records a decision after the owner acted on it: reservations'
// first starts, and the capacity used by backfill since the last cycle.
func (h *Huitian) Decided(s *model.Snapshot, d *model.Decision) {
	m := &h.mem
	for _, r := range d.Reservations {
		if _, ok := m.firstReserved[r.JobID]; !ok {
			m.firstReserved[r.JobID] = r.Start
		}
	}
	for _, st := range d.Starts {
		if !st.WindowEnd.IsZero() {
			m.window[st.JobID] = st.WindowEnd
		}
	}
	if !m.lastNow.IsZero() && s.Now.After(m.lastNow) {
		dt := s.Now.Sub(m.lastNow).Seconds()
		m.tuner.Capacity(float64(m.lastBackfill)*dt, float64(m.lastIdle)*dt)
	}
	m.lastNow = s.Now
	m.lastIdle = d.Stats.IdleCards
	m.lastBackfill = d.Stats.BackfillCards
}

// PlannerStatus returns the controller's parameters and the backfill
// measures over its window (NaN where there is no data yet).
func (h *Huitian) PlannerStatus() model.PlannerStatus {
	p := h.mem.tuner.Params
	m := h.mem.tuner.Measures()
	return model.PlannerStatus{
		Tuner: &model.TunerParams{MaxBackfillRuntime: p.MaxBackfillRuntime, ProtectFraction: p.ProtectFraction, Epsilon: p.Epsilon},
		Measures: &model.BackfillMeasures{
			CompletionRate:  m.CompletionRate,
			Utilization:     m.Utilization,
			MainWaitDelta:   time.Duration(m.MainWaitDelta * float64(time.Second)),
			EstimatorExceed: m.EstimatorExceed,
			BackfillJobs:    m.BackfillJobs,
			MainJobs:        m.MainJobs,
		},
	}
}

// TunerLog returns the controller's recent adjustments, oldest first.
func (h *Huitian) TunerLog() []tune.Change { return append([]tune.Change(nil), h.mem.tuner.Log...) }

// Estimate says how the planner estimates a job's runtime now.
func (h *Huitian) Estimate(j *model.Job) model.RuntimeEstimate {
	_, b := h.mem.hist.Estimate(j)
	return model.RuntimeEstimate{Source: b.Level, Samples: b.Samples, Quantile: h.cfg.Quantile, Unreliable: b.Unreliable}
}
