package slurm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/huitian/huitian/client"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/rm/slurm"
	"github.com/huitian/huitian/test/e2e/e2etest"
)

const interval = 2 * time.Second

// env is what scripts/e2e-slurm.sh hands the test.
type env struct {
	runDir, huitian, mode, result string
}

func getenv(t *testing.T) env {
	e := env{os.Getenv("E2E_RUN_DIR"), os.Getenv("E2E_HUITIAN"), os.Getenv("E2E_MODE"), os.Getenv("E2E_RESULT")}
	if e.runDir == "" || os.Getenv("SLURM_CONF") == "" {
		t.Skip("the Slurm end-to-end test runs under `make e2e-slurm`, which starts Slurm")
	}
	if e.mode == "" {
		e.mode = "huitian"
	}
	return e
}

// workJob is one batch job of the workload.
type workJob struct {
	name    string
	nodes   int
	perNode int
	runtime int // seconds of sleep
	limit   int // --time, minutes
	ckpt    bool
	opts    string // huitian options for --comment
	at      time.Duration
}

// script is every job's batch script: it sleeps its runtime, less what a
// checkpoint saved; a checkpointable one traps USR1 ("checkpoint now"),
// saves its progress and exits.
const script = `#!/bin/bash
name=$1; rt=$2; ck=$3; d=$E2E_DIR
done=0; [ -f "$d/$name.ckpt" ] && done=$(cat "$d/$name.ckpt")
start=$(date +%s)
echo "start $start gpus=$CUDA_VISIBLE_DEVICES nodes=$SLURM_JOB_NODELIST restart=${SLURM_RESTART_COUNT:-0} done=$done" >> "$d/$name.log"
if [ "$ck" = 1 ]; then
  trap 'now=$(date +%s); echo $((done + now - start)) > "$d/$name.ckpt"; echo "usr1 $now" >> "$d/$name.log"; exit 0' USR1
fi
left=$((rt - done)); [ $left -lt 0 ] && left=0
sleep $left & wait $!
echo "end $(date +%s)" >> "$d/$name.log"
`

func workload() []workJob {
	ckpt := "huitian: checkpointable=true checkpoint-cost=5s user=carol class=search"
	long := "huitian: user=alice class=training"
	w := []workJob{
		{name: "p1-a-hold-short", nodes: 1, perNode: 8, runtime: 15, limit: 30, opts: long},
		{name: "p1-b-hold-long", nodes: 1, perNode: 8, runtime: 180, limit: 60, opts: long},
		{name: "p1-c-hold-long", nodes: 1, perNode: 8, runtime: 180, limit: 60, opts: long},
		{name: "p1-d-big16", nodes: 2, perNode: 8, runtime: 30, limit: 10, opts: "huitian: user=bob class=training backfill=opt-out"},
		{name: "p1-e-ckpt", nodes: 1, perNode: 8, runtime: 240, limit: 15, ckpt: true, opts: ckpt},
	}
	sizes := [][2]int{{1, 1}, {1, 2}, {1, 1}, {1, 4}, {2, 2}, {1, 8}, {1, 1}, {2, 4}, {1, 2}, {1, 3}, {2, 8}, {1, 1}}
	for i := range 44 {
		s := sizes[i%len(sizes)]
		rt := 4 + (i*7)%13
		o := fmt.Sprintf("huitian: user=%s class=%s", []string{"alice", "bob", "dave", "erin"}[i%4], []string{"evaluation", "preprocessing", "training"}[i%3])
		ck := i%5 == 0
		if ck {
			o += " checkpointable=true checkpoint-cost=2s"
		}
		w = append(w, workJob{name: fmt.Sprintf("p2-%02d", i), nodes: s[0], perNode: s[1], runtime: rt, limit: 1 + rt/30, ckpt: ck, opts: o,
			at: 90*time.Second + time.Duration(i)*time.Second})
	}
	return w
}

// run is one run of a job as the poller saw it.
type run struct {
	job, restart    int64
	name            string
	planned, got    string // AdminComment c= and g=
	differs         bool   // the driver told the user Slurm gave other GPUs
	start, lastSeen time.Time
	slurmStart      int64
	allocs          []slurm.Alloc
}

type poller struct {
	mu        sync.Mutex
	runs      map[string]*run // job/restart
	final     map[int64]slurm.Job
	names     map[int64]string
	violation []string
	suspended map[int64]bool
	polls     int
}

func (p *poller) poll() error {
	out, err := exec.Command("squeue", "--json", "-t", "all").Output()
	if err != nil {
		return err
	}
	jobs, err := slurm.ParseQueue(out)
	if err != nil {
		return err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.polls++
	holder := map[string]string{}
	for _, j := range jobs {
		if strings.Contains(j.AdminComment, "preempted (SUSPEND)") {
			p.suspended[j.ID] = true
		}
		st := strings.ToUpper(j.State)
		if strings.HasPrefix(st, "COMPLETED") || strings.HasPrefix(st, "FAILED") || strings.HasPrefix(st, "TIMEOUT") || strings.HasPrefix(st, "CANCELLED") {
			p.final[j.ID] = j
		}
		if st != "RUNNING" && st != "COMPLETING" {
			continue
		}
		as, err := j.Allocs()
		if err != nil {
			continue
		}
		key := fmt.Sprintf("%d/%d", j.ID, j.Restarts)
		r := p.runs[key]
		if r == nil {
			r = &run{job: j.ID, restart: int64(j.Restarts), name: j.Name, start: now, slurmStart: j.StartTime, allocs: as}
			p.runs[key] = r
		}
		r.lastSeen = now
		if c := stateField(j.AdminComment, "c"); c != "" {
			r.planned = c
		}
		if g := stateField(j.AdminComment, "g"); g != "" {
			r.got = g
		}
		r.differs = r.differs || strings.Contains(j.AdminComment, "Slurm gave GPUs")
		for _, a := range as {
			for _, g := range a.GPUs {
				k := fmt.Sprintf("%s/%d", a.Node, g)
				if h, ok := holder[k]; ok {
					p.violation = append(p.violation, fmt.Sprintf("%s: GPU %s held by job %s and job %d at once", now.Format(time.TimeOnly), k, h, j.ID))
				}
				holder[k] = strconv.FormatInt(j.ID, 10)
			}
		}
	}
	return nil
}

// stateField reads key=value from the {hx …} state of an AdminComment.
func stateField(admin, key string) string {
	i := strings.LastIndex(admin, "{hx")
	if i < 0 {
		return ""
	}
	for w := range strings.FieldsSeq(strings.TrimSuffix(admin[i+3:], "}")) {
		if v, ok := strings.CutPrefix(w, key+"="); ok {
			return v
		}
	}
	return ""
}

func encode(as []slurm.Alloc) string {
	var parts []string
	for _, a := range as {
		s := make([]string, len(a.GPUs))
		for i, g := range a.GPUs {
			s[i] = strconv.Itoa(g)
		}
		parts = append(parts, a.Node+":"+strings.Join(s, ","))
	}
	sort.Strings(parts)
	return strings.Join(parts, ";")
}

func sbatch(t *testing.T, e env, scriptPath string, w workJob) int64 {
	args := []string{"--parsable", "-p", "huitian", "-J", w.name, "-N", strconv.Itoa(w.nodes), "--gres=gpu:" + strconv.Itoa(w.perNode),
		"-t", strconv.Itoa(w.limit), "--comment", w.opts, "--chdir", e.runDir, "-o", filepath.Join(e.runDir, w.name+".out"),
		"--export=ALL,E2E_DIR=" + e.runDir, scriptPath, w.name, strconv.Itoa(w.runtime), map[bool]string{true: "1", false: "0"}[w.ckpt]}
	out, err := exec.Command("sbatch", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("sbatch %s: %v: %s", w.name, err, out)
	}
	id, err := strconv.ParseInt(strings.TrimSpace(strings.Split(string(out), ";")[0]), 10, 64)
	if err != nil {
		t.Fatalf("sbatch %s: %q", w.name, out)
	}
	return id
}

func TestSlurm(t *testing.T) {
	e := getenv(t)
	t0 := time.Now()
	scriptPath := filepath.Join(e.runDir, "job.sh")
	if err := os.WriteFile(scriptPath, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}

	// 1. huitian serve and huitian slurm (huitian mode only).
	var c interface {
		GetJobInsight(context.Context, *connect.Request[pb.GetJobInsightRequest]) (*connect.Response[pb.GetJobInsightResponse], error)
	}
	var driver *e2etest.Proc
	if e.mode == "huitian" {
		serve := &e2etest.Proc{T: t, Name: "huitian serve", Log: filepath.Join(e.runDir, "serve.log"),
			Args: []string{e.huitian, "serve", "--listen", "127.0.0.1:0", "--data", filepath.Join(e.runDir, "huitian-data"), "--default-policy", "huitian"}}
		serve.Start()
		t.Cleanup(func() {
			if err := serve.Stop(); err != nil {
				t.Errorf("huitian serve: %v", err)
			}
		})
		url := e2etest.ServeURL(t, serve)
		c = client.New(url)
		driver = &e2etest.Proc{T: t, Name: "huitian slurm", Log: filepath.Join(e.runDir, "slurm.log"),
			Args: []string{e.huitian, "slurm", "--server", url, "--partition", "huitian", "--interval", interval.String(), "--policy", "huitian", "--log-level", "debug"}}
		driver.Start()
		t.Cleanup(func() {
			if t.Failed() {
				b, _ := os.ReadFile(driver.Log)
				lines := strings.Split(string(b), "\n")
				t.Logf("last lines of %s:\n%s", driver.Log, strings.Join(lines[max(0, len(lines)-40):], "\n"))
			}
			if err := driver.Stop(); err != nil {
				t.Errorf("huitian slurm: %v", err)
			}
		})
	}

	// 2. Poll Slurm twice a second: who holds which GPU.
	p := &poller{runs: map[string]*run{}, final: map[int64]slurm.Job{}, names: map[int64]string{}, suspended: map[int64]bool{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if err := p.poll(); err != nil {
				t.Logf("poll: %v", err)
			}
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	// 3. The workload, each job at its time; the driver restarted once.
	work := workload()
	ids := map[string]int64{}
	var bigEst time.Time
	submitted := 0
	for submitted < len(work) {
		w := work[submitted]
		if time.Since(t0) < w.at {
			p.mu.Lock()
			bigRunning := p.runs[fmt.Sprintf("%d/0", ids["p1-d-big16"])] != nil
			p.mu.Unlock()
			if c != nil && ids["p1-d-big16"] != 0 && !bigRunning {
				if in, err := c.GetJobInsight(context.Background(), connect.NewRequest(&pb.GetJobInsightRequest{ClusterId: "slurm", JobId: strconv.FormatInt(ids["p1-d-big16"], 10)})); err == nil &&
					in.Msg.GetInsight().GetState() == pb.JobState_JOB_STATE_RESERVED {
					bigEst = in.Msg.GetInsight().GetEstimatedStart().AsTime()
				}
			}
			time.Sleep(200 * time.Millisecond)
			continue
		}
		ids[w.name] = sbatch(t, e, scriptPath, w)
		p.mu.Lock()
		p.names[ids[w.name]] = w.name
		p.mu.Unlock()
		submitted++
		if driver != nil && w.name == "p2-20" {
			if err := driver.Stop(); err != nil {
				t.Errorf("stop huitian slurm: %v", err)
			}
			driver.Start()
		}
	}
	t.Logf("%d jobs submitted in %s", len(work), time.Since(t0).Round(time.Second))

	// 4. Every job completes; the reservation is watched until the 16-GPU job starts.
	e2etest.WaitFor(t, "every job to complete", 8*time.Minute, 500*time.Millisecond, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		big := ids["p1-d-big16"]
		if c != nil && p.runs[fmt.Sprintf("%d/0", big)] == nil {
			if in, err := c.GetJobInsight(context.Background(), connect.NewRequest(&pb.GetJobInsightRequest{ClusterId: "slurm", JobId: strconv.FormatInt(big, 10)})); err == nil &&
				in.Msg.GetInsight().GetState() == pb.JobState_JOB_STATE_RESERVED {
				bigEst = in.Msg.GetInsight().GetEstimatedStart().AsTime()
			}
		}
		for _, w := range work {
			j, ok := p.final[ids[w.name]]
			if !ok {
				return false
			}
			if strings.Contains(j.AdminComment, "SUSPEND notice") {
				return false // saved and exited on USR1: the driver requeues it
			}
			if !strings.HasPrefix(strings.ToUpper(j.State), "COMPLETED") {
				t.Fatalf("job %s (%d) ended %s (%s)", w.name, j.ID, j.State, j.Reason)
			}
		}
		return true
	})
	elapsed := time.Since(t0)

	// 4b. With the loop's interval at 10 minutes, the watch alone starts
	// jobs: a submitted one, and one that waits for another's end.
	if driver != nil {
		checkWakes(t, e, scriptPath, driver, p)
	}
	p.mu.Lock()
	defer p.mu.Unlock()

	// 5. The checks.
	for _, v := range p.violation {
		t.Error(v)
	}
	results := measure(t, e, work, ids, p, t0)
	if e.mode != "huitian" {
		t.Logf("Slurm's own backfill: %d jobs completed in %s", len(work), elapsed.Round(time.Second))
		return
	}
	// Every run on the GPUs the plan named, or the driver said which differ.
	exact, told := 0, 0
	for _, r := range p.runs {
		got := encode(r.allocs)
		switch {
		case r.planned == "":
			t.Errorf("job %s run %d ran without a huitian plan on %s", r.name, r.restart, got)
		case r.planned == got:
			exact++
		case r.differs && r.got == got:
			told++
		default:
			t.Errorf("job %s run %d: planned %s, Slurm gave %s, the driver recorded %q and told the user: %v", r.name, r.restart, r.planned, got, r.got, r.differs)
		}
	}
	t.Logf("%d runs on exactly the planned GPUs, %d where Slurm chose others within the planned nodes and the driver reported them", exact, told)
	// Within a run, what the job saw (CUDA_VISIBLE_DEVICES on its first node) is what the driver reported.
	for _, w := range work {
		b, _ := os.ReadFile(filepath.Join(e.runDir, w.name+".log"))
		for line := range strings.SplitSeq(string(b), "\n") {
			if !strings.HasPrefix(line, "start ") {
				continue
			}
			var gpus, restart string
			for f := range strings.FieldsSeq(line) {
				if v, ok := strings.CutPrefix(f, "gpus="); ok {
					gpus = v
				}
				if v, ok := strings.CutPrefix(f, "restart="); ok {
					restart = v
				}
			}
			r := p.runs[fmt.Sprintf("%d/%s", ids[w.name], restart)]
			if r == nil || len(r.allocs) == 0 {
				continue
			}
			want := make([]string, len(r.allocs[0].GPUs))
			for i, g := range r.allocs[0].GPUs {
				want[i] = strconv.Itoa(g)
			}
			if gpus != strings.Join(want, ",") {
				t.Errorf("job %s run %s saw CUDA_VISIBLE_DEVICES=%s, Slurm reported %v", w.name, restart, gpus, r.allocs[0])
			}
		}
	}
	// The 16-GPU job started by its reservation plus one cycle.
	big := p.runs[fmt.Sprintf("%d/0", ids["p1-d-big16"])]
	if big == nil {
		t.Errorf("the 16-GPU job was never seen running")
	} else {
		started := time.Unix(big.slurmStart, 0)
		if bigEst.IsZero() || started.After(bigEst.Add(interval+time.Second)) {
			t.Errorf("16-GPU job started at %s, its last estimated start was %s (one cycle is %s)", started, bigEst, interval)
		}
		t.Logf("16-GPU job: reserved from %s (the last plan before its start), started %s", bigEst.Format(time.TimeOnly), started.Format(time.TimeOnly))
	}
	// A checkpoint preemption: USR1 seen by the job, requeued, then completed.
	ck := ids["p1-e-ckpt"]
	b, _ := os.ReadFile(filepath.Join(e.runDir, "p1-e-ckpt.log"))
	// (A job that saves and exits on USR1 is COMPLETED for a moment before
	// the driver requeues it: its second run is the proof.)
	if !p.suspended[ck] || !strings.Contains(string(b), "usr1 ") || p.runs[fmt.Sprintf("%d/1", ck)] == nil {
		t.Errorf("no checkpoint preemption of p1-e-ckpt: suspended words %v, second run seen %v, its log:\n%s", p.suspended[ck], p.runs[fmt.Sprintf("%d/1", ck)] != nil, b)
	}
	t.Logf("p1-e-ckpt's log:\n%s", b)
	// No requeue without a preemption.
	for id, j := range p.final {
		if j.Restarts > 0 && !p.suspended[id] && !strings.Contains(j.AdminComment, "preempted") && p.names[id] != "" {
			t.Logf("job %s was requeued %d times (REQUEUE preemptions)", p.names[id], j.Restarts)
		}
	}
	t.Logf("huitian: %d jobs completed in %s, %d polls", len(work), elapsed.Round(time.Second), p.polls)
	_ = results
}

// checkWakes restarts the driver with a 10-minute interval and a 1 s
// watch, waits for its first cycle, then submits a job that takes every
// GPU and one that waits for it. Both must start within seconds — of the
// submission, of the first one's end — not at the next tick: only the
// watch (a squeue every --watch-interval) can bring those cycles.
func checkWakes(t *testing.T, e env, scriptPath string, driver *e2etest.Proc, p *poller) {
	const (
		watch = time.Second
		slack = 10 * time.Second // watch, MinGap, a cycle and Slurm's start, with room
	)
	if err := driver.Stop(); err != nil {
		t.Errorf("stop huitian slurm: %v", err)
	}
	cycles := func() int {
		b, _ := os.ReadFile(driver.Log)
		return strings.Count(string(b), `msg="resource-manager cycle"`)
	}
	before := cycles()
	args := slices.Clone(driver.Args)
	for i := range args {
		if args[i] == "--interval" {
			args[i+1] = (10 * time.Minute).String()
		}
	}
	driver.Args = append(args, "--watch-interval", watch.String())
	driver.Start()
	e2etest.WaitFor(t, "the restarted driver's first cycle", time.Minute, 100*time.Millisecond, func() bool { return cycles() > before })

	opts := "huitian: user=alice class=evaluation"
	jobs := []workJob{
		{name: "wake-all", nodes: 4, perNode: 8, runtime: 5, limit: 2, opts: opts},
		{name: "wake-next", nodes: 1, perNode: 8, runtime: 2, limit: 2, opts: opts},
	}
	submitted := time.Now().Truncate(time.Second) // Slurm's times are whole seconds
	var ids []int64
	for _, w := range jobs {
		id := sbatch(t, e, scriptPath, w)
		ids = append(ids, id)
		p.mu.Lock()
		p.names[id] = w.name
		p.mu.Unlock()
	}
	// The one that takes every GPU and the other cannot run together:
	// whichever the plan starts first, the second waits for its end.
	var first, second *run
	var firstEnd time.Time
	e2etest.WaitFor(t, "both wake jobs to start (only the watch wakes the loop, whose interval is 10 minutes)", 2*time.Minute, 200*time.Millisecond, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		r0, r1 := p.runs[fmt.Sprintf("%d/0", ids[0])], p.runs[fmt.Sprintf("%d/0", ids[1])]
		if r0 == nil || r1 == nil {
			return false
		}
		first, second = r0, r1
		if r1.slurmStart < r0.slurmStart {
			first, second = r1, r0
		}
		end := p.final[first.job].EndTime
		firstEnd = time.Unix(end, 0)
		return end > 0
	})
	startFirst, startSecond := time.Unix(first.slurmStart, 0), time.Unix(second.slurmStart, 0)
	if d := startFirst.Sub(submitted); d > slack {
		t.Errorf("%s started %s after its submission; the watch (%s) should have brought a cycle within %s", first.name, d, watch, slack)
	}
	if d := startSecond.Sub(firstEnd); d < 0 || d > slack {
		t.Errorf("%s started %s after %s ended; want within %s (the watch sees the end)", second.name, d, first.name, slack)
	}
	t.Logf("with a 10m interval and a %s watch: %s started %s after its submission, %s %s after %s ended",
		watch, first.name, startFirst.Sub(submitted), second.name, startSecond.Sub(firstEnd), first.name)
}

// classResult is one size class's figures.
type classResult struct {
	Class    string  `json:"class"`
	Jobs     int     `json:"jobs"`
	MeanWait float64 `json:"mean_wait_s"`
	MaxWait  float64 `json:"max_wait_s"`
	MeanBSLD float64 `json:"mean_bsld"`
}

// measure computes wait (first start − submit) and bounded slowdown
// ((end − submit) / max(runtime, 10 s)) per size class, prints them and
// writes them to E2E_RESULT.
func measure(t *testing.T, e env, work []workJob, ids map[string]int64, p *poller, t0 time.Time) []classResult {
	classOf := func(g int) string {
		switch {
		case g == 1:
			return "1"
		case g <= 4:
			return "2-4"
		case g <= 8:
			return "5-8"
		}
		return "9-16"
	}
	first := map[int64]int64{}
	for _, r := range p.runs {
		if s, ok := first[r.job]; !ok || r.slurmStart < s {
			first[r.job] = r.slurmStart
		}
	}
	type acc struct {
		n               int
		wait, max, bsld float64
	}
	by := map[string]*acc{}
	for _, w := range work {
		j := p.final[ids[w.name]]
		submit := t0.Add(w.at).Unix()
		start, ok := first[j.ID]
		if !ok {
			start = j.StartTime
		}
		wait := float64(max(start-submit, 0))
		bsld := max(1, float64(j.EndTime-submit)/float64(max(w.runtime, 10)))
		k := classOf(w.nodes * w.perNode)
		if by[k] == nil {
			by[k] = &acc{}
		}
		a := by[k]
		a.n++
		a.wait += wait
		a.max = max(a.max, wait)
		a.bsld += bsld
	}
	var out []classResult
	keys := []string{"1", "2-4", "5-8", "9-16"}
	for _, k := range keys {
		a := by[k]
		if a == nil {
			continue
		}
		out = append(out, classResult{Class: k, Jobs: a.n, MeanWait: a.wait / float64(a.n), MaxWait: a.max, MeanBSLD: a.bsld / float64(a.n)})
	}
	out = slices.Clip(out)
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %-6s %5s %12s %11s %10s\n", "mode", "class", "jobs", "mean wait s", "max wait s", "mean bsld")
	for _, r := range out {
		fmt.Fprintf(&b, "%-8s %-6s %5d %12.1f %11.0f %10.2f\n", e.mode, r.Class, r.Jobs, r.MeanWait, r.MaxWait, r.MeanBSLD)
	}
	t.Logf("wait and bounded slowdown per size class (GPUs):\n%s", b.String())
	if e.result != "" {
		j, _ := json.MarshalIndent(out, "", "  ")
		if err := os.WriteFile(e.result, j, 0o644); err != nil {
			t.Errorf("write %s: %v", e.result, err)
		}
	}
	return out
}
