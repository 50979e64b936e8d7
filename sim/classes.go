package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/huitian/huitian/model"
)

// NumClasses is the number of job-size classes.
const NumClasses = 4

// SizeClasses split jobs by the cards they ask for, relative to the
// cluster, so that a comparison shows who gains and who pays:
//
//  0. one card;
//  1. two up to max(one node's cards, ⌊usable/16⌋);
//  2. above that up to ⌊usable/4⌋;
//  3. above ⌊usable/4⌋: the jobs that own the cluster while they run.
//
// A class whose range is empty (class 2 on a small cluster of large nodes)
// holds no job.
type SizeClasses struct {
	// Max is the largest card count of classes 0, 1 and 2; class 3 has
	// every job above Max[2].
	Max [NumClasses - 1]int
}

// NewSizeClasses returns the classes of a cluster with usable cards whose
// largest node has nodeCards usable cards.
func NewSizeClasses(usable, nodeCards int) SizeClasses {
	small := model.LargeAbove(usable, nodeCards)
	return SizeClasses{Max: [NumClasses - 1]int{1, small, max(usable/4, small)}}
}

// ClassesOf returns the size classes of a sealed cluster's layout.
func ClassesOf(lay *model.Layout) SizeClasses {
	return NewSizeClasses(lay.UsableCards, lay.MaxNodeUsable)
}

// Of returns the class of a job of cards cards.
func (c SizeClasses) Of(cards int) int {
	for i, m := range c.Max {
		if cards <= m {
			return i
		}
	}
	return NumClasses - 1
}

// Range returns the card counts of class i; hi is 0 for the last class,
// which has no upper bound. An empty class has hi < lo.
func (c SizeClasses) Range(i int) (lo, hi int) {
	lo = 1
	if i > 0 {
		lo = c.Max[i-1] + 1
	}
	if i < NumClasses-1 {
		hi = c.Max[i]
	}
	return lo, hi
}

// Label names class i by its card counts: "1", "2–16", "17–64", ">64";
// "none" for an empty class.
func (c SizeClasses) Label(i int) string {
	lo, hi := c.Range(i)
	switch {
	case hi == 0:
		return fmt.Sprintf(">%d", lo-1)
	case hi < lo:
		return "none"
	case hi == lo:
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}

// ClassStats is what happened to one size class's jobs in a run. Waits
// and slowdowns are over the class's finished jobs; preemptions over all
// its jobs.
type ClassStats struct {
	Class    string `json:"class"`
	MinCards int    `json:"min_cards"`
	// MaxCards is 0 for the last class, which has no upper bound.
	MaxCards    int     `json:"max_cards"`
	Jobs        int     `json:"jobs"`
	MeanWait    float64 `json:"mean_wait_s"`
	P95Wait     float64 `json:"p95_wait_s"`
	MeanBSLD    float64 `json:"mean_bsld"`
	Preemptions int     `json:"preemptions"`
}

// classStats aggregates jobs by size class.
func classStats(jobs []JobResult, sc SizeClasses) []ClassStats {
	out := make([]ClassStats, NumClasses)
	waits := make([][]float64, NumClasses)
	for i := range out {
		lo, hi := sc.Range(i)
		out[i] = ClassStats{Class: sc.Label(i), MinCards: lo, MaxCards: hi}
	}
	for k := range jobs {
		r := &jobs[k]
		i := sc.Of(r.Cards)
		out[i].Preemptions += r.Preemptions
		if !r.Finished() {
			continue
		}
		out[i].Jobs++
		waits[i] = append(waits[i], float64(r.Wait()))
		out[i].MeanBSLD += r.BSLD()
	}
	for i := range out {
		if n := out[i].Jobs; n > 0 {
			out[i].MeanWait, out[i].P95Wait = meanP95(waits[i])
			out[i].MeanBSLD /= float64(n)
		}
	}
	return out
}

// meanP95 returns the mean and the 95th percentile of values, which it
// sorts; both 0 when there are none.
func meanP95(values []float64) (mean, p95 float64) {
	if len(values) == 0 {
		return 0, 0
	}
	for _, v := range values {
		mean += v
	}
	slices.Sort(values)
	return mean / float64(len(values)), quantile(values, 0.95)
}

// HeadDelay measures the promise a reservation makes: for every job that
// was ever the reserved head (the first reservation of a decision the
// simulator executed), its actual start minus the start its first such
// reservation promised. Negative when it started early (jobs ahead of it
// ended before their limits). In seconds, over the heads that started.
//
// Held counts the heads that waited, with their reserved cards free but
// for jobs huitian lent into windows (backfill beyond EASY, admitted on a
// predicted runtime onto cards a reservation claims), and HeldMean and
// HeldMax say how long, in seconds: a head can start before its promise
// and still later than EASY, which lends nothing so, would have started it.
// That is the risk lending takes (ε); the head delay cannot show it.
type HeadDelay struct {
	Jobs     int     `json:"jobs"`
	Mean     float64 `json:"mean_s"`
	P95      float64 `json:"p95_s"`
	Max      float64 `json:"max_s"`
	Held     int     `json:"held"`
	HeldMean float64 `json:"held_mean_s"`
	HeldMax  float64 `json:"held_max_s"`
}

// headDelay aggregates the jobs' head delays.
func headDelay(jobs []JobResult) HeadDelay {
	var d []float64
	var h HeadDelay
	for k := range jobs {
		if r := &jobs[k]; r.Headed && r.HeadStart >= 0 {
			d = append(d, float64(r.HeadStart-r.HeadPromise))
			if r.HeadHeld > 0 {
				h.Held++
				h.HeldMean += float64(r.HeadHeld)
				h.HeldMax = max(h.HeldMax, float64(r.HeadHeld))
			}
		}
	}
	if len(d) == 0 {
		return HeadDelay{}
	}
	if h.Held > 0 {
		h.HeldMean /= float64(h.Held)
	}
	h.Jobs = len(d)
	h.Mean, h.P95 = meanP95(d)
	h.Max = d[len(d)-1]
	return h
}

// SameJobs compares one size class on the same jobs in two runs: the jobs
// of the class that finished in both. Ref* are the reference run's
// figures on those jobs; a ratio is the run's over the reference's, 1 when
// both are 0 and nil when only the reference's is 0.
type SameJobs struct {
	Class         string   `json:"class"`
	Jobs          int      `json:"jobs"`
	MeanWait      float64  `json:"mean_wait_s"`
	P95Wait       float64  `json:"p95_wait_s"`
	MeanBSLD      float64  `json:"mean_bsld"`
	RefMeanWait   float64  `json:"ref_mean_wait_s"`
	RefP95Wait    float64  `json:"ref_p95_wait_s"`
	RefMeanBSLD   float64  `json:"ref_mean_bsld"`
	MeanWaitRatio *float64 `json:"mean_wait_ratio"`
	P95WaitRatio  *float64 `json:"p95_wait_ratio"`
	BSLDRatio     *float64 `json:"bsld_ratio"`
}

// ErrNotComparable is returned by CompareClasses for runs of different
// workloads or clusters.
var ErrNotComparable = errors.New("sim: runs not comparable")

// CompareClasses compares run with ref class by class on the same jobs.
// Both must be replays of the same jobs (same ids, in the same order) on
// clusters of the same size classes.
func CompareClasses(run, ref *Result) ([]SameJobs, error) {
	if len(run.Jobs) != len(ref.Jobs) {
		return nil, fmt.Errorf("%w: %d jobs against %d", ErrNotComparable, len(run.Jobs), len(ref.Jobs))
	}
	if run.Classes != ref.Classes {
		return nil, fmt.Errorf("%w: size classes %v against %v", ErrNotComparable, run.Classes.Max, ref.Classes.Max)
	}
	type acc struct {
		w, rw         []float64
		bsld, refBSLD float64
	}
	per := make([]acc, NumClasses)
	for k := range run.Jobs {
		a, b := &run.Jobs[k], &ref.Jobs[k]
		if a.ID != b.ID {
			return nil, fmt.Errorf("%w: job %d is %q in one run and %q in the other", ErrNotComparable, k, a.ID, b.ID)
		}
		if !a.Finished() || !b.Finished() {
			continue
		}
		c := &per[run.Classes.Of(a.Cards)]
		c.w = append(c.w, float64(a.Wait()))
		c.rw = append(c.rw, float64(b.Wait()))
		c.bsld += a.BSLD()
		c.refBSLD += b.BSLD()
	}
	out := make([]SameJobs, NumClasses)
	for i, c := range per {
		s := SameJobs{Class: run.Classes.Label(i), Jobs: len(c.w)}
		if s.Jobs > 0 {
			n := float64(s.Jobs)
			s.MeanWait, s.P95Wait = meanP95(c.w)
			s.RefMeanWait, s.RefP95Wait = meanP95(c.rw)
			s.MeanBSLD, s.RefMeanBSLD = c.bsld/n, c.refBSLD/n
			s.MeanWaitRatio = Ratio(s.MeanWait, s.RefMeanWait)
			s.P95WaitRatio = Ratio(s.P95Wait, s.RefP95Wait)
			s.BSLDRatio = Ratio(s.MeanBSLD, s.RefMeanBSLD)
		}
		out[i] = s
	}
	return out, nil
}

// Ratio is a / ref: 1 when both are 0, nil when only ref is (or either is
// not a number).
func Ratio(a, ref float64) *float64 {
	var r float64
	switch {
	case ref != 0:
		r = a / ref
	case a == 0:
		r = 1
	default:
		return nil
	}
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return nil
	}
	return &r
}

// Largest returns the largest size class that has a finished job in the
// comparison, or -1 when none has.
func Largest(cmp []SameJobs) int {
	for i := len(cmp) - 1; i >= 0; i-- {
		if cmp[i].Jobs > 0 {
			return i
		}
	}
	return -1
}
