package solver

import (
	"time"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/solver/estimate"
	"github.com/huitian/huitian/solver/preempt"
	"github.com/huitian/huitian/solver/tune"
)

// memory is what the huitian planner learns across cycles: the history of
// finished jobs, the controller's state, and the first reserved start of
// each waiting main job. The owner feeds it through Observe and Decided.
type memory struct {
	hist  *estimate.Window
	tuner tune.State
	// firstReserved: the reservation start a job got when it was first
	// the head (a decision's first reservation). The reservations behind
	// it (a deeper request, the large jobs') are not the head's promise:
	// the preemption threshold and the tuner's main wait count from the
	// head's.
	firstReserved map[string]time.Time
	// window: when the window ends of each running backfill job admitted
	// on its predicted runtime into claimed cards (Start.WindowEnd).
	window map[string]time.Time
	// yielding: when each running job told to yield must be gone (the
	// decision's time plus its notice), until it has: the owner carries
	// out a notice once given, so the next cycles plan with its cards
	// free then, as the cycle that told it did, and do not move the
	// reserved job's start back to the job's limit meanwhile.
	yielding map[string]time.Time
	// yieldedFor: the job each preempted job yielded its cards for, while
	// that job waits. A requeued or suspended job keeps its submit time,
	// and one submitted before the job it yielded for would otherwise be
	// ahead of it in the queue and take back the very cards it freed (seen
	// on synthetic GPU workloads: a 64-card gang waited two hours past its
	// reservation so).
	yieldedFor map[string]string
	// preempted: jobs preempted since they last started; their partial runs
	// do not teach the runtime history.
	preempted map[string]bool
	// marks counts the changes to who is in firstReserved, preempted and
	// yieldedFor (a key added or removed, a job yielded for another one):
	// a queued job's membership read at one count holds while it stays
	// (queuedMemo.tags), so that a deep queue's jobs are not looked up in
	// those maps every cycle.
	marks uint64

	lastNow                          time.Time
	lastIdle, lastBackfill, lastBusy int
}

func newMemory(cfg Config) memory {
	return memory{
		hist:          estimate.NewWindow(cfg.Estimate),
		tuner:         tune.NewState(cfg.Tune),
		firstReserved: map[string]time.Time{},
		window:        map[string]time.Time{},
		yielding:      map[string]time.Time{},
		yieldedFor:    map[string]string{},
		preempted:     map[string]bool{},
	}
}

// Observe records a job event.
func (h *Huitian) Observe(e model.Event) {
	m := &h.mem
	switch e.Kind {
	case model.EventStarted:
		delete(m.yielding, e.JobID)
		m.dropYieldedFor(e.JobID)
		for j, f := range m.yieldedFor {
			if f == e.JobID {
				m.dropYieldedFor(j)
			}
		}
		if first, ok := m.firstReserved[e.JobID]; ok {
			if e.Alloc == model.Regular {
				m.tuner.MainWait(h.cfg.Tune, e.Time.Sub(first))
			}
			delete(m.firstReserved, e.JobID)
			m.marks++
		}
	case model.EventPreempted:
		if !m.preempted[e.JobID] {
			m.preempted[e.JobID] = true
			m.marks++
		}
		delete(m.window, e.JobID)
		delete(m.yielding, e.JobID)
		m.tuner.Backfill(h.cfg.Tune, false, e.Time)
	case model.EventFinished:
		wasPreempted := m.preempted[e.JobID]
		if wasPreempted {
			delete(m.preempted, e.JobID)
			m.marks++
		}
		if _, ok := m.firstReserved[e.JobID]; ok {
			delete(m.firstReserved, e.JobID)
			m.marks++
		}
		delete(m.window, e.JobID)
		delete(m.yielding, e.JobID)
		m.dropYieldedFor(e.JobID)
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

// Decided records a decision after the owner acted on it: the head's
// first reserved start (the decision's first reservation), and the
// capacity used by backfill since the last cycle.
func (h *Huitian) Decided(s *model.Snapshot, d *model.Decision) {
	m := &h.mem
	if len(d.Reservations) > 0 {
		r := d.Reservations[0]
		if _, ok := m.firstReserved[r.JobID]; !ok {
			m.firstReserved[r.JobID] = r.Start
			m.marks++
		}
	}
	for _, st := range d.Starts {
		if !st.WindowEnd.IsZero() {
			m.window[st.JobID] = st.WindowEnd
		}
	}
	for _, p := range d.Preemptions {
		gone := s.Now.Add(p.Notice)
		if t, ok := m.yielding[p.JobID]; !ok || gone.Before(t) {
			m.yielding[p.JobID] = gone
		}
		if f, ok := m.yieldedFor[p.JobID]; p.ForJobID != "" && (!ok || f != p.ForJobID) {
			m.yieldedFor[p.JobID] = p.ForJobID
			m.marks++
		}
	}
	busy := 0
	for i := range s.Running {
		busy += s.Running[i].CardCount()
	}
	for i := range d.Starts {
		busy += d.Starts[i].CardCount()
	}
	if !m.lastNow.IsZero() && s.Now.After(m.lastNow) {
		dt := s.Now.Sub(m.lastNow).Seconds()
		m.tuner.Capacity(float64(m.lastBackfill)*dt, float64(m.lastIdle)*dt)
		m.tuner.Work(float64(m.lastBusy)*dt, lostTo(s, d))
	} else {
		m.tuner.Work(0, lostTo(s, d))
	}
	m.lastNow = s.Now
	m.lastIdle = d.Stats.IdleCards
	m.lastBackfill = d.Stats.BackfillCards
	m.lastBusy = busy
}

// dropYieldedFor forgets whom job yielded for, if anyone.
func (m *memory) dropYieldedFor(job string) {
	if _, ok := m.yieldedFor[job]; ok {
		delete(m.yieldedFor, job)
		m.marks++
	}
}

// lostTo returns the card-seconds the decision's preemptions will lose: a
// requeued job its run so far and until its notice runs out, a suspended
// one its checkpoint written and read back.
func lostTo(s *model.Snapshot, d *model.Decision) float64 {
	if len(d.Preemptions) == 0 {
		return 0
	}
	// The preempted jobs' places in s.Running (the last, were an id there
	// twice), found in one pass: a map of every running job's id was
	// 28,000 entries a plan at 65,536 cards, for a preemption or two.
	idx := make(map[string]int, len(d.Preemptions))
	for _, p := range d.Preemptions {
		idx[p.JobID] = -1
	}
	for i := range s.Running {
		if _, ok := idx[s.Running[i].Job.ID]; ok {
			idx[s.Running[i].Job.ID] = i
		}
	}
	lost := 0.0
	for _, p := range d.Preemptions {
		i := idx[p.JobID]
		if i < 0 {
			continue
		}
		lost += preempt.Lost(&s.Running[i], p.Action, s.Now.Add(p.Notice))
	}
	return lost
}

// PlannerStatus returns the controller's parameters and the backfill
// measures over its window (NaN where there is no data yet).
func (h *Huitian) PlannerStatus() model.PlannerStatus {
	p := h.mem.tuner.Params
	m := h.mem.tuner.Measures()
	return model.PlannerStatus{
		Tuner: &model.TunerParams{MaxBackfillRuntime: p.MaxBackfillRuntime, ProtectFraction: p.ProtectFraction, Epsilon: p.Epsilon, HoldPreemption: p.HoldPreemption},
		Measures: &model.BackfillMeasures{
			CompletionRate:  m.CompletionRate,
			Utilization:     m.Utilization,
			MainWaitDelta:   time.Duration(m.MainWaitDelta * float64(time.Second)),
			EstimatorExceed: m.EstimatorExceed,
			LostShare:       m.LostShare,
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
