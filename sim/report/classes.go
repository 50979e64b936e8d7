package report

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/huitian/huitian/sim"
	"github.com/huitian/huitian/solver/tune"
)

// classTable writes the waits per size class, and the ratios to the
// reference run on the same jobs.
func classTable(b *bytes.Buffer, runs []Run) {
	b.WriteString(`
## By job size

Classes by the cards a job asks for, relative to the cluster: one card; up
to one node or 1/16 of the cluster, whichever is more; up to 1/4 of the
cluster; above 1/4. Waits and slowdowns are over each run's finished jobs;
"×ref" is this run's figure over the reference run's on the same jobs (the
class's jobs that finished in both, "same jobs"), so a ratio above 1 means
these very jobs waited longer than under the reference.

`)
	classesTable(runs).markdown(b)
}

// headTable writes the head delay and the lost work of every run.
func headTable(b *bytes.Buffer, runs []Run) {
	b.WriteString(`
## Head delay and lost work

Head delay: for every job that was the reserved head of a decision, its
start minus the start its first reservation promised (negative: earlier,
as jobs ahead of it ended before their limits). Held by lent: the heads
that waited with their reserved cards free but for jobs lent into windows
(backfill beyond EASY), which EASY would have started then, and the
longest such wait: a head can keep its promise and still start later than
EASY would. Lost work is the card time preemptions wasted, over the busy
card time.

`)
	headsTable(runs).markdown(b)
}

// cardTime formats card-seconds as card-hours.
func cardTime(cs float64) string { return fmt.Sprintf("%.1f card-h", cs/3600) }

// classFigure draws the mean (or p95) wait of each size class, a bar per
// run, in the unit Duration would use for the longest bar.
func classFigure(runs []Run, p95 bool) (figure, error) {
	what := "Mean wait"
	if p95 {
		what = "95th percentile of wait"
	}
	wait := func(k sim.ClassStats) float64 {
		if p95 {
			return k.P95Wait
		}
		return k.MeanWait
	}
	var used []int
	var longest float64
	for c := range sim.NumClasses {
		has := false
		for _, r := range runs {
			if cl := r.Result.Summary.Classes; c < len(cl) && cl[c].Jobs > 0 {
				has = true
				longest = max(longest, wait(cl[c]))
			}
		}
		if has {
			used = append(used, c)
		}
	}
	u := unitFor(longest)
	p := newPlot(what+" by job size (cards)", "size class (cards)", strings.ToLower(what[:1])+what[1:]+" ("+u.name+")")
	if len(used) == 0 {
		return single(p, figureW, figureH), nil
	}
	var labels []string
	w := vg.Points(min(24, 160/float64(max(len(runs), 1))))
	for i, r := range runs {
		vals := make(plotter.Values, len(used))
		for k, c := range used {
			if cl := r.Result.Summary.Classes; c < len(cl) {
				vals[k] = wait(cl[c]) / u.seconds
			}
			if i == 0 {
				labels = append(labels, r.Result.Summary.Classes[c].Class)
			}
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return figure{}, err
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(float64(i)-float64(len(runs)-1)/2) * w
		p.Add(bars)
		p.Legend.Add(r.Label, bars)
	}
	p.NominalX(labels...)
	p.Y.Min = 0
	p.Y.Max *= 1.05 // room above the longest bar
	return single(p, figureW, figureH), nil
}

func hasTuner(runs []Run) bool {
	for _, r := range runs {
		if s := r.Result.Series; s != nil && s.Tuner != nil {
			return true
		}
	}
	return false
}

// tunerFigure draws the tuner's parameters, its window's completion rate
// and the lost share over the time window, one panel each, a line per run
// with a tuner.
func tunerFigure(runs []Run, win window) (figure, error) {
	var longest float64
	for _, r := range runs {
		if s := r.Result.Series; s != nil && s.Tuner != nil {
			for _, v := range s.Tuner.MaxBackfillRuntime {
				if !math.IsNaN(v) {
					longest = max(longest, v)
				}
			}
		}
	}
	panels := tunerPanels(unitFor(longest))
	grid := make([][]*plot.Plot, len(panels))
	var leg plot.Legend
	for k, pn := range panels {
		p := newPlot(pn.title, "", pn.y)
		u := timeAxis(p, runs, win)
		for i, r := range runs {
			s := r.Result.Series
			if s == nil || s.Tuner == nil {
				continue
			}
			pts := knownLine(s, win, u, pn.get(s.Tuner), pn.scale)
			if len(pts) == 0 {
				continue
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return figure{}, err
			}
			style(l, i)
			p.Add(l)
			p.Legend.Add(r.Label, l)
		}
		if k == 0 {
			leg = p.Legend
		}
		if k < len(panels)-1 {
			p.X.Label.Text = "" // the panels share the bottom one's
		}
		if pn.unit {
			p.Y.Min, p.Y.Max = 0, 1
			p.Y.Tick.Marker = plot.TickerFunc(percentTicks)
		} else {
			p.Y.Min = 0
			p.Y.Max = max(p.Y.Max, pn.atLeast)
		}
		grid[k] = []*plot.Plot{p}
	}
	return figure{grid: grid, legend: leg, w: figureW, h: vg.Length(len(panels)) * 3.5 * vg.Inch}, nil
}

// tunerPanel is one panel of the tuner's figure: a series of TunerSeries.
type tunerPanel struct {
	title, y string
	get      func(t *sim.TunerSeries) []float64
	scale    float64
	unit     bool    // the y axis is [0, 1]
	atLeast  float64 // otherwise the y axis reaches at least this
}

// tunerPanels are the tuner figure's panels, top to bottom; ru is the
// maximum backfill runtime's unit.
func tunerPanels(ru unit) []tunerPanel {
	return []tunerPanel{
		{"Maximum backfill runtime", ru.words(), func(t *sim.TunerSeries) []float64 { return t.MaxBackfillRuntime }, 1 / ru.seconds, false, 0},
		{"Protection period", "share of estimated runtime", func(t *sim.TunerSeries) []float64 { return t.ProtectFraction }, 1, true, 0},
		{"Risk tolerance ε", "ε", func(t *sim.TunerSeries) []float64 { return t.Epsilon }, 1, true, 0},
		{"Preemption for the head held", "share of the time", func(t *sim.TunerSeries) []float64 { return t.HoldPreemption }, 1, true, 0},
		{"Backfill completion rate over the tuner's window", "rate", func(t *sim.TunerSeries) []float64 { return t.CompletionRate }, 1, true, 0},
		// Up to twice the target at least, so that the target's level shows.
		{"Work lost to preemption, recent cycles", "% of busy card-seconds", func(t *sim.TunerSeries) []float64 { return t.LostShare }, 100, false, 2 * 100 * tune.Defaults().LostTarget},
	}
}

// knownLine averages a series of values down to about seriesPoints
// points over the window, skipping unknown (NaN) buckets: x in u from the
// window's origin.
func knownLine(s *sim.Series, win window, u unit, v []float64, scale float64) plotter.XYs {
	n, step := buckets(s, win)
	n = min(n, len(v))
	var pts plotter.XYs
	for i := 0; i < n; i += step {
		k := min(i+step, n)
		var sum float64
		m := 0
		for j := i; j < k; j++ {
			if !math.IsNaN(v[j]) {
				sum += v[j]
				m++
			}
		}
		if m == 0 {
			continue
		}
		mid := float64(s.Start-win.origin) + (float64(i+k) / 2 * float64(s.Width))
		pts = append(pts, plotter.XY{X: mid / u.seconds, Y: scale * sum / float64(m)})
	}
	return pts
}
