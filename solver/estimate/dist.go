package estimate

import "slices"

// Grid is the number of points of a distribution's quantile function.
const Grid = 21

// Dist is a distribution of a duration in seconds, as its quantile function
// at Grid evenly spaced probabilities 0, 0.05, …, 1, linear in between. It
// is plain data, cheap to copy.
type Dist struct {
	Q [Grid]float64
}

// Point is the distribution that is always v.
func Point(v float64) Dist {
	var d Dist
	for i := range d.Q {
		d.Q[i] = v
	}
	return d
}

// FromSorted builds a distribution from sorted samples, scaled by scale,
// interpolating between order statistics (Hyndman and Fan's type 7, the
// default of R and NumPy).
func FromSorted(sorted []float64, scale float64) Dist {
	var d Dist
	n := len(sorted)
	for i := range d.Q {
		h := float64(i) / (Grid - 1) * float64(n-1)
		lo := int(h)
		hi := min(lo+1, n-1)
		d.Q[i] = (sorted[lo] + (h-float64(lo))*(sorted[hi]-sorted[lo])) * scale
	}
	return d
}

// Quantile returns the value at probability p in [0,1].
func (d *Dist) Quantile(p float64) float64 {
	if p <= 0 {
		return d.Q[0]
	}
	if p >= 1 {
		return d.Q[Grid-1]
	}
	h := p * (Grid - 1)
	i := int(h)
	return interpolate(d.Q[i], d.Q[i+1], h-float64(i))
}

// interpolate is the quantile function between two grid points, a share
// t of the way from lo to hi.
func interpolate(lo, hi, t float64) float64 { return lo + t*(hi-lo) }

// CDF returns P(X ≤ x).
func (d *Dist) CDF(x float64) float64 {
	if x < d.Q[0] {
		return 0
	}
	if x >= d.Q[Grid-1] {
		return 1
	}
	// The last grid point at or below x.
	return cdfBetween(&d.Q, sortSearch(&d.Q, x), x)
}

// cdfBetween is the CDF at x (q[0] ≤ x < q[Grid-1]) from i, the last grid
// point at or below it.
func cdfBetween(q *[Grid]float64, i int, x float64) float64 {
	if i >= Grid-1 {
		return 1
	}
	// Flat stretches (atoms) count in full once x reaches them.
	lo, hi := q[i], q[i+1]
	f := 1.0
	if hi > lo {
		f = (x - lo) / (hi - lo)
	}
	return (float64(i) + f) / (Grid - 1)
}

// sortSearch returns the largest i with q[i] ≤ x (q sorted, q[0] ≤ x):
// slices.BinarySearchFunc's search for the first q[i] > x, written out
// (a hot path: every CDF, so every running job's remaining time, every
// cycle).
func sortSearch(q *[Grid]float64, x float64) int {
	lo, hi := 0, Grid
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if q[m] <= x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - 1
}

// Survival returns P(X > x).
func (d *Dist) Survival(x float64) float64 { return 1 - d.CDF(x) }

// Mean returns the expectation.
func (d *Dist) Mean() float64 {
	s := 0.0
	for i := 0; i < Grid-1; i++ {
		s += (d.Q[i] + d.Q[i+1]) / 2
	}
	return s / (Grid - 1)
}

// Cap returns the distribution of min(X, c).
func (d Dist) Cap(c float64) Dist {
	for i := range d.Q {
		d.Q[i] = min(d.Q[i], c)
	}
	return d
}

// Floor returns the distribution of max(X, f).
func (d Dist) Floor(f float64) Dist {
	for i := range d.Q {
		d.Q[i] = max(d.Q[i], f)
	}
	return d
}

// Shift returns the distribution of X + s.
func (d Dist) Shift(s float64) Dist {
	for i := range d.Q {
		d.Q[i] += s
	}
	return d
}

// Beyond returns the distribution of X − e given X > e: what remains of a
// duration already e long. When no mass lies beyond e, the remainder is
// unknown; it returns ok false.
func (d *Dist) Beyond(e float64) (Dist, bool) {
	f := d.CDF(e)
	if f >= 1 || d.Q[Grid-1] <= e {
		return Dist{}, false
	}
	var out Dist
	for i := range out.Q {
		out.Q[i] = d.beyondAt(f, e, i)
	}
	return out, true
}

// beyondAt is Beyond's i-th grid point, f being d.CDF(e).
func (d *Dist) beyondAt(f, e float64, i int) float64 {
	p := f + (1-f)*float64(i)/(Grid-1)
	return max(d.Quantile(p)-e, 0)
}

// Mix returns w·a + (1−w)·b as a quantile average: a blend of two
// estimates of one quantity, not a mixture of populations.
func Mix(a, b Dist, w float64) Dist {
	var out Dist
	for i := range out.Q {
		out.Q[i] = mixAt(a.Q[i], b.Q[i], w)
	}
	return out
}

// mixAt is Mix at one grid point.
func mixAt(a, b, w float64) float64 { return w*a + (1-w)*b }

// MaxOf returns the distribution of the maximum of independent variables:
// the time until all of several cards are free. Its CDF is the product of
// theirs, evaluated on the union of their grid points.
func MaxOf(ds []Dist) Dist {
	switch len(ds) {
	case 0:
		return Point(0)
	case 1:
		return ds[0]
	}
	// At most maxPoints points: both lists live on the stack (a
	// reservation's start asks for one maximum, a cycle for many).
	var xbuf, cbuf [maxPoints]float64
	xs := maxPointsOf(ds, &xbuf)
	// The product of the CDFs at every point, each CDF walked along the
	// sorted points instead of searched at each (a reservation held by a
	// hundred jobs asked 25,600 searches): the same values, multiplied in
	// the same order.
	cdf := cbuf[:len(xs)]
	for k := range cdf {
		cdf[k] = 1
	}
	for i := range ds {
		q := &ds[i].Q
		at := 0 // the last grid point at or below x, once x reaches q[0]
		for k, x := range xs {
			if x < q[0] {
				cdf[k] = 0 // the product so far is finite and ≥ 0
				continue
			}
			if x >= q[Grid-1] {
				continue // a factor of 1
			}
			for at+1 < Grid && q[at+1] <= x {
				at++
			}
			cdf[k] *= cdfBetween(q, at, x)
		}
	}
	return fromCDF(xs, cdf)
}

// maxPoints bounds the points MaxOf evaluates its CDF at.
const maxPoints = 256

// maxPointsOf returns, in buf, the sorted points where MaxOf evaluates the
// maximum's CDF: the maximum lives between the largest minimum and the
// largest maximum, so every grid point there, or, with many inputs,
// maxPoints evenly spaced points (the error is below one grid step).
func maxPointsOf(ds []Dist, buf *[maxPoints]float64) []float64 {
	lo, hi := ds[0].Q[0], ds[0].Q[Grid-1]
	for i := range ds {
		lo = max(lo, ds[i].Q[0])
		hi = max(hi, ds[i].Q[Grid-1])
	}
	if len(ds)*Grid > maxPoints {
		xs := buf[:]
		for k := range xs {
			xs[k] = lo + (hi-lo)*float64(k)/(maxPoints-1)
		}
		return xs
	}
	xs := buf[:0]
	for i := range ds {
		for _, q := range ds[i].Q {
			if q >= lo {
				xs = append(xs, q)
			}
		}
	}
	slices.Sort(xs)
	return slices.Compact(xs)
}

// fromCDF inverts a CDF given at sorted points xs: the quantile at p is
// the first x whose CDF reaches p, interpolated within its step; at p = 0
// it is where the mass begins.
func fromCDF(xs, cdf []float64) Dist {
	var out Dist
	for i := range out.Q {
		p := float64(i) / (Grid - 1)
		k := 0
		if i == 0 {
			for k < len(cdf) && cdf[k] <= 0 {
				k++
			}
			out.Q[0] = xs[min(k, len(xs)-1)]
			continue
		}
		k, _ = slices.BinarySearch(cdf, p)
		switch {
		case k >= len(xs):
			out.Q[i] = xs[len(xs)-1]
		case k == 0 || cdf[k] == cdf[k-1]:
			out.Q[i] = xs[k]
		default:
			f := (p - cdf[k-1]) / (cdf[k] - cdf[k-1])
			out.Q[i] = xs[k-1] + f*(xs[k]-xs[k-1])
		}
	}
	for i := 1; i < Grid; i++ { // keep it monotone against rounding
		out.Q[i] = max(out.Q[i], out.Q[i-1])
	}
	return out
}

// ProbExceeds returns P(R > S) for independent R and S: the probability
// that a job of runtime R is still running when an event at time S comes.
func ProbExceeds(r, s *Dist) float64 {
	// Integrate P(R > s) over S's quantiles (midpoint rule per step).
	p := 0.0
	for i := 0; i < Grid-1; i++ {
		m := (s.Q[i] + s.Q[i+1]) / 2
		p += r.Survival(m)
	}
	return p / (Grid - 1)
}

// ExpectedMin returns E[min(R, S)] for independent R and S.
func ExpectedMin(r, s *Dist) float64 {
	e := 0.0
	for i := 0; i < Grid-1; i++ {
		for j := 0; j < Grid-1; j++ {
			e += min((r.Q[i]+r.Q[i+1])/2, (s.Q[j]+s.Q[j+1])/2)
		}
	}
	return e / float64((Grid-1)*(Grid-1))
}
