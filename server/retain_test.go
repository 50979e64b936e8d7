package server

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// rmJob is a job the test's resource manager runs.
type rmJob struct {
	spec  *pb.JobSpec
	kind  pb.AllocationKind
	cards []*pb.CardRef
	start time.Time
	ends  time.Time
}

// miniRM is a resource manager for one cluster of 4×8 cards: it submits
// jobs, starts what a plan starts, requeues what it preempts, finishes
// jobs at 20–100% of their limit, and reports every event and some
// progress. Simulated time moves step a cycle.
type miniRM struct {
	id      string
	policy  pb.Policy
	now     time.Time
	step    time.Duration
	rng     *rand.Rand
	next    int
	queued  []*pb.JobSpec
	running map[string]*rmJob
	events  []*pb.JobEvent
	ended   []string    // finished jobs, in order
	endedAt []time.Time // when each finished
}

func newMiniRM(id string, policy pb.Policy, step time.Duration) *miniRM {
	return &miniRM{id: id, policy: policy, now: t0, step: step, rng: rand.New(rand.NewPCG(1, 2)), running: map[string]*rmJob{}}
}

func (m *miniRM) request() *pb.PlanRequest {
	for len(m.queued) < 8 {
		m.next++
		n := []int{1, 2, 4, 8, 16}[m.rng.IntN(5)]
		m.queued = append(m.queued, &pb.JobSpec{
			Id: fmt.Sprintf("j%05d", m.next), User: []string{"ann", "bob"}[m.rng.IntN(2)], JobClass: "training",
			Cards: int32(n), TimeLimit: durationpb.New(time.Duration(1+m.rng.IntN(8)) * 30 * time.Minute),
			SubmitTime: timestamppb.New(m.now), Checkpointable: m.rng.IntN(3) == 0,
		})
	}
	r := planRequest(m.id, 4)
	r.Now, r.Queued, r.Running = timestamppb.New(m.now), m.queued, nil
	r.Options = &pb.PlanOptions{Policy: m.policy, TimeBudget: durationpb.New(5 * time.Second)}
	for _, id := range sortedKeys(m.running) {
		j := m.running[id]
		r.Running = append(r.Running, &pb.RunningJob{Spec: j.spec, Cards: j.cards, StartTime: timestamppb.New(j.start), Kind: j.kind})
	}
	return r
}

func sortedKeys(m map[string]*rmJob) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// act applies a plan, then moves time on and finishes what ended.
func (m *miniRM) act(resp *pb.PlanResponse) {
	for _, p := range resp.GetPreemptions() {
		j, ok := m.running[p.GetJobId()]
		if !ok {
			continue
		}
		delete(m.running, p.GetJobId())
		m.events = append(m.events, &pb.JobEvent{JobId: p.GetJobId(), Kind: pb.JobEventKind_JOB_EVENT_KIND_PREEMPTED, Time: timestamppb.New(m.now),
			StartTime: timestamppb.New(j.start), Spec: j.spec, Allocation: j.kind, Action: p.GetAction()})
		m.queued = append(m.queued, j.spec)
	}
	started := map[string]bool{}
	for _, s := range resp.GetStarts() {
		var spec *pb.JobSpec
		for _, q := range m.queued {
			if q.GetId() == s.GetJobId() {
				spec = q
			}
		}
		if spec == nil {
			continue
		}
		started[spec.GetId()] = true
		run := time.Duration(float64(spec.GetTimeLimit().AsDuration()) * (0.2 + 0.8*m.rng.Float64())).Truncate(time.Second)
		m.running[spec.GetId()] = &rmJob{spec: spec, kind: s.GetKind(), cards: s.GetCards(), start: m.now, ends: m.now.Add(run)}
		m.events = append(m.events, &pb.JobEvent{JobId: spec.GetId(), Kind: pb.JobEventKind_JOB_EVENT_KIND_STARTED, Time: timestamppb.New(m.now),
			Spec: spec, Allocation: s.GetKind()})
	}
	kept := m.queued[:0]
	for _, q := range m.queued {
		if !started[q.GetId()] {
			kept = append(kept, q)
		}
	}
	m.queued = kept
	m.now = m.now.Add(m.step)
	for _, id := range sortedKeys(m.running) {
		j := m.running[id]
		if j.ends.After(m.now) {
			if m.rng.IntN(4) == 0 {
				m.events = append(m.events, &pb.JobEvent{JobId: id, Kind: pb.JobEventKind_JOB_EVENT_KIND_PROGRESS, Time: timestamppb.New(m.now),
					StartTime: timestamppb.New(j.start), Spec: j.spec, Allocation: j.kind, Progress: 0.5})
			}
			continue
		}
		delete(m.running, id)
		m.ended, m.endedAt = append(m.ended, id), append(m.endedAt, j.ends)
		m.events = append(m.events, &pb.JobEvent{JobId: id, Kind: pb.JobEventKind_JOB_EVENT_KIND_FINISHED, Time: timestamppb.New(j.ends),
			StartTime: timestamppb.New(j.start), Spec: j.spec, Allocation: j.kind, Exit: pb.ExitState_EXIT_STATE_COMPLETED})
	}
}

// cycle plans on every server (the first one's plan drives the cluster),
// reports the events, and returns the plans.
func (m *miniRM) cycle(t *testing.T, servers ...*testServer) []*pb.PlanResponse {
	t.Helper()
	ctx := context.Background()
	req := m.request()
	var out []*pb.PlanResponse
	for _, ts := range servers {
		resp, err := ts.client().Plan(ctx, connect.NewRequest(req))
		if err != nil {
			t.Fatalf("%s: Plan: %v", m.id, err)
		}
		resp.Msg.Stats.SolveTime = nil
		out = append(out, resp.Msg)
	}
	m.act(out[0])
	if len(m.events) > 0 {
		for _, ts := range servers {
			if _, err := ts.client().ReportEvents(ctx, connect.NewRequest(&pb.ReportEventsRequest{ClusterId: m.id, Events: m.events})); err != nil {
				t.Fatalf("%s: ReportEvents: %v", m.id, err)
			}
		}
		m.events = nil
	}
	return out
}

// answers is what a service says about a cluster: its status, its job
// list and every listed or recently finished job's insight.
func answers(t *testing.T, ts *testServer, m *miniRM, recent []string) map[string]any {
	t.Helper()
	ctx := context.Background()
	out := map[string]any{}
	st, err := ts.client().GetStatus(ctx, connect.NewRequest(&pb.GetStatusRequest{ClusterId: m.id}))
	if err != nil {
		t.Fatalf("GetStatus: %v", err)
	}
	if st.Msg.GetLastStats() != nil {
		st.Msg.LastStats.SolveTime = nil
	}
	out["status"] = st.Msg
	lj, err := ts.client().ListJobs(ctx, connect.NewRequest(&pb.ListJobsRequest{ClusterId: m.id, PageSize: 1000}))
	if err != nil {
		t.Fatalf("ListJobs: %v", err)
	}
	out["list"] = lj.Msg
	ids := append([]string(nil), recent...)
	for _, in := range lj.Msg.GetJobs() {
		ids = append(ids, in.GetJobId())
	}
	for _, id := range ids {
		in, err := ts.client().GetJobInsight(ctx, connect.NewRequest(&pb.GetJobInsightRequest{ClusterId: m.id, JobId: id}))
		if err != nil {
			t.Fatalf("GetJobInsight %s: %v", id, err)
		}
		out["job "+id] = in.Msg
	}
	return out
}

// TestTrimmedStoreAnswersAsUntrimmed drives one service that trims its
// history hard (an hour, one whole plan) and one that keeps everything
// with the same cycles of an EASY and a huitian cluster: every plan, the
// status, the job list and the insight of every listed job and every job
// finished within the hour are the same, before and after both restart.
// The trimming service did trim (finished jobs' states, the EASY log).
func TestTrimmedStoreAnswersAsUntrimmed(t *testing.T) {
	trim := start(t, func(c *Config) { c.Retention = Retention{Retain: time.Hour, Plans: 1} })
	keep := start(t, func(c *Config) { c.Retention = Retention{} })
	rms := []*miniRM{
		newMiniRM("easy", pb.Policy_POLICY_EASY, 5*time.Minute),
		newMiniRM("hui", pb.Policy_POLICY_HUITIAN_GREEDY, 5*time.Minute),
	}
	const cycles = 200 // 16.7 h of cluster time: 3 trims, the last with 15 h to drop
	for i := range cycles {
		for _, m := range rms {
			got := m.cycle(t, trim, keep)
			if diff := cmp.Diff(got[1], got[0], protocmp.Transform()); diff != "" {
				t.Fatalf("%s cycle %d: the trimmed service planned differently (-kept +trimmed):\n%s", m.id, i, diff)
			}
		}
	}
	// The last five jobs that finished within the retained hour (a long
	// job can hold the cluster so that fewer did).
	recent := func(m *miniRM) []string {
		var out []string
		for i := len(m.ended) - 1; i >= 0 && len(out) < 5; i-- {
			if m.endedAt[i].After(m.now.Add(-time.Hour)) {
				out = append(out, m.ended[i])
			}
		}
		return out
	}
	compare := func(when string, a, b *testServer) {
		for _, m := range rms {
			// How each planner began differs, by design: the trimmed
			// service restores saved memory, the other replays its log.
			if diff := cmp.Diff(answers(t, b, m, recent(m)), answers(t, a, m, recent(m)), protocmp.Transform(),
				protocmp.IgnoreFields(&pb.GetStatusResponse{}, "memory")); diff != "" {
				t.Errorf("%s, %s: the trimmed service answers differently (-kept +trimmed):\n%s", when, m.id, diff)
			}
		}
	}
	compare("before restart", trim, keep)

	// The trimming service dropped history: the oldest finished job is
	// gone from it, not from the other.
	ctx := context.Background()
	first := rms[0].ended[0]
	if _, err := trim.client().GetJobInsight(ctx, connect.NewRequest(&pb.GetJobInsightRequest{ClusterId: "easy", JobId: first})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("job %s finished 15 h before the last trim: got %v from the trimmed service, want NotFound", first, err)
	}
	if _, err := keep.client().GetJobInsight(ctx, connect.NewRequest(&pb.GetJobInsightRequest{ClusterId: "easy", JobId: first})); err != nil {
		t.Errorf("job %s from the service that keeps all: %v", first, err)
	}

	for _, ts := range []*testServer{trim, keep} {
		if err := ts.stop(); err != nil {
			t.Fatal(err)
		}
	}
	trim2, keep2 := startAt(t, trim.cfg), startAt(t, keep.cfg)
	for i := range 3 {
		for _, m := range rms {
			got := m.cycle(t, trim2, keep2)
			if diff := cmp.Diff(got[1], got[0], protocmp.Transform()); diff != "" {
				t.Fatalf("%s cycle %d after restart: the trimmed service planned differently (-kept +trimmed):\n%s", m.id, i, diff)
			}
		}
	}
	compare("after restart", trim2, keep2)
}

// dataBytes is what the store holds: every key and value, every bucket.
func dataBytes(t *testing.T, ts *testServer) int64 {
	t.Helper()
	var n int64
	var walk func(b *bolt.Bucket)
	walk = func(b *bolt.Bucket) {
		b.ForEach(func(k, v []byte) error {
			n += int64(len(k) + len(v))
			if v == nil {
				walk(b.Bucket(k))
			}
			return nil
		})
	}
	err := ts.store.(*boltStore).db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error { walk(b); return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStoreStaysBounded: an EASY cluster's store, and a huitian cluster's
// (whose planner's memory is saved, so that its log is trimmed too), stop
// growing once their history reaches the retention, while the same cycles
// grow a store that keeps everything; bytes held (every key and value),
// not time. The file (bbolt reuses freed pages) stays within a doubling of
// its size.
func TestStoreStaysBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("400 plan cycles on two services")
	}
	for _, policy := range []pb.Policy{pb.Policy_POLICY_EASY, pb.Policy_POLICY_HUITIAN} {
		t.Run(policy.String(), func(t *testing.T) {
			trim := start(t, func(c *Config) { c.Retention = Retention{Retain: time.Hour, Plans: 10} })
			keep := start(t, func(c *Config) { c.Retention = Retention{} })
			m := newMiniRM("c", policy, 10*time.Minute)
			var trimmed, kept []int64
			const cycles, every = 400, 100
			for i := range cycles {
				m.cycle(t, trim, keep)
				if (i+1)%every == 0 {
					trimmed = append(trimmed, dataBytes(t, trim))
					kept = append(kept, dataBytes(t, keep))
				}
			}
			file := storeBytes(t, trim.cfg.DataDir)
			t.Logf("bytes held every %d cycles (%d jobs finished): trimmed %v (file %d), kept %v (file %d)",
				every, len(m.ended), trimmed, file, kept, storeBytes(t, keep.cfg.DataDir))
			// Trims come every 64 plans: what is held swings between them.
			// Bound it by twice the largest of the first 200 cycles (33 h
			// against an hour's retention).
			bound := 2 * max(trimmed[0], trimmed[1])
			for i, b := range trimmed {
				if b > bound {
					t.Errorf("cycle %d: the trimmed store holds %d bytes, above %d", (i+1)*every, b, bound)
				}
			}
			if file > 512<<10 {
				t.Errorf("the trimmed store's file is %d bytes", file)
			}
			// It grows over the last 200 cycles by at least what the
			// first 100 left in it.
			if last := kept[len(kept)-1]; last-kept[1] < kept[0] {
				t.Errorf("the store that keeps everything held %d bytes at cycle %d, %d at cycle %d and %d at the end: the test does not load the store", kept[0], every, kept[1], 2*every, last)
			}
		})
	}
}

// storeBytes is the store's file size.
func storeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dir, "huitian.db"))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestRetentionRefusesWhatIsNoShare: the compaction threshold is a share
// in [0, 1]; NaN compared false both ways and was accepted.
func TestRetentionRefusesWhatIsNoShare(t *testing.T) {
	for _, f := range []float64{-2, 1.5, math.NaN(), math.Inf(1)} {
		if err := (Retention{CompactFree: f}).validate(); err == nil || !strings.Contains(err.Error(), "compact free") {
			t.Errorf("CompactFree %g: %v, want refused", f, err)
		}
	}
	for _, f := range []float64{0, 0.5, 1} {
		if err := (Retention{CompactFree: f}).validate(); err != nil {
			t.Errorf("CompactFree %g: %v", f, err)
		}
	}
}
