package report

import (
	"bytes"
	"fmt"
	"math"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/huitian/huitian/sim"
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

| class | policy | jobs | mean wait | p95 wait | mean bsld | preemptions | same jobs | mean wait ×ref | p95 wait ×ref | bsld ×ref |
|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|
`)
	ratio := func(p *float64) string {
		if p == nil {
			return "–"
		}
		return fmt.Sprintf("%.3f", *p)
	}
	for c := range sim.NumClasses {
		for _, r := range runs {
			cl := r.Result.Summary.Classes
			if c >= len(cl) || (cl[c].Jobs == 0 && cl[c].Preemptions == 0) {
				continue
			}
			k := cl[c]
			same, mw, pw, bs := "–", "–", "–", "–"
			if c < len(r.SameJobs) {
				v := r.SameJobs[c]
				same, mw, pw, bs = fmt.Sprint(v.Jobs), ratio(v.MeanWaitRatio), ratio(v.P95WaitRatio), ratio(v.BSLDRatio)
			}
			fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %.2f | %d | %s | %s | %s | %s |\n",
				k.Class, r.Label, k.Jobs, Duration(k.MeanWait), Duration(k.P95Wait), k.MeanBSLD, k.Preemptions, same, mw, pw, bs)
		}
	}
}

// headTable writes the head delay and the lost work of every run.
func headTable(b *bytes.Buffer, runs []Run) {
	b.WriteString(`
## Head delay and lost work

Head delay: for every job that was the reserved head of a decision, its
start minus the start its first reservation promised (negative: earlier,
as jobs ahead of it ended before their limits). Lost work is the card time
preemptions wasted, over the busy card time.

| policy | heads | mean delay | p95 delay | max delay | lost card-time | lost / busy |
|---|--:|--:|--:|--:|--:|--:|
`)
	for _, r := range runs {
		s := r.Result.Summary
		h := s.HeadDelay
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s |\n", r.Label, h.Jobs, Duration(h.Mean), Duration(h.P95), Duration(h.Max),
			cardTime(s.LostCardSeconds), percent(s.LostShare))
	}
}

// cardTime formats card-seconds as card-hours.
func cardTime(cs float64) string { return fmt.Sprintf("%.1f card-h", cs/3600) }

// classPlot draws the mean (or p95) wait of each size class, a bar per
// run, in hours.
func classPlot(runs []Run, p95 bool) (*plot.Plot, error) {
	what := "Mean wait"
	if p95 {
		what = "95th percentile of wait"
	}
	p := newPlot(what+" by job size (cards)", "size class", "hours")
	var labels []string
	var used []int
	for c := range sim.NumClasses {
		for _, r := range runs {
			if cl := r.Result.Summary.Classes; c < len(cl) && cl[c].Jobs > 0 {
				used = append(used, c)
				break
			}
		}
	}
	if len(used) == 0 {
		return p, nil
	}
	w := vg.Points(min(24, 160/float64(max(len(runs), 1))))
	for i, r := range runs {
		vals := make(plotter.Values, len(used))
		for k, c := range used {
			if cl := r.Result.Summary.Classes; c < len(cl) {
				v := cl[c].MeanWait
				if p95 {
					v = cl[c].P95Wait
				}
				vals[k] = v / 3600
			}
			if i == 0 {
				labels = append(labels, r.Result.Summary.Classes[c].Class)
			}
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, err
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(float64(i)-float64(len(runs)-1)/2) * w
		p.Add(bars)
		p.Legend.Add(r.Label, bars)
	}
	p.NominalX(labels...)
	p.Y.Min = 0
	headroom(p, len(runs))
	return p, nil
}

func hasTuner(runs []Run) bool {
	for _, r := range runs {
		if s := r.Result.Series; s != nil && s.Tuner != nil {
			return true
		}
	}
	return false
}

// saveTuner draws the tuner's parameters and its window's completion rate
// over time, one panel each, a line per run with a tuner.
func saveTuner(runs []Run, path string) error {
	panels := []struct {
		title, y string
		get      func(t *sim.TunerSeries) []float64
		scale    float64
		unit     bool // the y axis is [0, 1]
	}{
		{"Maximum backfill runtime", "hours", func(t *sim.TunerSeries) []float64 { return t.MaxBackfillRuntime }, 1.0 / 3600, false},
		{"Protection period", "share of estimated runtime", func(t *sim.TunerSeries) []float64 { return t.ProtectFraction }, 1, true},
		{"Risk tolerance ε", "ε", func(t *sim.TunerSeries) []float64 { return t.Epsilon }, 1, true},
		{"Backfill completion rate over the tuner's window", "rate", func(t *sim.TunerSeries) []float64 { return t.CompletionRate }, 1, true},
	}
	start := firstStart(runs)
	grid := make([][]*plot.Plot, len(panels))
	for k, pn := range panels {
		p := newPlot(pn.title, "days since the first submit", pn.y)
		p.X.Tick.Marker = plot.TickerFunc(wholeTicks)
		for i, r := range runs {
			s := r.Result.Series
			if s == nil || s.Tuner == nil {
				continue
			}
			pts := knownLine(s, start, pn.get(s.Tuner), pn.scale)
			if len(pts) == 0 {
				continue
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			style(l, i)
			p.Add(l)
			p.Legend.Add(r.Label, l)
		}
		if pn.unit {
			p.Y.Min, p.Y.Max = 0, 1
		} else {
			p.Y.Min = 0
		}
		headroom(p, len(runs))
		grid[k] = []*plot.Plot{p}
	}
	const w, h = 9 * vg.Inch, 14 * vg.Inch
	c := vgsvg.New(w, h)
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadY: vg.Points(12), PadTop: vg.Points(4), PadBottom: vg.Points(4)}
	canvases := plot.Align(grid, tiles, dc)
	for k := range grid {
		grid[k][0].Draw(canvases[k][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// knownLine averages a series of values down to about seriesPoints
// points, skipping unknown (NaN) buckets: x in days from start.
func knownLine(s *sim.Series, start int64, v []float64, scale float64) plotter.XYs {
	n := len(v)
	step := max(1, (n+seriesPoints-1)/seriesPoints)
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
		mid := float64(s.Start-start) + (float64(i+k) / 2 * float64(s.Width))
		pts = append(pts, plotter.XY{X: mid / day, Y: scale * sum / float64(m)})
	}
	return pts
}
