package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// pngDPI is the PNGs' resolution: a 9-inch-wide figure is 1,350 pixels.
const pngDPI = 150

// figure is one image of the report: plots in a grid, aligned, with one
// legend in a column of its own to their right, so that it never covers
// the data.
type figure struct {
	grid   [][]*plot.Plot
	legend plot.Legend
	w, h   vg.Length
}

// single is a figure of one plot whose legend is the plot's own.
func single(p *plot.Plot, w, h vg.Length) figure {
	return figure{grid: [][]*plot.Plot{{p}}, legend: p.Legend, w: w, h: h}
}

// legendPad separates the plots from the legend column.
const legendPad = vg.Length(10)

// draw draws the figure on c: the legend (drawn from the top of the
// column, level with the first plot's data) takes what its widest entry
// needs, the plots the rest.
func (f figure) draw(c draw.Canvas) {
	leg := f.legend
	leg.Top, leg.Left = true, true
	leg.XOffs, leg.YOffs = 0, 0
	lw := leg.Rectangle(c).Size().X
	if lw > 0 {
		lw += legendPad
	}
	for _, row := range f.grid {
		for _, p := range row {
			// The plot's own legend would be drawn over its data.
			if p != nil {
				p.Legend = plot.NewLegend()
			}
		}
	}
	plots := draw.Crop(c, 0, -lw, 0, 0)
	rows, cols := len(f.grid), len(f.grid[0])
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(12), PadY: vg.Points(12), PadTop: vg.Points(4), PadBottom: vg.Points(4)}
	canvases := plot.Align(f.grid, tiles, plots)
	for i, row := range f.grid {
		for j, p := range row {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	if lw > 0 {
		// Level with the top of the first plot's data area.
		top := f.grid[0][0].DataCanvas(canvases[0][0]).Max.Y
		col := draw.Crop(c, c.Max.X-c.Min.X-lw+legendPad, 0, 0, top-c.Max.Y)
		leg.Draw(col)
	}
}

// save writes the figure as dir/base.svg and dir/base.png and returns
// both paths.
func (f figure) save(dir, base string) ([]string, error) {
	svg := vgsvg.New(f.w, f.h)
	f.draw(draw.New(svg))
	img := vgimg.NewWith(vgimg.UseWH(f.w, f.h), vgimg.UseDPI(pngDPI), vgimg.UseBackgroundColor(color.White))
	f.draw(draw.New(img))
	var paths []string
	for _, out := range []struct {
		ext string
		w   io.WriterTo
	}{{".svg", svg}, {".png", vgimg.PngCanvas{Canvas: img}}} {
		path := filepath.Join(dir, base+out.ext)
		if err := writeTo(path, out.w); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

func writeTo(path string, w io.WriterTo) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// PNG is the name of the PNG the report writes beside an SVG of its.
func PNG(svg string) string { return strings.TrimSuffix(svg, ".svg") + ".png" }

// unit is a unit of time for an axis: the one Duration would write for
// the axis's largest value, so that a plot reads as the tables do.
type unit struct {
	name    string
	seconds float64
}

var (
	unitSecond = unit{"s", 1}
	unitMinute = unit{"min", 60}
	unitHour   = unit{"h", 3600}
	unitDay    = unit{"d", day}
)

// unitFor returns the unit Duration picks for s seconds.
func unitFor(s float64) unit {
	a := math.Abs(s)
	switch {
	case a < 120:
		return unitSecond
	case a < 2*3600:
		return unitMinute
	case a < 2*day:
		return unitHour
	}
	return unitDay
}

// words is the unit's name in an axis label.
func (u unit) words() string {
	return map[string]string{"s": "seconds", "min": "minutes", "h": "hours", "d": "days"}[u.name]
}

// window is the time the time plots show, in seconds from origin (the
// first bucket of any run's series): up to the last arrival plus the
// longest wait of any run, by when every job has started in every run —
// not the drain after it, which can be most of a trace's span and says
// little. cut is false when the series end before that.
type window struct {
	origin int64
	end    float64
	cut    bool
}

// timeWindow returns the window of runs' time plots.
func timeWindow(runs []Run) window {
	w := window{origin: firstStart(runs)}
	var lastArrival, longestWait, seriesEnd int64
	for _, r := range runs {
		for k := range r.Result.Jobs {
			j := &r.Result.Jobs[k]
			lastArrival = max(lastArrival, j.Submit)
			if j.Start >= 0 {
				longestWait = max(longestWait, j.Start-j.Submit)
			}
		}
		if s := r.Result.Series; s != nil {
			seriesEnd = max(seriesEnd, s.Start+int64(len(s.Busy))*s.Width)
		}
	}
	w.end = float64(seriesEnd - w.origin)
	if cut := float64(lastArrival + longestWait - w.origin); cut > 0 && cut < w.end {
		w.end, w.cut = cut, true
	}
	return w
}

// axisNote says where the window ends, for the x axis's label.
func (w window) axisNote() string {
	if !w.cut {
		return ""
	}
	return "; cut at the last arrival + the longest wait, " + Duration(w.end)
}

// labelledTicks mark an axis at about eight round values (1, 2 or 5 times
// a power of ten), each labelled without needless decimals, with a minor
// tick between each two.
func labelledTicks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	step := niceStep((hi - lo) / 8)
	decimals := max(0, int(-math.Floor(math.Log10(step))))
	var ticks []plot.Tick
	for k := math.Ceil(lo/step*2) / 2; k*step <= hi*(1+1e-12); k += 0.5 {
		v := k * step
		t := plot.Tick{Value: v}
		if k == math.Trunc(k) {
			t.Label = strconv.FormatFloat(v, 'f', decimals, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// niceStep is the smallest of 1, 2 or 5 times a power of ten at least x.
func niceStep(x float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, f := range []float64{1, 2, 5} {
		if f*p >= x {
			return f * p
		}
	}
	return 10 * p
}

// percentTicks mark a [0, 1] axis every 10%, labelled every 20%.
func percentTicks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for k := 0; k <= 10; k++ {
		v := float64(k) / 10
		t := plot.Tick{Value: v}
		if k%2 == 0 {
			t.Label = fmt.Sprintf("%d%%", 10*k)
		}
		ticks = append(ticks, t)
	}
	return ticks
}
