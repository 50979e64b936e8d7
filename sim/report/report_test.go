package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	if err := Write(dir, "test", []string{"synthetic"}, runs); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, FileReport))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| easy | 200 |", "| fcfs | 200 |", FileUtilization, FileQueue, FileWaitCDF, "- synthetic",
		"## By job size", "| 1 | easy |", "## Head delay", FileTuner, FileClassWait, FileClassP95} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	for _, f := range []string{FileUtilization, FileQueue, FileWaitCDF, FileClassWait, FileClassP95, FileTuner} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		legend := "easy"
		if f == FileTuner {
			legend = runs[2].Label // the one run with a tuner
		}
		if err != nil || !strings.Contains(string(b), "<svg") || !strings.Contains(string(b), legend) {
			t.Errorf("%s: not an SVG with a legend (%v)", f, err)
		}
	}
}

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
