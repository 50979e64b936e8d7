package sim

import (
	"encoding/json"
	"math"

	"github.com/huitian/huitian/model"
)

// maxBuckets bounds a series: enough for a readable plot of any run.
const maxBuckets = 4096

// StatusReporter is a planner that can say how its tuner stands
// (solver.Huitian). With Config.Series, the simulator asks it after every
// cycle and records the answer in Series.Tuner.
type StatusReporter interface {
	PlannerStatus() model.PlannerStatus
}

// Series is a run's busy cards and queue length over time, as time-weighted
// means over buckets of equal width.
type Series struct {
	Start int64 // the first bucket's start, seconds from the epoch
	Width int64 // bucket width, seconds
	Cards int   // usable cards, to turn busy cards into utilization
	// Busy and Queue hold one mean per bucket: cards held, jobs queued.
	Busy  []float64
	Queue []float64
	// Tuner is the planner's tuner over the same buckets; nil when the
	// planner reports none (the baselines).
	Tuner *TunerSeries
}

// TunerSeries is a planner's tuner over time, one time-weighted mean per
// bucket, sampled after every cycle. A bucket in which a value was never
// known (before the first cycle, or a window without backfill outcomes
// for the completion rate) holds NaN.
type TunerSeries struct {
	MaxBackfillRuntime []float64 // seconds
	ProtectFraction    []float64
	Epsilon            []float64
	// HoldPreemption is the share of the bucket's time in which the tuner
	// held preemption for the head (1 while held, 0 while not).
	HoldPreemption []float64
	// CompletionRate is the share of backfill jobs that ended without
	// preemption over the tuner's own window: what it steers by.
	CompletionRate []float64
	// LostShare is the card-seconds lost to preemption over busy
	// card-seconds, recent cycles: what the hold steers by.
	LostShare []float64
}

// Times returns each bucket's middle, seconds from the epoch.
func (s *Series) Times() []float64 {
	out := make([]float64, len(s.Busy))
	for i := range out {
		out[i] = float64(s.Start) + (float64(i)+0.5)*float64(s.Width)
	}
	return out
}

// The channels of a seriesRec.
const (
	chBusy = iota
	chQueue
	chRuntime
	chProtect
	chEpsilon
	chHold
	chCompletion
	chLost
	numChannels
)

// seriesRec integrates step functions into buckets, doubling the bucket
// width (and merging pairs of buckets) whenever time runs past maxBuckets.
// A channel whose value is NaN is not integrated: its mean is over the
// time it was known.
type seriesRec struct {
	start, width int64
	last         int64 // time of the last step
	cur          [numChannels]float64
	in           [numChannels][]float64 // integrals per bucket
	known        [numChannels][]float64 // seconds per bucket the value was known
	end          int64                  // the last step's time: the series ends there
	tuner        bool                   // some step had tuner values
}

func newSeriesRec(start int64) *seriesRec {
	s := &seriesRec{start: start, width: 1, last: start}
	for c := chRuntime; c < numChannels; c++ {
		s.cur[c] = math.NaN()
	}
	return s
}

// step records that from t on, busy cards are held and queue jobs wait.
func (s *seriesRec) step(t int64, busy, queue int) {
	s.add(s.last, t)
	s.last, s.end = t, t
	s.cur[chBusy], s.cur[chQueue] = float64(busy), float64(queue)
}

// status records the planner's tuner from t on.
func (s *seriesRec) status(t int64, st model.PlannerStatus) {
	s.add(s.last, t)
	s.last = max(s.last, t)
	if t := st.Tuner; t != nil {
		s.tuner = true
		s.cur[chRuntime] = t.MaxBackfillRuntime.Seconds()
		s.cur[chProtect] = t.ProtectFraction
		s.cur[chEpsilon] = t.Epsilon
		s.cur[chHold] = 0
		if t.HoldPreemption {
			s.cur[chHold] = 1
		}
	}
	s.cur[chCompletion], s.cur[chLost] = math.NaN(), math.NaN()
	if m := st.Measures; m != nil {
		s.cur[chCompletion], s.cur[chLost] = m.CompletionRate, m.LostShare
	}
}

// add integrates the current values over [a, b).
func (s *seriesRec) add(a, b int64) {
	if b <= a {
		return
	}
	for b > s.start+s.width*maxBuckets {
		s.double()
	}
	for a < b {
		i := (a - s.start) / s.width
		hi := min(b, s.start+(i+1)*s.width)
		for int64(len(s.in[chBusy])) <= i {
			for c := range s.in {
				s.in[c] = append(s.in[c], 0)
				s.known[c] = append(s.known[c], 0)
			}
		}
		d := float64(hi - a)
		for c, v := range s.cur {
			if !math.IsNaN(v) {
				s.in[c][i] += v * d
				s.known[c][i] += d
			}
		}
		a = hi
	}
}

func (s *seriesRec) double() {
	n := (len(s.in[chBusy]) + 1) / 2
	for c := range s.in {
		merge := func(v []float64) []float64 {
			for i := range n {
				x := v[2*i]
				if 2*i+1 < len(v) {
					x += v[2*i+1]
				}
				v[i] = x
			}
			return v[:n]
		}
		s.in[c], s.known[c] = merge(s.in[c]), merge(s.known[c])
	}
	s.width *= 2
}

func (s *seriesRec) finish(cards int) *Series {
	out := &Series{Start: s.start, Width: s.width, Cards: cards}
	var ts TunerSeries
	mean := func(c, i int) float64 {
		if s.known[c][i] == 0 {
			return math.NaN()
		}
		return s.in[c][i] / s.known[c][i]
	}
	for i := range s.in[chBusy] {
		// The last bucket may be cut short by the end of the run.
		w := float64(s.width)
		if lo := s.start + int64(i)*s.width; lo+s.width > s.end {
			w = float64(s.end - lo)
		}
		if w <= 0 {
			break
		}
		out.Busy = append(out.Busy, s.in[chBusy][i]/w)
		out.Queue = append(out.Queue, s.in[chQueue][i]/w)
		ts.MaxBackfillRuntime = append(ts.MaxBackfillRuntime, mean(chRuntime, i))
		ts.ProtectFraction = append(ts.ProtectFraction, mean(chProtect, i))
		ts.Epsilon = append(ts.Epsilon, mean(chEpsilon, i))
		ts.HoldPreemption = append(ts.HoldPreemption, mean(chHold, i))
		ts.CompletionRate = append(ts.CompletionRate, mean(chCompletion, i))
		ts.LostShare = append(ts.LostShare, mean(chLost, i))
	}
	if s.tuner {
		out.Tuner = &ts
	}
	return out
}

// tunerSeriesJSON is TunerSeries in JSON, which has no NaN: an unknown
// value is null.
type tunerSeriesJSON struct {
	MaxBackfillRuntime []*float64 `json:"max_backfill_runtime_s"`
	ProtectFraction    []*float64 `json:"protect_fraction"`
	Epsilon            []*float64 `json:"epsilon"`
	HoldPreemption     []*float64 `json:"hold_preemption"`
	CompletionRate     []*float64 `json:"completion_rate"`
	LostShare          []*float64 `json:"lost_share"`
}

// MarshalJSON writes the series with null for NaN (a value not known).
func (t TunerSeries) MarshalJSON() ([]byte, error) {
	to := func(v []float64) []*float64 {
		if v == nil {
			return nil
		}
		out := make([]*float64, len(v))
		for i := range v {
			if !math.IsNaN(v[i]) {
				out[i] = &v[i]
			}
		}
		return out
	}
	return json.Marshal(tunerSeriesJSON{
		MaxBackfillRuntime: to(t.MaxBackfillRuntime), ProtectFraction: to(t.ProtectFraction), Epsilon: to(t.Epsilon),
		HoldPreemption: to(t.HoldPreemption), CompletionRate: to(t.CompletionRate), LostShare: to(t.LostShare),
	})
}

// UnmarshalJSON reads what MarshalJSON writes, null as NaN.
func (t *TunerSeries) UnmarshalJSON(b []byte) error {
	var j tunerSeriesJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	from := func(v []*float64) []float64 {
		if v == nil {
			return nil
		}
		out := make([]float64, len(v))
		for i, p := range v {
			out[i] = math.NaN()
			if p != nil {
				out[i] = *p
			}
		}
		return out
	}
	*t = TunerSeries{
		MaxBackfillRuntime: from(j.MaxBackfillRuntime), ProtectFraction: from(j.ProtectFraction), Epsilon: from(j.Epsilon),
		HoldPreemption: from(j.HoldPreemption), CompletionRate: from(j.CompletionRate), LostShare: from(j.LostShare),
	}
	return nil
}
