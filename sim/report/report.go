// Package report writes a what-if comparison as Markdown with plots in SVG
// and PNG: a table of every run's metrics, the waits per job-size class
// (on the same jobs against the reference run), the head delay and lost
// work, utilization and queue length over time, the distribution of waits
// (all jobs, and per size class), and the tuner's parameters over time for
// planners that have one. WriteTables prints the same tables for a
// terminal.
package report

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/huitian/huitian/sim"
	"github.com/huitian/huitian/solver/tune"
)

// Run is one simulated policy, as the report shows it.
type Run struct {
	// Label names the run in the table and the legends, e.g. "easy" or
	// "easy-sjbf (exact)".
	Label  string
	Result *sim.Result
	// MainWaitDelta is the change in the average wait of main (regularly
	// started) jobs against the reference policy, nil when not known. Each
	// policy starts other jobs regularly, so it compares different jobs.
	MainWaitDelta *float64
	// SameJobs compares the run with the reference run per size class on
	// the same jobs (sim.CompareClasses); nil without a reference.
	SameJobs []sim.SameJobs
}

// Files the report writes into its directory; each plot also as PNG
// (the same name with .png, see PNG).
const (
	FileReport      = "report.md"
	FileUtilization = "utilization.svg"
	FileQueue       = "queue.svg"
	FileWaitCDF     = "wait-cdf.svg"
	// FileClassWaitCDF is the distribution of waits, a panel per size
	// class.
	FileClassWaitCDF = "class-wait-cdf.svg"
	// FileClassWait and FileClassP95 are the mean and p95 wait per size
	// class and policy.
	FileClassWait = "class-wait.svg"
	FileClassP95  = "class-p95-wait.svg"
	// FileTuner plots the tuner's parameters, its window's completion rate
	// and the lost share over time; written only when some run's planner
	// has a tuner.
	FileTuner = "tuner.svg"
)

// Points per line: time series are averaged down to about seriesPoints
// (a readable curve per policy when several overlap), a CDF keeps up to
// cdfPoints.
const (
	seriesPoints = 240
	cdfPoints    = 1500
)

// Write writes report.md and its plots, each as SVG (which report.md
// shows) and as PNG, into dir, creating it if needed, and returns the
// paths it wrote, report.md first. about lines (trace, cluster, options)
// head the report as a list.
func Write(dir, title string, about []string, runs []Run) ([]string, error) {
	if len(runs) == 0 {
		return nil, errors.New("report: no runs")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	win := timeWindow(runs)
	type figureFile struct {
		file string
		make func() (figure, error)
	}
	figures := []figureFile{
		{FileUtilization, func() (figure, error) { return utilizationFigure(runs, win) }},
		{FileQueue, func() (figure, error) { return queueFigure(runs, win) }},
		{FileWaitCDF, func() (figure, error) { return waitCDFFigure(runs) }},
		{FileClassWaitCDF, func() (figure, error) { return classWaitCDFFigure(runs) }},
		{FileClassWait, func() (figure, error) { return classFigure(runs, false) }},
		{FileClassP95, func() (figure, error) { return classFigure(runs, true) }},
	}
	tuner := hasTuner(runs)
	if tuner {
		figures = append(figures, figureFile{FileTuner, func() (figure, error) { return tunerFigure(runs, win) }})
	}
	written := []string{filepath.Join(dir, FileReport)}
	for _, fg := range figures {
		f, err := fg.make()
		if err != nil {
			return nil, fmt.Errorf("report: %s: %w", fg.file, err)
		}
		paths, err := f.save(dir, strings.TrimSuffix(fg.file, ".svg"))
		if err != nil {
			return nil, fmt.Errorf("report: %s: %w", fg.file, err)
		}
		written = append(written, paths...)
	}
	var b bytes.Buffer
	markdown(&b, title, about, runs, tuner)
	if err := os.WriteFile(filepath.Join(dir, FileReport), b.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return written, nil
}

func markdown(b *bytes.Buffer, title string, about []string, runs []Run, tuner bool) {
	fmt.Fprintf(b, "# %s\n\n", title)
	for _, a := range about {
		fmt.Fprintf(b, "- %s\n", a)
	}
	if len(about) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("## Comparison\n\n")
	comparisonTable(runs).markdown(b)
	b.WriteString(`
Wait is submit to first start; flow is submit to end; bounded slowdown is
max(1, flow / max(10 s, run)). Utilization is busy card-seconds over the
cards × the span from the first submit to the last end; utilization while
queued counts only the time some job (that the cluster can hold) waited.
Backfill completion
is the share of backfill-started jobs that ended without preemption; main-wait
Δ is the average wait of the jobs this policy started as regular minus the
average wait of the jobs the reference policy started as regular: different
jobs in each run (a policy that backfills more leaves mostly the large jobs
as its main jobs), so read it with the same-job comparison below. "–" where
a measure does not apply.
`)
	classTable(b, runs)
	headTable(b, runs)
	if tuner {
		c := tune.Defaults()
		fmt.Fprintf(b, `
## The tuner over time

Maximum backfill runtime, protection period (share of a backfill job's
estimated runtime), risk tolerance ε, the share of the time preemption for
the head was held, the backfill completion rate over the tuner's own
window, which it steers by (target %g), and the work lost to preemption
over the busy card time, recent cycles, which the hold steers by: held
while above %g%%. Gaps are times without a value (no backfill outcome in
the window yet).

![tuner over time](%s)
`, c.CompletionTarget, 100*c.LostTarget, FileTuner)
	}
	b.WriteString(`
## Waits by job size

![mean wait per size class](` + FileClassWait + `)

![p95 wait per size class](` + FileClassP95 + `)

## Utilization over time

![utilization over time](` + FileUtilization + `)

## Queue length over time

![queue length over time](` + FileQueue + `)

## Distribution of waits

![CDF of wait](` + FileWaitCDF + `)

![CDF of wait per size class](` + FileClassWaitCDF + `)

Every plot is also in this folder as PNG (the same name, .png). The time
plots end at the last arrival plus the longest wait of any policy: by then
every job has started in every run, and what follows is the queue
draining.
`)
}

// Duration formats seconds for people: seconds, minutes, hours or days.
func Duration(s float64) string {
	a := math.Abs(s)
	switch {
	case a < 120:
		return fmt.Sprintf("%.0f s", s)
	case a < 2*3600:
		return fmt.Sprintf("%.1f min", s/60)
	case a < 2*86400:
		return fmt.Sprintf("%.2f h", s/3600)
	}
	return fmt.Sprintf("%.2f d", s/86400)
}

func signedDuration(s *float64) string {
	if s == nil {
		return "–"
	}
	if *s > 0 {
		return "+" + Duration(*s)
	}
	return Duration(*s)
}

func percent(p *float64) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100**p)
}

const day = 86400.0

// style gives run i a color and a dash pattern, so that lines stay apart in
// print and for readers who do not tell the colors apart.
func style(l *plotter.Line, i int) {
	l.Color = plotutil.Color(i)
	l.Dashes = plotutil.Dashes(i)
	l.Width = vg.Points(1.2)
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.X.Tick.Marker = plot.TickerFunc(labelledTicks)
	p.Y.Tick.Marker = plot.TickerFunc(labelledTicks)
	p.Add(plotter.NewGrid())
	return p
}

// Figure sizes.
const (
	figureW = 9 * vg.Inch
	figureH = 4.5 * vg.Inch
)

// buckets returns how many of s's buckets end within the window and how
// many buckets one point of its line averages (about seriesPoints points).
func buckets(s *sim.Series, win window) (n, step int) {
	n = len(s.Busy)
	if s.Width > 0 {
		n = min(n, int(math.Ceil((float64(win.origin)+win.end-float64(s.Start))/float64(s.Width))))
	}
	return max(n, 0), max(1, (n+seriesPoints-1)/seriesPoints)
}

// seriesLine turns the window's part of a series into at most
// seriesPoints points, each the mean of its buckets: x in u from the
// window's origin, y = f(bucket).
func seriesLine(s *sim.Series, win window, u unit, f func(i int) float64) plotter.XYs {
	n, step := buckets(s, win)
	var pts plotter.XYs
	for i := 0; i < n; i += step {
		k := min(i+step, n)
		var sum float64
		for j := i; j < k; j++ {
			sum += f(j)
		}
		mid := float64(s.Start-win.origin) + (float64(i+k) / 2 * float64(s.Width))
		pts = append(pts, plotter.XY{X: mid / u.seconds, Y: sum / float64(k-i)})
	}
	return pts
}

func firstStart(runs []Run) int64 {
	start := int64(math.MaxInt64)
	for _, r := range runs {
		if r.Result.Series != nil {
			start = min(start, r.Result.Series.Start)
		}
	}
	if start == math.MaxInt64 {
		return 0
	}
	return start
}

// timeAxis labels and bounds a plot's x axis to the window, in the unit
// Duration would use for the window's end.
func timeAxis(p *plot.Plot, runs []Run, win window) unit {
	u := unitFor(win.end)
	p.X.Label.Text = u.words() + " since the first submit (a point averages " + spanNote(runs, win) + win.axisNote() + ")"
	p.X.Min, p.X.Max = 0, win.end/u.seconds
	return u
}

func timePlot(runs []Run, win window, title, y string, f func(s *sim.Series, i int) float64) (*plot.Plot, error) {
	p := newPlot(title, "", y)
	u := timeAxis(p, runs, win)
	for i, r := range runs {
		s := r.Result.Series
		if s == nil || len(s.Busy) == 0 {
			continue
		}
		pts := seriesLine(s, win, u, func(k int) float64 { return f(s, k) })
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		style(l, i)
		p.Add(l)
		p.Legend.Add(r.Label, l)
	}
	return p, nil
}

// spanNote says how much time one point of a time plot averages.
func spanNote(runs []Run, win window) string {
	for _, r := range runs {
		if s := r.Result.Series; s != nil && len(s.Busy) > 0 {
			_, step := buckets(s, win)
			return Duration(float64(int64(step) * s.Width))
		}
	}
	return "nothing"
}

func utilizationFigure(runs []Run, win window) (figure, error) {
	p, err := timePlot(runs, win, "Utilization over time", "busy cards / cards", func(s *sim.Series, i int) float64 {
		return s.Busy[i] / float64(max(s.Cards, 1))
	})
	if err != nil {
		return figure{}, err
	}
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = plot.TickerFunc(percentTicks)
	return single(p, figureW, figureH), nil
}

func queueFigure(runs []Run, win window) (figure, error) {
	p, err := timePlot(runs, win, "Queue length over time", "queued jobs", func(s *sim.Series, i int) float64 { return s.Queue[i] })
	if err != nil {
		return figure{}, err
	}
	p.Y.Min = 0
	p.Y.Max = max(p.Y.Max, 1)
	return single(p, figureW, figureH), nil
}

// waits returns the sorted waits of a run's finished jobs that keep
// holds, at least one second each (a log axis has no zero).
func waits(r Run, keep func(cards int) bool) []float64 {
	var out []float64
	for k := range r.Result.Jobs {
		j := &r.Result.Jobs[k]
		if j.Finished() && keep(j.Cards) {
			out = append(out, math.Max(1, float64(j.Wait())))
		}
	}
	slices.Sort(out)
	return out
}

// waitCDFPlot plots, for each run, the share of the jobs that keep holds
// that waited at most x, x on a log axis from one second; jobs that did
// not wait count at one second.
func waitCDFPlot(runs []Run, title string, keep func(r Run, cards int) bool) (*plot.Plot, error) {
	p := newPlot(title, "wait (log scale; no wait counts as 1 s)", "share of jobs that waited at most this")
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.TickerFunc(durationTicks)
	p.Y.Tick.Marker = plot.TickerFunc(percentTicks)
	hi := 1.0
	for i, r := range runs {
		w := waits(r, func(cards int) bool { return keep(r, cards) })
		if len(w) == 0 {
			continue
		}
		hi = max(hi, w[len(w)-1])
		l, err := plotter.NewLine(cdf(w))
		if err != nil {
			return nil, err
		}
		style(l, i)
		p.Add(l)
		p.Legend.Add(r.Label, l)
	}
	p.X.Min, p.X.Max = 1, hi*1.5
	p.Y.Min, p.Y.Max = 0, 1
	return p, nil
}

func waitCDFFigure(runs []Run) (figure, error) {
	p, err := waitCDFPlot(runs, "Distribution of waits", func(Run, int) bool { return true })
	if err != nil {
		return figure{}, err
	}
	return single(p, figureW, figureH), nil
}

// classWaitCDFFigure is the distribution of waits of each size class that
// has jobs, a panel each, one above the other on the same wait axis.
func classWaitCDFFigure(runs []Run) (figure, error) {
	var panels []*plot.Plot
	var leg plot.Legend
	most := vg.Length(-1)
	for c := range sim.NumClasses {
		label := ""
		jobs := 0
		for _, r := range runs {
			if cl := r.Result.Summary.Classes; c < len(cl) && cl[c].Jobs > 0 {
				label, jobs = cl[c].Class, max(jobs, cl[c].Jobs)
			}
		}
		if jobs == 0 {
			continue
		}
		what := label + " cards"
		if label == "1" {
			what = "1 card"
		}
		p, err := waitCDFPlot(runs, fmt.Sprintf("Distribution of waits: jobs of %s (%d jobs)", what, jobs), func(r Run, cards int) bool { return r.Result.Classes.Of(cards) == c })
		if err != nil {
			return figure{}, err
		}
		// The legend of the panel with the most runs serves them all.
		if n := p.Legend.Rectangle(draw.Canvas{}).Size().Y; n > most {
			most, leg = n, p.Legend
		}
		panels = append(panels, p)
	}
	if len(panels) == 0 {
		p := newPlot("Waits by job size: no finished jobs", "", "")
		return single(p, figureW, figureH), nil
	}
	hi := 1.0
	for _, p := range panels {
		hi = max(hi, p.X.Max)
	}
	grid := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		p.X.Max = hi
		if i < len(panels)-1 {
			p.X.Label.Text = ""
		}
		grid[i] = []*plot.Plot{p}
	}
	return figure{grid: grid, legend: leg, w: figureW, h: 3.2 * vg.Inch * vg.Length(len(grid))}, nil
}

// cdf returns the empirical CDF of sorted values as a step line of at most
// about maxPoints points.
func cdf(sorted []float64) plotter.XYs {
	n := len(sorted)
	step := max(1, n/cdfPoints)
	var pts plotter.XYs
	for i := 0; i < n; {
		// The CDF reaches (j+1)/n at sorted[j]: take the last of equal values.
		j := i
		for j+1 < n && sorted[j+1] == sorted[i] {
			j++
		}
		pts = append(pts, plotter.XY{X: sorted[i], Y: float64(j+1) / float64(n)})
		i = max(i+step, j+1)
	}
	if last := pts[len(pts)-1]; last.Y < 1 {
		pts = append(pts, plotter.XY{X: sorted[n-1], Y: 1})
	}
	return pts
}

// durationTicks marks a log axis of seconds at 1 s, 10 s, 1 min, 10 min,
// 1 h, 6 h, 1 d, 1 w, 30 d and 1 y, with minor ticks between.
func durationTicks(lo, hi float64) []plot.Tick {
	major := []struct {
		v     float64
		label string
	}{{1, "1 s"}, {10, "10 s"}, {60, "1 min"}, {600, "10 min"}, {3600, "1 h"}, {6 * 3600, "6 h"},
		{86400, "1 d"}, {7 * 86400, "1 w"}, {30 * 86400, "30 d"}, {365 * 86400, "1 y"}}
	var ticks []plot.Tick
	for _, m := range major {
		if m.v >= lo && m.v <= hi {
			ticks = append(ticks, plot.Tick{Value: m.v, Label: m.label})
		}
	}
	for d := math.Pow(10, math.Floor(math.Log10(lo))); d <= hi; d *= 10 {
		for k := 2.0; k < 10; k++ {
			if v := k * d; v >= lo && v <= hi {
				ticks = append(ticks, plot.Tick{Value: v})
			}
		}
	}
	return ticks
}
