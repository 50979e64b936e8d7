package estimate

import (
	"slices"
	"strconv"

	"gonum.org/v1/gonum/stat"

	"github.com/huitian/huitian/model"
)

// Record is a finished job as the history keeps it.
type Record struct {
	User, Class string
	Cards       int
	Limit       float64 // seconds
	Runtime     float64 // seconds, ≤ Limit
}

// Basis says how an estimate was made, for the user's view.
type Basis struct {
	Level      string  // "user+class+cards", "user+class", "user", "class", "all" or "limit"
	Samples    int     // finished jobs the estimate rests on
	Quantile   float64 // the quantile the planner reads (filled by the planner)
	Unreliable bool    // the estimator's error for this user/class is high, so the limit is used
	Exceed     float64 // share of recent jobs that outlived their predicted p90
}

func (b Basis) String() string {
	// Built by hand: a plan writes one per backfill start and pending job.
	buf := make([]byte, 0, 64)
	buf = append(buf, b.Level...)
	buf = append(buf, " ("...)
	buf = strconv.AppendInt(buf, int64(b.Samples), 10)
	buf = append(buf, " jobs)"...)
	if b.Unreliable {
		buf = append(buf, ", estimator unreliable: "...)
		buf = strconv.AppendFloat(buf, 100*b.Exceed, 'f', 0, 64)
		buf = append(buf, "% outlived their p90"...)
	}
	return string(buf)
}

// History is the planner's memory of finished jobs. The owner (simulator or
// service) adds jobs as they finish — never the future.
type History interface {
	Add(r Record)
	Estimate(j *model.Job) (Dist, Basis)
	Len() int
}

// Config tunes a Window.
type Config struct {
	Window     int     // recent jobs kept per key (default 128); the "all" key keeps 16×
	MinSamples int     // samples a level needs before it is used (default 8)
	ErrWindow  int     // recent predictions scored per user/class (default 32)
	MaxExceed  float64 // share of jobs outliving p90 above which the limit is used (default 0.3)
}

func (c Config) withDefaults() Config {
	if c.Window <= 0 {
		c.Window = 128
	}
	if c.MinSamples <= 0 {
		c.MinSamples = 8
	}
	if c.ErrWindow <= 0 {
		c.ErrWindow = 32
	}
	if c.MaxExceed <= 0 {
		c.MaxExceed = 0.3
	}
	return c
}

// Window is a History of recent actual/limit ratios per user, class and
// card count, with fallbacks: user+class+cards → user+class → user →
// class → everyone → the limit itself.
type Window struct {
	cfg  Config
	keys map[string]*ring
	errs map[string]*errRing // per user+class: did jobs outlive their predicted p90?
	n    int
}

// NewWindow returns an empty history.
func NewWindow(cfg Config) *Window {
	return &Window{cfg: cfg.withDefaults(), keys: map[string]*ring{}, errs: map[string]*errRing{}}
}

type ring struct {
	vals   []float64
	next   int
	sorted []float64 // nil when stale
}

func (r *ring) add(v float64, capacity int) {
	if len(r.vals) < capacity {
		r.vals = append(r.vals, v)
	} else {
		r.vals[r.next] = v
		r.next = (r.next + 1) % capacity
	}
	r.sorted = nil
}

func (r *ring) sortedVals() []float64 {
	if r.sorted == nil {
		r.sorted = slices.Clone(r.vals)
		slices.Sort(r.sorted)
	}
	return r.sorted
}

type errRing struct {
	hits []bool
	next int
}

func (e *errRing) add(hit bool, capacity int) {
	if len(e.hits) < capacity {
		e.hits = append(e.hits, hit)
	} else {
		e.hits[e.next] = hit
		e.next = (e.next + 1) % capacity
	}
}

func (e *errRing) rate() (float64, int) {
	if len(e.hits) == 0 {
		return 0, 0
	}
	k := 0
	for _, h := range e.hits {
		if h {
			k++
		}
	}
	return float64(k) / float64(len(e.hits)), len(e.hits)
}

func levels(user, class string, cards int) [5]string {
	return [5]string{
		"uc\x00" + user + "\x00" + class + "\x00" + strconv.Itoa(cards),
		"uc\x00" + user + "\x00" + class,
		"u\x00" + user,
		"c\x00" + class,
		"all",
	}
}

var levelNames = [5]string{"user+class+cards", "user+class", "user", "class", "all"}

// Len returns how many finished jobs were added.
func (w *Window) Len() int { return w.n }

// Add records a finished job. Before it learns from the job, it scores the
// prediction it would have made for it, so that the error is measured out
// of sample.
func (w *Window) Add(r Record) {
	if r.Limit <= 0 || r.Runtime < 0 {
		return
	}
	ratio := min(r.Runtime/r.Limit, 1)
	if scored, hit := w.Score(r); scored {
		ek := "uc\x00" + r.User + "\x00" + r.Class
		e := w.errs[ek]
		if e == nil {
			e = &errRing{}
			w.errs[ek] = e
		}
		e.add(hit, w.cfg.ErrWindow)
	}
	for i, k := range levels(r.User, r.Class, r.Cards) {
		rg := w.keys[k]
		if rg == nil {
			rg = &ring{}
			w.keys[k] = rg
		}
		capacity := w.cfg.Window
		if i == 4 {
			capacity *= 16
		}
		rg.add(ratio, capacity)
	}
	w.n++
}

// Score says whether the history, as it is, predicts a p90 for the job,
// and whether the job outlived it.
func (w *Window) Score(r Record) (scored, exceeded bool) {
	if r.Limit <= 0 {
		return false, false
	}
	sorted, _, ok := w.lookup(r.User, r.Class, r.Cards)
	if !ok {
		return false, false
	}
	p90 := stat.Quantile(0.9, stat.Empirical, sorted, nil)
	return true, min(r.Runtime/r.Limit, 1) > p90+1e-9
}

func (w *Window) lookup(user, class string, cards int) ([]float64, int, bool) {
	for i, k := range levels(user, class, cards) {
		if rg := w.keys[k]; rg != nil && len(rg.vals) >= w.cfg.MinSamples {
			return rg.sortedVals(), i, true
		}
	}
	return nil, -1, false
}

// Estimate returns the runtime distribution of a job that has not started,
// in seconds, capped at its time limit.
func (w *Window) Estimate(j *model.Job) (Dist, Basis) {
	limit := j.TimeLimit.Seconds()
	sorted, lvl, ok := w.lookup(j.User, j.Class, j.Cards)
	if !ok {
		return Point(limit), Basis{Level: "limit"}
	}
	b := Basis{Level: levelNames[lvl], Samples: len(sorted)}
	if e := w.errs["uc\x00"+j.User+"\x00"+j.Class]; e != nil {
		rate, n := e.rate()
		b.Exceed = rate
		if n >= w.cfg.ErrWindow/2 && rate > w.cfg.MaxExceed {
			b.Unreliable = true
			b.Level = "limit"
			return Point(limit), b
		}
	}
	return FromSorted(sorted, limit).Cap(limit), b
}

// Remaining returns the distribution of a running job's remaining time,
// given its total-runtime estimate, the elapsed seconds and its reported
// progress p (0 when unknown): the history conditioned on having run this
// long, blended with elapsed × (1−p)/p by weight p, and capped at what is
// left of the limit. A job the history cannot explain (it outlived every
// sample) is assumed to run to its limit.
func Remaining(total Dist, limit, elapsed, progress float64) Dist {
	left := limit - elapsed
	if left <= 0 {
		return Point(0)
	}
	cond, ok := total.Beyond(elapsed)
	if !ok {
		cond = Point(left)
	}
	cond = cond.Cap(left)
	if progress > 0 && progress <= 1 {
		byProgress := min(elapsed*(1-progress)/progress, left)
		cond = Mix(Point(byProgress), cond, progress)
	}
	return cond
}
