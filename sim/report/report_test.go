package report

import (
	"bytes"
	"context"
	"html"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/sim"
	"github.com/huitian/huitian/sim/trace"
	"github.com/huitian/huitian/solver"
)

func TestWrite(t *testing.T) {
	tr, err := trace.Synth(trace.SynthOptions{Jobs: 200, Seed: 1, Cards: 16})
	if err != nil {
		t.Fatal(err)
	}
	var runs []Run
	for _, p := range []model.Policy{model.PolicyEASY, model.PolicyFCFS, model.PolicyHuitianGreedy} {
		c, err := sim.HGX(2)
		if err != nil {
			t.Fatal(err)
		}
		pl, err := solver.New(p, 0)
		if err != nil {
			t.Fatal(err)
		}
		res, err := sim.Run(context.Background(), tr.Jobs, pl, sim.Config{Cluster: c, Series: true})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, Run{Label: p.String(), Result: res})
	}
	for i := range runs {
		same, err := sim.CompareClasses(runs[i].Result, runs[0].Result)
		if err != nil {
			t.Fatal(err)
		}
		runs[i].SameJobs = same
	}
	if runs[2].Result.Series.Tuner == nil {
		t.Fatal("huitian-greedy has no tuner series")
	}
	dir := filepath.Join(t.TempDir(), "out")
	written, err := Write(dir, "test", []string{"synthetic"}, runs)
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, FileReport))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| easy | 200 |", "| fcfs | 200 |", FileUtilization, FileQueue, FileWaitCDF, FileClassWaitCDF, "- synthetic",
		"## By job size", "| 1 | easy |", "## Head delay", FileTuner, FileClassWait, FileClassP95, "(target 0.95)", "while above 1%"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	svgs := []string{FileUtilization, FileQueue, FileWaitCDF, FileClassWaitCDF, FileClassWait, FileClassP95, FileTuner}
	wantWritten := []string{filepath.Join(dir, FileReport)}
	for _, f := range svgs {
		wantWritten = append(wantWritten, filepath.Join(dir, f), filepath.Join(dir, PNG(f)))
	}
	if diff := cmp.Diff(wantWritten, written); diff != "" {
		t.Errorf("Write's paths (-want +got):\n%s", diff)
	}
	for _, f := range svgs {
		b, err := os.ReadFile(filepath.Join(dir, f))
		legend := "easy"
		if f == FileTuner {
			legend = runs[2].Label // the one run with a tuner
		}
		if err != nil || !strings.Contains(string(b), "<svg") || !strings.Contains(string(b), legend) {
			t.Errorf("%s: not an SVG with a legend (%v)", f, err)
		}
		if f == FileTuner {
			for _, p := range tunerWant {
				if !strings.Contains(string(b), html.EscapeString(p.title)) {
					t.Errorf("%s: no panel %q", f, p.title)
				}
			}
		}
		checkPNG(t, filepath.Join(dir, PNG(f)))
	}
}

// handTuner is a tuner series of one bucket, a different value in each
// series; tunerWant is FileTuner's panels, top to bottom, and the value
// each plots from handTuner (the runtime in hours, the lost share in %).
var (
	handTuner = sim.TunerSeries{MaxBackfillRuntime: []float64{7200}, ProtectFraction: []float64{0.15}, Epsilon: []float64{0.02},
		HoldPreemption: []float64{0.25}, CompletionRate: []float64{0.9}, LostShare: []float64{0.03}}
	tunerWant = []struct {
		title string
		v     float64
	}{
		{"Maximum backfill runtime", 2},
		{"Protection period", 0.15},
		{"Risk tolerance ε", 0.02},
		{"Preemption for the head held", 0.25},
		{"Backfill completion rate over the tuner's window", 0.9},
		{"Work lost to preemption, recent cycles", 3},
	}
)

// TestTunerPanels: each panel of FileTuner plots its own series of the
// tuner's; the lost share's axis reaches twice its target (1%) at least.
func TestTunerPanels(t *testing.T) {
	panels := tunerPanels(unitHour)
	if len(panels) != len(tunerWant) {
		t.Fatalf("%d panels, want %d", len(panels), len(tunerWant))
	}
	for i, p := range panels {
		if w := tunerWant[i]; p.title != w.title || math.Abs(p.scale*p.get(&handTuner)[0]-w.v) > 1e-12 {
			t.Errorf("panel %d: %q plots %v, want %q plotting %v", i, p.title, p.scale*p.get(&handTuner)[0], w.title, w.v)
		}
	}
	for _, tc := range []struct {
		name string
		lost float64
		want float64 // the lost share's axis maximum, %
	}{
		{"a lost share above twice the target sets the axis", 0.03, 3},
		{"a lost share below it leaves the axis at 2%", 0.001, 2},
	} {
		tuner := handTuner
		tuner.LostShare = []float64{tc.lost}
		s := &sim.Series{Start: 0, Width: 60, Cards: 8, Busy: []float64{1}, Queue: []float64{0}, Tuner: &tuner}
		runs := []Run{{Label: "huitian-greedy", Result: &sim.Result{Series: s}}}
		f, err := tunerFigure(runs, timeWindow(runs))
		if err != nil {
			t.Fatal(err)
		}
		if got := f.grid[len(f.grid)-1][0].Y.Max; math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: axis up to %v%%, want %v%%", tc.name, got, tc.want)
		}
	}
}

// checkPNG decodes a PNG the report wrote: at 150 dpi, a figure is at
// least 9 × 4.5 inches, and it is not blank.
func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	b := img.Bounds()
	if b.Dx() != 9*pngDPI || b.Dy() < 9*pngDPI/2 {
		t.Errorf("%s: %d × %d pixels, want 1350 wide and at least 675 high", path, b.Dx(), b.Dy())
	}
	dark := 0
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			if r, g, bl, _ := img.At(x, y).RGBA(); r+g+bl < 3*0x8000 {
				dark++
			}
		}
	}
	if dark == 0 {
		t.Errorf("%s: blank", path)
	}
}

// TestTimeWindow: the time plots end at the last arrival plus the longest
// wait, not at the end of the drain; when the series end before that,
// they are not cut.
func TestTimeWindow(t *testing.T) {
	series := func(start, buckets int64) *sim.Series {
		return &sim.Series{Start: start, Width: 60, Cards: 4, Busy: make([]float64, buckets), Queue: make([]float64, buckets)}
	}
	jobs := []sim.JobResult{
		{ID: "a", Submit: 1000, Start: 1000, End: 5000},
		{ID: "b", Submit: 2000, Start: 9000, End: 9500},   // waited 7,000 s
		{ID: "c", Submit: 4000, Start: 4100, End: 200000}, // the last arrival; its long run is the drain
		{ID: "d", Submit: 3000, Start: -1, End: -1},       // never started: no wait
	}
	long := Run{Label: "easy", Result: &sim.Result{Jobs: jobs, Series: series(1000, 4000)}}
	w := timeWindow([]Run{long})
	if want := (window{origin: 1000, end: 4000 + 7000 - 1000, cut: true}); w != want {
		t.Errorf("window %+v, want %+v", w, want)
	}
	other := Run{Label: "fcfs", Result: &sim.Result{Jobs: []sim.JobResult{{ID: "a", Submit: 1000, Start: 31000, End: 32000}}, Series: series(1000, 4000)}}
	if w := timeWindow([]Run{long, other}); w.end != 4000+30000-1000 || !w.cut {
		t.Errorf("window with a 30,000 s wait %+v, want it to end 33,000 s after the origin", w)
	}
	short := Run{Label: "easy", Result: &sim.Result{Jobs: jobs, Series: series(1000, 100)}}
	if w := timeWindow([]Run{short}); w.end != 6000 || w.cut {
		t.Errorf("window of a 6,000 s series %+v, want it whole", w)
	}

	p, err := timePlot([]Run{long}, w, "queue", "jobs", func(s *sim.Series, i int) float64 { return s.Queue[i] })
	if err != nil {
		t.Fatal(err)
	}
	// 10,000 s is 2.78 h: the axis is in hours, as Duration writes it.
	if got, want := p.X.Max, 10000.0/3600; math.Abs(got-want) > 1e-9 || !strings.HasPrefix(p.X.Label.Text, "hours since the first submit") ||
		!strings.Contains(p.X.Label.Text, "cut at the last arrival + the longest wait, 2.78 h") {
		t.Errorf("x axis up to %v (%q), want %v hours and the cut named", got, p.X.Label.Text, want)
	}
	pts := seriesLine(long.Result.Series, w, unitHour, func(int) float64 { return 0 })
	if last := pts[len(pts)-1].X; last > p.X.Max || len(pts) > seriesPoints {
		t.Errorf("%d points up to %v h, want at most %d up to the cut at %v h", len(pts), last, seriesPoints, p.X.Max)
	}
}

// TestTablesMatch: the console and report.md show the same columns.
func TestTablesMatch(t *testing.T) {
	s := sim.Summary{Jobs: 3, AvgWait: 5400, P95Wait: 7200, Classes: []sim.ClassStats{{Class: "1", Jobs: 3, MeanWait: 90}}}
	runs := []Run{{Label: "easy", Result: &sim.Result{Summary: s}}}
	var md bytes.Buffer
	markdown(&md, "t", nil, runs, false)
	var text bytes.Buffer
	if err := WriteTables(&text, "easy", runs); err != nil {
		t.Fatal(err)
	}
	for _, tb := range []table{comparisonTable(runs), classesTable(runs), headsTable(runs)} {
		if !strings.Contains(md.String(), "| "+strings.Join(tb.columns, " | ")+" |") {
			t.Errorf("report.md lacks the header %q", tb.columns)
		}
		if !strings.Contains(squeeze(text.String()), strings.Join(tb.columns, " ")) {
			t.Errorf("the console lacks the header %q:\n%s", tb.columns, text.String())
		}
		for _, row := range tb.rows {
			if !strings.Contains(md.String(), "| "+strings.Join(row, " | ")+" |") || !strings.Contains(squeeze(text.String()), strings.Join(row, " ")) {
				t.Errorf("row %q is not in both", row)
			}
		}
	}
	for _, want := range []string{"90.0 min", "2.00 h", "90 s"} {
		if !strings.Contains(text.String(), want) || !strings.Contains(md.String(), want) {
			t.Errorf("%q (units as Duration writes them) not in both", want)
		}
	}
}

// squeeze collapses runs of spaces, as tabwriter pads cells.
func squeeze(s string) string { return strings.Join(strings.Fields(s), " ") }

func TestDuration(t *testing.T) {
	for s, want := range map[float64]string{0: "0 s", 90: "90 s", 600: "10.0 min", 7200: "2.00 h", 3 * 86400: "3.00 d", -30: "-30 s"} {
		if got := Duration(s); got != want {
			t.Errorf("Duration(%v) = %q, want %q", s, got, want)
		}
	}
}

func TestCDF(t *testing.T) {
	pts := cdf([]float64{1, 1, 2, 5})
	want := [][2]float64{{1, 0.5}, {2, 0.75}, {5, 1}}
	if len(pts) != len(want) {
		t.Fatalf("cdf points %v, want %v", pts, want)
	}
	for i, w := range want {
		if pts[i].X != w[0] || pts[i].Y != w[1] {
			t.Errorf("point %d = %v, want %v", i, pts[i], w)
		}
	}
}
