// Package report writes a what-if comparison as Markdown with SVG plots:
// a table of every run's metrics, the waits per job-size class (on the
// same jobs against the reference run), the head delay and lost work,
// utilization and queue length over time, the distribution of waits, and
// the tuner's parameters over time for planners that have one.
package report

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/huitian/huitian/sim"
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

// Files the report writes into its directory.
const (
	FileReport      = "report.md"
	FileUtilization = "utilization.svg"
	FileQueue       = "queue.svg"
	FileWaitCDF     = "wait-cdf.svg"
	// FileClassWait and FileClassP95 are the mean and p95 wait per size
	// class and policy.
	FileClassWait = "class-wait.svg"
	FileClassP95  = "class-p95-wait.svg"
	// FileTuner plots the tuner's parameters and its window's completion
	// rate over time; written only when some run's planner has a tuner.
	FileTuner = "tuner.svg"
)

// Points per line: time series are averaged down to about seriesPoints
// (a readable curve per policy when several overlap), a CDF keeps up to
// cdfPoints.
const (
	seriesPoints = 240
	cdfPoints    = 1500
)

// Write writes report.md and its plots into dir, creating it if needed.
// about lines (trace, cluster, options) head the report as a list.
func Write(dir, title string, about []string, runs []Run) error {
	if len(runs) == 0 {
		return errors.New("report: no runs")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	plots := []struct {
		file string
		make func([]Run) (*plot.Plot, error)
	}{
		{FileUtilization, utilizationPlot},
		{FileQueue, queuePlot},
		{FileWaitCDF, waitCDFPlot},
		{FileClassWait, func(r []Run) (*plot.Plot, error) { return classPlot(r, false) }},
		{FileClassP95, func(r []Run) (*plot.Plot, error) { return classPlot(r, true) }},
	}
	for _, pl := range plots {
		p, err := pl.make(runs)
		if err != nil {
			return fmt.Errorf("report: %s: %w", pl.file, err)
		}
		if err := p.Save(9*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, pl.file)); err != nil {
			return fmt.Errorf("report: %s: %w", pl.file, err)
		}
	}
	tuner := hasTuner(runs)
	if tuner {
		if err := saveTuner(runs, filepath.Join(dir, FileTuner)); err != nil {
			return fmt.Errorf("report: %s: %w", FileTuner, err)
		}
	}
	var b bytes.Buffer
	markdown(&b, title, about, runs, tuner)
	if err := os.WriteFile(filepath.Join(dir, FileReport), b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
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
	b.WriteString("| policy | jobs | avg wait | median wait | p95 wait | avg flow | avg bsld | utilization | util. while queued | makespan | backfill starts | backfill completion | main-wait Δ | preemptions |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range runs {
		s := r.Result.Summary
		jobs := fmt.Sprint(s.Jobs)
		if s.NeverStarted > 0 {
			jobs += fmt.Sprintf(" (+%d never started)", s.NeverStarted)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %.2f | %.1f%% | %s | %s | %d | %s | %s | %d |\n",
			r.Label, jobs, Duration(s.AvgWait), Duration(s.MedianWait), Duration(s.P95Wait), Duration(s.AvgFlow),
			s.AvgBSLD, 100*s.Utilization, percent(s.UtilizationQueued), Duration(float64(s.Makespan)), s.BackfillStarts,
			percent(s.BackfillCompletionRate), signedDuration(r.MainWaitDelta), s.Preemptions)
	}
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
		b.WriteString(`
## The tuner over time

Maximum backfill runtime, protection period (share of a backfill job's
estimated runtime), risk tolerance ε, and the backfill completion rate
over the tuner's own window, which it steers by (target 0.95). Gaps are
times without a value (no backfill outcome in the window yet).

![tuner over time](` + FileTuner + `)
`)
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
	// Top left, line samples first: a viewer that substitutes a wider font
	// for the SVG's Liberation Serif widens the labels into empty space
	// rather than into the samples.
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(6)
	p.Add(plotter.NewGrid())
	return p
}

// seriesLine turns a series into at most seriesPoints points, each the
// mean of its buckets: x in days from start, y = f(bucket).
func seriesLine(s *sim.Series, start int64, f func(i int) float64) plotter.XYs {
	n := len(s.Busy)
	step := max(1, (n+seriesPoints-1)/seriesPoints)
	var pts plotter.XYs
	for i := 0; i < n; i += step {
		k := min(i+step, n)
		var sum float64
		for j := i; j < k; j++ {
			sum += f(j)
		}
		mid := float64(s.Start-start) + (float64(i+k) / 2 * float64(s.Width))
		pts = append(pts, plotter.XY{X: mid / day, Y: sum / float64(k-i)})
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
	return start
}

func timePlot(runs []Run, title, y string, f func(s *sim.Series, i int) float64) (*plot.Plot, error) {
	p := newPlot(title, "days since the first submit (each point averages "+spanNote(runs)+")", y)
	p.X.Tick.Marker = plot.TickerFunc(wholeTicks)
	start := firstStart(runs)
	for i, r := range runs {
		s := r.Result.Series
		if s == nil || len(s.Busy) == 0 {
			continue
		}
		l, err := plotter.NewLine(seriesLine(s, start, func(k int) float64 { return f(s, k) }))
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
func spanNote(runs []Run) string {
	for _, r := range runs {
		if s := r.Result.Series; s != nil && len(s.Busy) > 0 {
			step := max(1, (len(s.Busy)+seriesPoints-1)/seriesPoints)
			return Duration(float64(int64(step) * s.Width))
		}
	}
	return "nothing"
}

// wholeTicks are the default ticks with labels that drop needless decimals.
func wholeTicks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', -1, 64)
		}
	}
	return ticks
}

// headroom raises the y axis so that a legend of n entries at the top
// stays clear of the lines.
func headroom(p *plot.Plot, n int) {
	p.Y.Max *= 1 + 0.09*float64(n)
}

func utilizationPlot(runs []Run) (*plot.Plot, error) {
	p, err := timePlot(runs, "Utilization over time", "busy cards / cards", func(s *sim.Series, i int) float64 {
		return s.Busy[i] / float64(max(s.Cards, 1))
	})
	if err != nil {
		return nil, err
	}
	p.Y.Min, p.Y.Max = 0, 1
	headroom(p, len(runs))
	p.Y.Tick.Marker = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		var ticks []plot.Tick
		for k := 0; k <= 10; k++ {
			v := float64(k) / 10
			t := plot.Tick{Value: v}
			if k%2 == 0 {
				t.Label = strconv.FormatFloat(v, 'f', -1, 64)
			}
			ticks = append(ticks, t)
		}
		return ticks
	})
	return p, nil
}

func queuePlot(runs []Run) (*plot.Plot, error) {
	p, err := timePlot(runs, "Queue length over time", "queued jobs", func(s *sim.Series, i int) float64 { return s.Queue[i] })
	if err != nil {
		return nil, err
	}
	p.Y.Min = 0
	p.Y.Max = max(p.Y.Max, 1)
	headroom(p, len(runs))
	return p, nil
}

// waitCDFPlot plots the share of jobs that waited at most x, x on a log
// axis from one second; jobs that did not wait count at one second.
func waitCDFPlot(runs []Run) (*plot.Plot, error) {
	p := newPlot("Distribution of waits", "wait (log scale; no wait counts as 1 s)", "share of jobs that waited at most this")
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.TickerFunc(durationTicks)
	p.Legend.YOffs = -vg.Points(4)
	hi := 1.0
	for i, r := range runs {
		var waits []float64
		for k := range r.Result.Jobs {
			j := &r.Result.Jobs[k]
			if j.Finished() {
				waits = append(waits, math.Max(1, float64(j.Wait())))
			}
		}
		if len(waits) == 0 {
			continue
		}
		slices.Sort(waits)
		hi = max(hi, waits[len(waits)-1])
		l, err := plotter.NewLine(cdf(waits))
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
