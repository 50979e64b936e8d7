package sim

// maxBuckets bounds a series: enough for a readable plot of any run.
const maxBuckets = 4096

// Series is a run's busy cards and queue length over time, as time-weighted
// means over buckets of equal width.
type Series struct {
	Start int64 // the first bucket's start, seconds from the epoch
	Width int64 // bucket width, seconds
	Cards int   // usable cards, to turn busy cards into utilization
	// Busy and Queue hold one mean per bucket: cards held, jobs queued.
	Busy  []float64
	Queue []float64
}

// Times returns each bucket's middle, seconds from the epoch.
func (s *Series) Times() []float64 {
	out := make([]float64, len(s.Busy))
	for i := range out {
		out[i] = float64(s.Start) + (float64(i)+0.5)*float64(s.Width)
	}
	return out
}

// seriesRec integrates step functions into buckets, doubling the bucket
// width (and merging pairs of buckets) whenever time runs past maxBuckets.
type seriesRec struct {
	start, width int64
	last         int64 // time of the last step
	busy, queue  float64
	ib, iq       []float64 // integrals per bucket
	end          int64     // the last step's time: the series ends there
}

func newSeriesRec(start int64) *seriesRec {
	return &seriesRec{start: start, width: 1, last: start}
}

// step records that from t on, busy cards are held and queue jobs wait.
func (s *seriesRec) step(t int64, busy, queue int) {
	s.add(s.last, t)
	s.last, s.end = t, t
	s.busy, s.queue = float64(busy), float64(queue)
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
		for int64(len(s.ib)) <= i {
			s.ib = append(s.ib, 0)
			s.iq = append(s.iq, 0)
		}
		d := float64(hi - a)
		s.ib[i] += s.busy * d
		s.iq[i] += s.queue * d
		a = hi
	}
}

func (s *seriesRec) double() {
	n := (len(s.ib) + 1) / 2
	for i := range n {
		b, q := s.ib[2*i], s.iq[2*i]
		if 2*i+1 < len(s.ib) {
			b += s.ib[2*i+1]
			q += s.iq[2*i+1]
		}
		s.ib[i], s.iq[i] = b, q
	}
	s.ib, s.iq = s.ib[:n], s.iq[:n]
	s.width *= 2
}

func (s *seriesRec) finish(cards int) *Series {
	out := &Series{Start: s.start, Width: s.width, Cards: cards}
	for i := range s.ib {
		// The last bucket may be cut short by the end of the run.
		w := float64(s.width)
		if lo := s.start + int64(i)*s.width; lo+s.width > s.end {
			w = float64(s.end - lo)
		}
		if w <= 0 {
			break
		}
		out.Busy = append(out.Busy, s.ib[i]/w)
		out.Queue = append(out.Queue, s.iq[i]/w)
	}
	return out
}
