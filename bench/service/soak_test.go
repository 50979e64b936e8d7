package service_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/huitian/huitian/client"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/proto/huitian/v1/huitianv1connect"
)

// SoakEnv names the soak's duration ("10m", "3m"); BenchmarkSoak skips
// without it, so `make bench-service` stays short. `make bench-soak` sets it.
const SoakEnv = "HUITIAN_SOAK"

const (
	soakClients = 64
	// soakMaxGrowth is the most the anonymous resident set may grow from
	// the end of the warm-up (the first quarter) to the end, as a ratio.
	soakMaxGrowth = 1.15
)

// The RPCs of PlannerService, in the order the report lists them.
const (
	rpcPlan = iota
	rpcReportEvents
	rpcGetJobInsight
	rpcListJobs
	rpcGetStatus
	rpcWhatIf
	numRPCs
)

var rpcNames = [numRPCs]string{"Plan", "ReportEvents", "GetJobInsight", "ListJobs", "GetStatus", "WhatIf"}

// rpcWeights is the mix: each turn a client picks one RPC with these
// weights (ReportEvents sends the events since the last report, or a
// progress report; with nothing running, a Plan instead).
// WhatIf runs a small simulation, so it is rare and at most one at a time.
var rpcWeights = [numRPCs]int{rpcPlan: 25, rpcReportEvents: 25, rpcGetJobInsight: 20, rpcListJobs: 12, rpcGetStatus: 16, rpcWhatIf: 2}

// BenchmarkSoak runs 64 clients for $HUITIAN_SOAK against one service,
// each a resource manager of its own 128-card cluster: it plans, starts
// what the plan starts, finishes and requeues jobs, reports the events,
// and in between reads insights, job lists and status, and now and then
// asks for a what-if. It reports calls, errors, p50 and p99 latency per
// RPC, and the process's memory over time (resident set, anonymous and
// file-backed; live heap; the store's size), and fails when any call
// failed, a plan was inconsistent, or the anonymous resident set grew by
// more than 15% after the warm-up (the first quarter of the run): the
// ratio of the end to the end of the warm-up, not an absolute figure. The
// process holds both the service and its clients, so its memory is an
// upper bound on the service's.
func BenchmarkSoak(b *testing.B) {
	d, ok := soakDuration(b)
	if !ok {
		b.Skipf("set %s to a duration (e.g. %s=10m) to run the soak; `make bench-soak` does", SoakEnv, SoakEnv)
	}
	for b.Loop() {
		runSoak(b, d)
	}
}

func soakDuration(b *testing.B) (time.Duration, bool) {
	v := os.Getenv(SoakEnv)
	if v == "" {
		return 0, false
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		b.Fatalf("%s=%q: want a positive duration such as 10m", SoakEnv, v)
	}
	return d, true
}

// say prints one line of the soak's report.
func say(format string, args ...any) { fmt.Printf(format+"\n", args...) }

// rpcStats is one RPC's record in one client; merged at the end.
type rpcStats struct {
	lat  []time.Duration
	errs map[string]int
}

func (s *rpcStats) add(took time.Duration, err error) {
	s.lat = append(s.lat, took)
	if err != nil {
		if s.errs == nil {
			s.errs = map[string]int{}
		}
		s.errs[errCode(err)]++
	}
}

func errCode(err error) string {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce.Code().String()
	}
	return "transport"
}

// memSample is the process's memory at one moment of the soak.
type memSample struct {
	at time.Duration
	// rssMiB is the resident set: anonMiB (the heap, stacks, the C
	// heap) plus fileMiB (mapped files, mostly the store, which bbolt
	// maps whole and which grows with every event and plan).
	rssMiB, anonMiB, fileMiB float64
	// heapMiB is the Go heap live after the last GC.
	heapMiB   float64
	storeMiB  float64
	goroutine uint64
}

func runSoak(b *testing.B, d time.Duration) {
	dir := b.TempDir()
	store := filepath.Join(dir, "huitian.db")
	url, _ := serveIn(b, dir)
	ctx := context.Background()

	// 1. Warm the service once per RPC, so a broken one fails fast.
	probe := newSoakCluster(-1)
	c := client.New(url)
	if _, err := c.Plan(ctx, connect.NewRequest(probe.planRequest())); err != nil {
		b.Fatalf("Plan: %v", err)
	}
	if err := runWhatIf(ctx, c); err != nil {
		b.Fatalf("WhatIf: %v", err)
	}

	// 2. Sample memory while the clients run.
	every := max(d/60, time.Second)
	var (
		samples []memSample
		start   = time.Now()
		end     = start.Add(d)
		stop    = make(chan struct{})
		sampled = make(chan struct{})
	)
	go func() {
		defer close(sampled)
		t := time.NewTicker(every)
		defer t.Stop()
		samples = append(samples, sampleMem(0, store))
		for {
			select {
			case <-stop:
				samples = append(samples, sampleMem(time.Since(start), store))
				return
			case <-t.C:
				samples = append(samples, sampleMem(time.Since(start), store))
			}
		}
	}()

	// 3. Run the clients.
	var (
		wg       sync.WaitGroup
		perCl    = make([][numRPCs]rpcStats, soakClients)
		whatIfOn atomic.Bool
		problems = make([][]string, soakClients)
	)
	for i := range soakClients {
		wg.Go(func() {
			cl := newSoakCluster(i)
			pc := client.New(url) // a connection of its own, as a resource manager has
			st := &perCl[i]
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for time.Now().Before(end) {
				rpc := pick(rng)
				if rpc == rpcReportEvents && len(cl.events) == 0 && !cl.progress() {
					rpc = rpcPlan
				}
				if rpc == rpcWhatIf && !whatIfOn.CompareAndSwap(false, true) {
					rpc = rpcGetStatus
				}
				t0 := time.Now()
				var err error
				switch rpc {
				case rpcPlan:
					var resp *connect.Response[pb.PlanResponse]
					resp, err = pc.Plan(ctx, connect.NewRequest(cl.planRequest()))
					if err == nil {
						if p := cl.apply(resp.Msg); p != "" && len(problems[i]) < 5 {
							problems[i] = append(problems[i], p)
						}
					}
				case rpcReportEvents:
					evs := cl.events
					var resp *connect.Response[pb.ReportEventsResponse]
					resp, err = pc.ReportEvents(ctx, connect.NewRequest(&pb.ReportEventsRequest{ClusterId: cl.id, Events: evs}))
					if err == nil {
						cl.events = nil
						if got := resp.Msg.Accepted + resp.Msg.Duplicates; int(got) != len(evs) && len(problems[i]) < 5 {
							problems[i] = append(problems[i], fmt.Sprintf("ReportEvents: %d of %d events answered", got, len(evs)))
						}
					}
				case rpcGetJobInsight:
					_, err = pc.GetJobInsight(ctx, connect.NewRequest(&pb.GetJobInsightRequest{ClusterId: cl.id, JobId: cl.someJob(rng)}))
					if connect.CodeOf(err) == connect.CodeNotFound && cl.plans == 0 {
						err = nil // asked before its first plan
					}
				case rpcListJobs:
					req := &pb.ListJobsRequest{ClusterId: cl.id, PageSize: 50}
					if rng.IntN(2) == 0 {
						req.States = []pb.JobState{pb.JobState_JOB_STATE_RUNNING}
					}
					_, err = pc.ListJobs(ctx, connect.NewRequest(req))
					if connect.CodeOf(err) == connect.CodeNotFound && cl.plans == 0 {
						err = nil
					}
				case rpcGetStatus:
					_, err = pc.GetStatus(ctx, connect.NewRequest(&pb.GetStatusRequest{ClusterId: cl.id}))
					if connect.CodeOf(err) == connect.CodeNotFound && cl.plans == 0 {
						err = nil
					}
				case rpcWhatIf:
					err = runWhatIf(ctx, pc)
					whatIfOn.Store(false)
				}
				st[rpc].add(time.Since(t0), err)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stop)
	<-sampled

	// 4. Report (on stdout: the testing package keeps only ten lines of
	// a benchmark's log).
	say("soak: %d clients for %s (GOMAXPROCS-bound; one process holds the service and the clients)", soakClients, elapsed.Round(time.Second))
	var all [numRPCs]rpcStats
	for i := range perCl {
		for r := range numRPCs {
			all[r].lat = append(all[r].lat, perCl[i][r].lat...)
			for code, n := range perCl[i][r].errs {
				if all[r].errs == nil {
					all[r].errs = map[string]int{}
				}
				all[r].errs[code] += n
			}
		}
	}
	say("%-14s %9s %8s %7s %9s %9s  %s", "rpc", "calls", "calls/s", "errors", "p50 ms", "p99 ms", "error codes")
	var failed int
	for r := range numRPCs {
		lat := all[r].lat
		slices.Sort(lat)
		var nerr int
		var codes []string
		for code, n := range all[r].errs {
			nerr += n
			codes = append(codes, fmt.Sprintf("%s:%d", code, n))
		}
		slices.Sort(codes)
		failed += nerr
		p50, p99 := quantile(lat, 0.50), quantile(lat, 0.99)
		say("%-14s %9d %8.1f %7d %9.2f %9.2f  %s", rpcNames[r], len(lat), float64(len(lat))/elapsed.Seconds(), nerr, ms(p50), ms(p99), strings.Join(codes, " "))
		b.ReportMetric(ms(p50), rpcNames[r]+"-p50-ms")
		b.ReportMetric(ms(p99), rpcNames[r]+"-p99-ms")
		b.ReportMetric(float64(nerr), rpcNames[r]+"-errors")
	}
	for i, ps := range problems {
		for _, p := range ps {
			b.Errorf("client %d: %s", i, p)
		}
	}
	if failed > 0 {
		b.Errorf("%d calls failed", failed)
	}
	reportMem(b, samples, d/4)
}

// reportMem prints the memory samples (about ten rows), fits lines to
// the resident set and its parts after warmUp, and fails when the
// anonymous resident set (everything but mapped files) at the end is more
// than soakMaxGrowth times that at the end of the warm-up (each the mean
// of three samples, against noise). The mapped store is reported, not
// judged: it grows with what the service stores (on disk, by design), and
// its pages are the kernel's to drop.
func reportMem(b *testing.B, samples []memSample, warmUp time.Duration) {
	if len(samples) == 0 || samples[0].rssMiB == 0 {
		say("no resident-set samples (not Linux?): memory not judged")
		return
	}
	say("%8s %9s %9s %9s %13s %10s %10s", "t", "rss MiB", "anon MiB", "file MiB", "live heap MiB", "store MiB", "goroutines")
	step := max(len(samples)/10, 1)
	for i, s := range samples {
		if i%step == 0 || i == len(samples)-1 {
			say("%8s %9.1f %9.1f %9.1f %13.1f %10.1f %10d", s.at.Round(time.Second), s.rssMiB, s.anonMiB, s.fileMiB, s.heapMiB, s.storeMiB, s.goroutine)
		}
	}
	var after []memSample
	for _, s := range samples {
		if s.at >= warmUp {
			after = append(after, s)
		}
	}
	if len(after) < 6 {
		say("only %d samples after the warm-up: memory not judged", len(after))
		return
	}
	field := []struct {
		name string
		get  func(memSample) float64
	}{
		{"rss", func(s memSample) float64 { return s.rssMiB }},
		{"anon", func(s memSample) float64 { return s.anonMiB }},
		{"file", func(s memSample) float64 { return s.fileMiB }},
		{"live heap", func(s memSample) float64 { return s.heapMiB }},
		{"store", func(s memSample) float64 { return s.storeMiB }},
	}
	say("after the warm-up (%s):", warmUp.Round(time.Second))
	var anonRatio float64
	for _, f := range field {
		first, last := mean(after[:3], f.get), mean(after[len(after)-3:], f.get)
		sl := slope(after, f.get)
		say("  %-9s %7.1f → %7.1f MiB (×%.3f), slope %+6.2f MiB/min (%+.2f%%/min)", f.name, first, last, last/first, sl, 100*sl/first)
		b.ReportMetric(sl, strings.ReplaceAll(f.name, " ", "-")+"-MiB/min")
		if f.name == "anon" {
			anonRatio = last / first
			b.ReportMetric(anonRatio, "anon-end/warm")
		}
	}
	if anonRatio > soakMaxGrowth {
		b.Errorf("the anonymous resident set grew ×%.3f after the warm-up (limit ×%.2f): not flat", anonRatio, soakMaxGrowth)
	}
}

func mean(s []memSample, f func(memSample) float64) float64 {
	var sum float64
	for _, x := range s {
		sum += f(x)
	}
	return sum / float64(len(s))
}

// slope is the least-squares slope of f over time, per minute.
func slope(s []memSample, f func(memSample) float64) float64 {
	var n, sx, sy, sxx, sxy float64
	for _, x := range s {
		t := x.at.Minutes()
		y := f(x)
		n++
		sx += t
		sy += y
		sxx += t * t
		sxy += t * y
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / den
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(int(q*float64(len(sorted))), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func pick(rng *rand.Rand) int {
	total := 0
	for _, w := range rpcWeights {
		total += w
	}
	n := rng.IntN(total)
	for r, w := range rpcWeights {
		if n < w {
			return r
		}
		n -= w
	}
	return rpcPlan
}

// sampleMem reads the resident set (VmRSS of /proc/self/status; 0 where
// there is none), the Go heap's live objects and the goroutines.
func sampleMem(at time.Duration, store string) memSample {
	s := memSample{at: at}
	if f, err := os.Open("/proc/self/status"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			key, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			switch key {
			case "VmRSS":
				s.rssMiB = kb / 1024
			case "RssAnon":
				s.anonMiB = kb / 1024
			case "RssFile":
				s.fileMiB = kb / 1024
			}
		}
		f.Close()
	}
	if st, err := os.Stat(store); err == nil {
		s.storeMiB = float64(st.Size()) / (1 << 20)
	}
	m := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/sched/goroutines:goroutines"}}
	metrics.Read(m)
	s.heapMiB = float64(m[0].Value.Uint64()) / (1 << 20)
	s.goroutine = m[1].Value.Uint64()
	return s
}

// runWhatIf replays 60 synthetic jobs on 4 HGX nodes under EASY and
// huitian-greedy, reading the stream to its comparison.
func runWhatIf(ctx context.Context, c huitianv1connect.PlannerServiceClient) error {
	stream, err := c.WhatIf(ctx, connect.NewRequest(&pb.WhatIfRequest{
		Trace:    &pb.WhatIfRequest_SynthSpec{SynthSpec: "synth:jobs=60,seed=3,cards=32"},
		Format:   pb.TraceFormat_TRACE_FORMAT_SYNTH,
		Cluster:  &pb.WhatIfRequest_ClusterPreset{ClusterPreset: "hgx:4"},
		Policies: []pb.Policy{pb.Policy_POLICY_EASY, pb.Policy_POLICY_HUITIAN_GREEDY},
	}))
	if err != nil {
		return err
	}
	defer stream.Close()
	var compared bool
	for stream.Receive() {
		if stream.Msg().GetComparison() != nil {
			compared = true
		}
	}
	if err := stream.Err(); err != nil {
		return err
	}
	if !compared {
		return errors.New("what-if stream ended without a comparison")
	}
	return nil
}

// soakCluster is one client's cluster as its resource manager sees it:
// 16 nodes of 8 cards under two switches, the jobs running on them, the
// queue, and the events not yet reported. Simulated time advances 30 s
// a plan. Only its own client touches it.
type soakCluster struct {
	id      string
	rng     *rand.Rand
	now     time.Time
	next    int
	plans   int
	nodes   []*pb.Node
	domains []*pb.Domain
	busy    map[string]string // "node/index" → job id
	running map[string]*soakJob
	queued  []*pb.JobSpec
	events  []*pb.JobEvent
	recent  []string // job ids seen lately, for insights
	policy  pb.Policy
}

type soakJob struct {
	spec    *pb.JobSpec
	cards   []*pb.CardRef
	start   time.Time
	ends    time.Time
	kind    pb.AllocationKind
	protect *timestamppb.Timestamp
}

const soakNodes, soakCardsPerNode = 16, 8

func newSoakCluster(i int) *soakCluster {
	c := &soakCluster{
		id:      fmt.Sprintf("soak-%02d", i),
		rng:     rand.New(rand.NewPCG(uint64(i+100), 11)),
		now:     t0,
		busy:    map[string]string{},
		running: map[string]*soakJob{},
		// Half the clusters plan with huitian (LP), half with EASY.
		policy: []pb.Policy{pb.Policy_POLICY_HUITIAN, pb.Policy_POLICY_EASY}[(i+2)%2],
	}
	if i < 0 {
		c.id = "soak-probe"
	}
	for s := range 2 {
		c.domains = append(c.domains, &pb.Domain{Id: fmt.Sprintf("leaf-%d", s), Kind: pb.DomainKind_DOMAIN_KIND_SWITCH})
	}
	for n := range soakNodes {
		node := &pb.Node{Name: fmt.Sprintf("n%02d", n), Domains: []string{fmt.Sprintf("leaf-%d", n/(soakNodes/2))}}
		for k := range soakCardsPerNode {
			node.Cards = append(node.Cards, &pb.Card{Index: int32(k), Model: "H100", NumaNode: int32(k / 4), NvlinkIsland: "nvl-" + node.Name})
		}
		c.nodes = append(c.nodes, node)
	}
	for range 24 {
		c.submit()
	}
	return c
}

var soakSizes = []int32{1, 1, 1, 1, 2, 2, 4, 8, 8, 16, 32}

// submit queues a new job: mostly small, some gangs, a third of them
// checkpointable, now and then one that opts out of backfill.
func (c *soakCluster) submit() {
	c.next++
	cards := soakSizes[c.rng.IntN(len(soakSizes))]
	j := &pb.JobSpec{
		Id: fmt.Sprintf("%s-j%07d", c.id, c.next), User: fmt.Sprintf("u%d", c.rng.IntN(6)),
		JobClass: []string{"training", "evaluation", "preprocessing", "search"}[c.rng.IntN(4)],
		Cards:    cards, TimeLimit: durationpb.New(time.Duration(5+c.rng.IntN(240)) * time.Minute),
		SubmitTime: timestamppb.New(c.now), Checkpointable: c.rng.IntN(3) == 0,
	}
	if cards >= 8 {
		j.CardsPerNode = 8
	}
	if j.Checkpointable {
		j.CheckpointCost = durationpb.New(time.Minute)
	}
	if c.rng.IntN(10) == 0 {
		j.Backfill = pb.BackfillPreference_BACKFILL_PREFERENCE_OPT_OUT
	}
	c.queued = append(c.queued, j)
	c.remember(j.Id)
}

func (c *soakCluster) remember(id string) {
	c.recent = append(c.recent, id)
	if len(c.recent) > 256 {
		c.recent = slices.Delete(c.recent, 0, 128)
	}
}

func (c *soakCluster) someJob(rng *rand.Rand) string {
	if len(c.recent) == 0 {
		return c.id + "-j0000001"
	}
	return c.recent[rng.IntN(len(c.recent))]
}

// planRequest advances the clock, finishes the jobs whose time has come
// (their events queued for ReportEvents), tops the queue up and returns
// the snapshot.
func (c *soakCluster) planRequest() *pb.PlanRequest {
	c.now = c.now.Add(30 * time.Second)
	ids := make([]string, 0, len(c.running))
	for id := range c.running {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		r := c.running[id]
		if !c.now.Before(r.ends) {
			c.release(r)
			c.events = append(c.events, &pb.JobEvent{JobId: id, Kind: pb.JobEventKind_JOB_EVENT_KIND_FINISHED, Time: timestamppb.New(r.ends),
				StartTime: timestamppb.New(r.start), Spec: r.spec, Allocation: r.kind, Exit: pb.ExitState_EXIT_STATE_COMPLETED})
		}
	}
	for len(c.queued) < 24 {
		c.submit()
	}
	req := &pb.PlanRequest{
		Now:     timestamppb.New(c.now),
		Cluster: &pb.Cluster{Id: c.id, Nodes: c.nodes, Domains: c.domains},
		Queued:  c.queued,
		Options: &pb.PlanOptions{Policy: c.policy},
	}
	ids = ids[:0]
	for id := range c.running {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		r := c.running[id]
		req.Running = append(req.Running, &pb.RunningJob{Spec: r.spec, Cards: r.cards, StartTime: timestamppb.New(r.start), Kind: r.kind, ProtectedUntil: r.protect,
			Progress: min(1, c.now.Sub(r.start).Seconds()/r.spec.TimeLimit.AsDuration().Seconds())})
	}
	return req
}

// progress queues a PROGRESS event for one running job, as a resource
// manager reports them between plans; false when nothing runs.
func (c *soakCluster) progress() bool {
	if len(c.running) == 0 {
		return false
	}
	ids := make([]string, 0, len(c.running))
	for id := range c.running {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	r := c.running[ids[c.rng.IntN(len(ids))]]
	c.now = c.now.Add(time.Second)
	c.events = append(c.events, &pb.JobEvent{JobId: r.spec.Id, Kind: pb.JobEventKind_JOB_EVENT_KIND_PROGRESS, Time: timestamppb.New(c.now),
		StartTime: timestamppb.New(r.start), Spec: r.spec, Allocation: r.kind,
		Progress: min(1, c.now.Sub(r.start).Seconds()/r.spec.TimeLimit.AsDuration().Seconds())})
	return true
}

func (c *soakCluster) release(r *soakJob) {
	for _, cr := range r.cards {
		delete(c.busy, cardKey(cr))
	}
	delete(c.running, r.spec.Id)
}

func cardKey(cr *pb.CardRef) string { return cr.Node + "/" + strconv.Itoa(int(cr.Index)) }

// apply carries the plan out: preempted jobs go back to the queue (a
// requeue counted), started ones take their cards and run for 20–100% of
// their limit. It returns what was wrong with the plan, if anything.
func (c *soakCluster) apply(resp *pb.PlanResponse) string {
	c.plans++
	for _, p := range resp.Preemptions {
		r, ok := c.running[p.JobId]
		if !ok {
			return fmt.Sprintf("Plan preempts %s, which is not running", p.JobId)
		}
		c.release(r)
		c.events = append(c.events, &pb.JobEvent{JobId: p.JobId, Kind: pb.JobEventKind_JOB_EVENT_KIND_PREEMPTED, Time: timestamppb.New(c.now),
			StartTime: timestamppb.New(r.start), Spec: r.spec, Allocation: r.kind, Action: p.Action})
		requeued := proto.CloneOf(r.spec)
		requeued.RequeueCount++
		c.queued = append(c.queued, requeued)
	}
	queued := map[string]int{}
	for i, j := range c.queued {
		queued[j.Id] = i
	}
	startedIdx := map[int]bool{}
	for _, s := range resp.Starts {
		i, ok := queued[s.JobId]
		if !ok {
			return fmt.Sprintf("Plan starts %s, which is not queued", s.JobId)
		}
		for _, cr := range s.Cards {
			if other, busy := c.busy[cardKey(cr)]; busy {
				return fmt.Sprintf("Plan starts %s on %s, held by %s", s.JobId, cardKey(cr), other)
			}
		}
		spec := c.queued[i]
		limit := spec.TimeLimit.AsDuration()
		r := &soakJob{spec: spec, cards: s.Cards, start: c.now, kind: s.Kind, protect: s.ProtectedUntil,
			ends: c.now.Add(time.Duration(float64(limit) * (0.2 + 0.8*c.rng.Float64())).Round(time.Second))}
		for _, cr := range s.Cards {
			c.busy[cardKey(cr)] = s.JobId
		}
		c.running[s.JobId] = r
		startedIdx[i] = true
		c.events = append(c.events, &pb.JobEvent{JobId: s.JobId, Kind: pb.JobEventKind_JOB_EVENT_KIND_STARTED, Time: timestamppb.New(c.now),
			Spec: spec, Allocation: s.Kind})
	}
	kept := c.queued[:0]
	for i, j := range c.queued {
		if !startedIdx[i] {
			kept = append(kept, j)
		}
	}
	c.queued = kept
	return ""
}
