package estimate

import (
	"math"
	"slices"
	"strconv"
	"strings"

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

// Own says whether the estimate rests on the user's own finished jobs
// (the first three levels) and the estimator trusts them.
func (b Basis) Own() bool {
	switch b.Level {
	case levelNames[0], levelNames[1], levelNames[2]:
		return !b.Unreliable
	}
	return false
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
	// maxCards is the most cards a finished job held (MaxCards).
	maxCards int
	// epoch counts the changes that can move an estimate to another ring:
	// a ring reaching MinSamples (a level that was passed over becomes the
	// one read) and a new error ring (a user+class that had no score has
	// one). Rings never shrink and are never removed, so nothing else can.
	epoch uint64
}

// NewWindow returns an empty history.
func NewWindow(cfg Config) *Window {
	return &Window{cfg: cfg.withDefaults(), keys: map[string]*ring{}, errs: map[string]*errRing{}}
}

type ring struct {
	vals   []float64
	next   int
	sorted []float64 // vals sorted, nil until read
	ver    uint64    // values added: any change to vals bumps it
	dist   Dist      // FromSorted(sorted, 1) while distOK
	distOK bool
}

// ratios is the distribution of the ring's values (FromSorted of them),
// kept until a value is added: the card counts of a user and class that
// fall back to its ring share it.
func (r *ring) ratios() Dist {
	if !r.distOK {
		r.dist, r.distOK = FromSorted(r.sortedVals(), 1), true
	}
	return r.dist
}

func (r *ring) add(v float64, capacity int) {
	r.ver++
	if len(r.vals) < capacity {
		r.vals = append(r.vals, v)
	} else {
		old := r.vals[r.next]
		r.vals[r.next] = v
		r.next = (r.next + 1) % capacity
		if i, ok := slices.BinarySearch(r.sorted, old); ok {
			r.sorted = slices.Delete(r.sorted, i, i+1)
		} else {
			r.sorted = nil // not read yet (or a value no search finds)
		}
	}
	// Once read, the sorted values are kept up to date value by value:
	// every completion adds one, and sorting the ring anew for each was
	// most of what an estimate cost.
	if r.sorted != nil {
		i, _ := slices.BinarySearch(r.sorted, v)
		r.sorted = slices.Insert(r.sorted, i, v)
	}
	r.distOK = false
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
	ver  uint64 // scores added: any change to hits bumps it
}

func (e *errRing) add(hit bool, capacity int) {
	e.ver++
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

// levelKey appends to b the key of level i (levelNames) of a user, class
// and card count: level 1's is also the user+class's error ring's.
func levelKey(b []byte, i int, user, class string, cards int) []byte {
	switch i {
	case 0, 1:
		b = append(append(append(append(b, "uc\x00"...), user...), 0), class...)
		if i == 0 {
			b = strconv.AppendInt(append(b, 0), int64(cards), 10)
		}
		return b
	case 2:
		return append(append(b, "u\x00"...), user...)
	case 3:
		return append(append(b, "c\x00"...), class...)
	}
	return append(b, "all"...)
}

// keyCards is the card count a level-0 key names (levelKey's "uc",
// user, class and cards, split by NUL), 0 for a key of another level.
func keyCards(k string) int {
	parts := strings.Split(k, "\x00")
	if len(parts) != 4 || parts[0] != "uc" {
		return 0
	}
	n, err := strconv.Atoi(parts[3])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// levels returns every level's key, most specific first.
func levels(user, class string, cards int) [5]string {
	var ks [5]string
	for i := range ks {
		ks[i] = string(levelKey(nil, i, user, class, cards))
	}
	return ks
}

var levelNames = [5]string{"user+class+cards", "user+class", "user", "class", "all"}

// LimitSpread returns how well time limits order runtimes across all jobs:
// the interquartile range of ln(runtime/limit) over the all-jobs window
// (ln(q75/q25) of the ratios), and false while that window holds fewer
// than MinSamples jobs. Limits that scale with runtimes give a narrow
// spread (the synthetic GPU workloads 0.6, NASA-iPSC 0.45); limits that
// do not — one default for every job, or users' guesses — a wide one
// (every limit 3 days on the synthetic workloads: 3.5; KTH-SP2's users
// 2.4, HPC2N's 2.8). A quarter or more of jobs that ran no time at all
// gives +Inf.
func (w *Window) LimitSpread() (float64, bool) {
	rg := w.keys["all"]
	if rg == nil || len(rg.vals) < w.cfg.MinSamples {
		return 0, false
	}
	d := rg.ratios()
	q25, q75 := d.Quantile(0.25), d.Quantile(0.75)
	if q25 <= 0 {
		return math.Inf(1), true
	}
	return math.Log(q75 / q25), true
}

// MaxCards returns the most cards any finished job added held (0 for
// none). The rings keep every card count they were given, so a restored
// history knows it too.
func (w *Window) MaxCards() int { return w.maxCards }

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
	w.maxCards = max(w.maxCards, r.Cards)
	if scored, hit := w.Score(r); scored {
		ek := string(levelKey(nil, 1, r.User, r.Class, 0))
		e := w.errs[ek]
		if e == nil {
			e = &errRing{}
			w.errs[ek] = e
			w.epoch++
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
		short := len(rg.vals) < w.cfg.MinSamples
		rg.add(ratio, capacity)
		if short && len(rg.vals) >= w.cfg.MinSamples {
			w.epoch++
		}
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
	if rg, i := w.lookupRing(user, class, cards); rg != nil {
		return rg.sortedVals(), i, true
	}
	return nil, -1, false
}

// lookupRing returns the ring an estimate reads, the first level with
// MinSamples values, and its level; nil when none has.
func (w *Window) lookupRing(user, class string, cards int) (*ring, int) {
	// Each level's key is built on the stack and only as far as needed:
	// every running job whose history moved asks again.
	var buf [128]byte
	for i := range len(levelNames) {
		if rg := w.keys[string(levelKey(buf[:0], i, user, class, cards))]; rg != nil && len(rg.vals) >= w.cfg.MinSamples {
			return rg, i
		}
	}
	return nil, -1
}

// Estimate returns the runtime distribution of a job that has not started,
// in seconds, capped at its time limit.
func (w *Window) Estimate(j *model.Job) (Dist, Basis) {
	r, b, _ := w.EstimateRatios(j.User, j.Class, j.Cards)
	return r.Of(j.TimeLimit.Seconds()), b
}

// Ratios is an estimate before it is scaled to a job's time limit: the
// distribution of runtime/limit the history gives the job's user, class
// and card count, or none (the estimate is the limit itself).
type Ratios struct {
	d     Dist // runtime/limit; unused when limit
	limit bool
}

// Of returns the runtime distribution, in seconds and capped at the limit,
// of a job with this time limit in seconds: what Estimate returns for it.
func (r *Ratios) Of(limit float64) Dist {
	if r.limit {
		return Point(limit)
	}
	// FromSorted(sorted, limit) scales each interpolated ratio by the
	// limit; r.d holds them scaled by 1, so this is the same product.
	d := r.d
	for i := range d.Q {
		d.Q[i] *= limit
	}
	return d.Cap(limit)
}

// Median is Of(limit).Quantile(0.5), bit for bit, without the
// distribution: the median is grid point Grid/2 (Grid is odd), scaled and
// capped as Of does. A deep queue's shortest-first order reads every
// queued job's median every cycle and little else.
func (r *Ratios) Median(limit float64) float64 {
	if r.limit {
		return limit
	}
	return min(r.d.Q[Grid/2]*limit, limit)
}

// Token says what one estimate read of a window, so that Current can tell
// cheaply whether the window would still answer the same: the ring it read
// (none when it fell back to the limit) and the user+class's error ring,
// each at its version, and the window's epoch (no ring that takes
// precedence has reached MinSamples since, no error ring was created). The
// zero Token is never current.
type Token struct {
	w     *Window
	rg    *ring
	er    *errRing
	rgVer uint64
	erVer uint64
	epoch uint64
}

// EstimateRatios returns the estimate of the jobs of a user, class and
// card count before it is scaled to a limit (Estimate of a job is
// EstimateRatios of its user, class and cards, Of its limit), its basis,
// and the Token that says while both hold.
func (w *Window) EstimateRatios(user, class string, cards int) (Ratios, Basis, Token) {
	t := Token{w: w, epoch: w.epoch}
	rg, lvl := w.lookupRing(user, class, cards)
	if rg == nil {
		return Ratios{limit: true}, Basis{Level: "limit"}, t
	}
	t.rg, t.rgVer = rg, rg.ver
	b := Basis{Level: levelNames[lvl], Samples: len(rg.vals)}
	var buf [128]byte
	if e := w.errs[string(levelKey(buf[:0], 1, user, class, 0))]; e != nil {
		t.er, t.erVer = e, e.ver
		rate, n := e.rate()
		b.Exceed = rate
		if n >= w.cfg.ErrWindow/2 && rate > w.cfg.MaxExceed {
			b.Unreliable = true
			b.Level = "limit"
			return Ratios{limit: true}, b, t
		}
	}
	return Ratios{d: rg.ratios()}, b, t
}

// Current says whether EstimateRatios would answer, for the user, class
// and card count the token's estimate was made for, exactly what it
// answered then.
func (w *Window) Current(t Token) bool {
	return t.w == w && t.epoch == w.epoch &&
		(t.rg == nil || t.rg.ver == t.rgVer) &&
		(t.er == nil || t.er.ver == t.erVer)
}

// Remaining returns the distribution of a running job's remaining time,
// given its total-runtime estimate, the elapsed seconds and its reported
// progress p (0 when unknown): the history conditioned on having run this
// long, blended with elapsed × (1−p)/p by weight p, and capped at what is
// left of the limit. A job the history cannot explain (it outlived every
// sample) ends uniformly within what is left of its limit. Taken to run
// to its limit, it made a reservation waiting for its cards certain of
// its start and a job lent before that start safe: on NASA-iPSC a 16-card
// job that had outlived its history ended 80 s after two 4-card jobs were
// lent into the 390 s left of its limit, and the 32-card head behind it
// started a minute after EASY's start, four jobs behind it too.
func Remaining(total Dist, limit, elapsed, progress float64) Dist {
	var r remaining
	r.init(&total, limit, elapsed, progress)
	var out Dist
	for k := range out.Q {
		out.Q[k] = r.at(k)
	}
	return out
}

// RemainingQuantile is Remaining(total, limit, elapsed, progress).Cap(c)
// .Quantile(p), bit for bit, from the two grid points around p alone: a
// cycle needs every running job's hold time but the whole distribution of
// only a few.
func RemainingQuantile(total *Dist, limit, elapsed, progress, c, p float64) float64 {
	var r remaining
	r.init(total, limit, elapsed, progress)
	if p <= 0 {
		return min(r.at(0), c)
	}
	if p >= 1 {
		return min(r.at(Grid-1), c)
	}
	h := p * (Grid - 1)
	i := int(h)
	return interpolate(min(r.at(i), c), min(r.at(i+1), c), h-float64(i))
}

// remaining computes Remaining's grid points one at a time.
type remaining struct {
	total                    *Dist
	f, left, elapsed         float64
	progress, byProgress     float64
	none, unexplained, blend bool
}

// init sets r up for a job (in place: a running job's every cycle).
func (r *remaining) init(total *Dist, limit, elapsed, progress float64) {
	*r = remaining{total: total, left: limit - elapsed, elapsed: elapsed, progress: progress}
	if r.left <= 0 {
		r.none = true
		return
	}
	// Beyond's condition: the history cannot explain a job that outlived it.
	r.f = total.CDF(elapsed)
	r.unexplained = r.f >= 1 || total.Q[Grid-1] <= elapsed
	if progress > 0 && progress <= 1 {
		r.blend = true
		r.byProgress = min(elapsed*(1-progress)/progress, r.left)
	}
}

// at is the k-th grid point: Beyond's (uniform over what is left of the
// limit when the history cannot explain the job), capped at what is left
// of the limit, blended with the progress's estimate as Mix does.
func (r *remaining) at(k int) float64 {
	if r.none {
		return 0
	}
	var v float64
	if r.unexplained {
		v = r.left * float64(k) / (Grid - 1)
	} else {
		v = r.total.beyondAt(r.f, r.elapsed, k)
	}
	v = min(v, r.left) // k/(Grid−1)·left may round above left
	if r.blend {
		v = mixAt(r.byProgress, v, r.progress)
	}
	return v
}
