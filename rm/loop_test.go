package rm_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/rm"
	"github.com/huitian/huitian/rm/rmtest"
)

// fakeJob is one job of the fake resource manager.
type fakeJob struct {
	spec    *pb.JobSpec
	runtime time.Duration // what it really runs
	run     *pb.RunningJob
	done    bool
	elapsed time.Duration // run before a suspension: resumed work goes on from there
}

// fake is a resource manager whose jobs run on the synctest clock. It checks
// what a real one would refuse: a card given twice, a start of a job that is
// not queued, a preemption of one that is not running.
type fake struct {
	t        *testing.T
	cluster  *pb.Cluster
	jobs     []*fakeJob // in submit order
	calls    []string   // "snapshot", "preempt ID", "start ID", in order
	events   []*pb.JobEvent
	held     map[string]string // "node/index" → job id
	cancel   context.CancelFunc
	acked    int
	informed int // pending jobs and reservations shown to users
}

func newFake(t *testing.T, nodes, cardsPerNode int) *fake {
	c := &pb.Cluster{Id: "fake", Domains: []*pb.Domain{{Id: "leaf", Kind: pb.DomainKind_DOMAIN_KIND_SWITCH}}}
	for n := range nodes {
		node := &pb.Node{Name: fmt.Sprintf("n%d", n), Domains: []string{"leaf"}}
		for i := range cardsPerNode {
			node.Cards = append(node.Cards, &pb.Card{Index: int32(i), Model: "H100", NumaNode: -1})
		}
		c.Nodes = append(c.Nodes, node)
	}
	return &fake{t: t, cluster: c, held: map[string]string{}}
}

// submit queues a job, a second after the one before (the queue's order).
func (f *fake) submit(id string, cards int32, limit, runtime time.Duration, ckpt bool) {
	time.Sleep(time.Second)
	f.jobs = append(f.jobs, &fakeJob{runtime: runtime, spec: &pb.JobSpec{
		Id: id, User: "u", JobClass: "training", Cards: cards, Topology: pb.Topology_TOPOLOGY_ANY,
		TimeLimit: durationpb.New(limit), Checkpointable: ckpt, CheckpointCost: durationpb.New(time.Minute),
		SubmitTime: timestamppb.New(time.Now()),
	}})
}

func (f *fake) job(id string) *fakeJob {
	for _, j := range f.jobs {
		if j.spec.GetId() == id {
			return j
		}
	}
	return nil
}

func (f *fake) release(j *fakeJob) {
	for _, c := range j.run.GetCards() {
		delete(f.held, fmt.Sprintf("%s/%d", c.GetNode(), c.GetIndex()))
	}
	j.run = nil
}

func (f *fake) Snapshot(context.Context) (*rm.Snapshot, error) {
	f.calls = append(f.calls, "snapshot")
	now := time.Now()
	s := &rm.Snapshot{Now: now, Cluster: f.cluster}
	all := true
	for _, j := range f.jobs {
		switch {
		case j.done:
		case j.run != nil:
			start := j.run.GetStartTime().AsTime()
			if end := start.Add(j.runtime - j.elapsed); !end.After(now) {
				s.Events = append(s.Events, &pb.JobEvent{JobId: j.spec.GetId(), Kind: pb.JobEventKind_JOB_EVENT_KIND_FINISHED,
					Time: timestamppb.New(end), Spec: j.spec, Allocation: j.run.GetKind(), StartTime: j.run.GetStartTime(),
					Exit: pb.ExitState_EXIT_STATE_COMPLETED})
				f.release(j)
				j.done = true
				continue
			}
			all = false
			s.Running = append(s.Running, j.run)
		default:
			all = false
			s.Queued = append(s.Queued, j.spec)
		}
	}
	if all && len(s.Events) == 0 {
		f.cancel() // every job finished and its finish was reported
	}
	f.events = append(f.events, s.Events...)
	return s, nil
}

func (f *fake) Preempt(_ context.Context, p *pb.Preemption, r *pb.RunningJob) ([]*pb.JobEvent, error) {
	f.calls = append(f.calls, "preempt "+p.GetJobId())
	j := f.job(p.GetJobId())
	if j == nil || j.run == nil {
		f.t.Errorf("preemption of %s, which is not running", p.GetJobId())
		return nil, fmt.Errorf("not running")
	}
	if r != j.run {
		f.t.Errorf("preemption of %s: the loop passed another running job", p.GetJobId())
	}
	e := &pb.JobEvent{JobId: j.spec.GetId(), Kind: pb.JobEventKind_JOB_EVENT_KIND_PREEMPTED, Time: timestamppb.New(time.Now()),
		Spec: j.spec, Allocation: j.run.GetKind(), StartTime: j.run.GetStartTime(), Action: p.GetAction()}
	if p.GetAction() == pb.PreemptionAction_PREEMPTION_ACTION_SUSPEND {
		j.elapsed += time.Since(j.run.GetStartTime().AsTime())
	} else {
		j.elapsed = 0
		j.spec = proto.CloneOf(j.spec)
		j.spec.RequeueCount++
	}
	f.release(j)
	f.events = append(f.events, e)
	return []*pb.JobEvent{e}, nil
}

func (f *fake) Start(_ context.Context, s *pb.Start, spec *pb.JobSpec) ([]*pb.JobEvent, error) {
	f.calls = append(f.calls, "start "+s.GetJobId())
	j := f.job(s.GetJobId())
	if j == nil || j.run != nil || j.done || j.spec != spec {
		f.t.Errorf("start of %s, which is not queued", s.GetJobId())
		return nil, fmt.Errorf("not queued")
	}
	if int32(len(s.GetCards())) != spec.GetCards() {
		f.t.Errorf("start of %s on %d cards, want %d", s.GetJobId(), len(s.GetCards()), spec.GetCards())
	}
	for _, c := range s.GetCards() {
		k := fmt.Sprintf("%s/%d", c.GetNode(), c.GetIndex())
		if other, ok := f.held[k]; ok {
			f.t.Errorf("start of %s on card %s, held by %s", s.GetJobId(), k, other)
			return nil, fmt.Errorf("card %s held", k)
		}
	}
	for _, c := range s.GetCards() {
		f.held[fmt.Sprintf("%s/%d", c.GetNode(), c.GetIndex())] = s.GetJobId()
	}
	now := timestamppb.New(time.Now())
	j.run = &pb.RunningJob{Spec: spec, Cards: s.GetCards(), StartTime: now, Kind: s.GetKind(), ProtectedUntil: s.GetProtectedUntil()}
	e := &pb.JobEvent{JobId: s.GetJobId(), Kind: pb.JobEventKind_JOB_EVENT_KIND_STARTED, Time: now, Spec: spec, Allocation: s.GetKind()}
	f.events = append(f.events, e)
	return []*pb.JobEvent{e}, nil
}

func (f *fake) Acknowledged(_ context.Context, evs []*pb.JobEvent) error {
	f.acked += len(evs)
	return nil
}

// runToTheEnd runs loop until every job of f finished and the service
// learned it (f cancels the loop then), and fails the test when jobs are
// left after 48 simulated hours.
func runToTheEnd(t *testing.T, f *fake, loop *rm.Loop) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	f.cancel = cancel
	done := make(chan error, 1)
	go func() { done <- loop.Run(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(48 * time.Hour):
		cancel()
		<-done
		t.Fatalf("jobs left after 48 simulated hours; calls: %s", strings.Join(f.calls[max(0, len(f.calls)-20):], ", "))
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestLoopCarriesOutPlansUntilEveryJobFinishes runs the loop against a real
// service on a fake 2×4-card cluster: a 4-card job holds node n0, an 8-card
// job must wait for it (a reservation), and a checkpointable 4-card job is
// backfilled on n1 past the reservation, so it must be suspended for the big
// job and finish afterwards.
func TestLoopCarriesOutPlansUntilEveryJobFinishes(t *testing.T) {
	srv := rmtest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 2, 4)
		f.submit("first", 4, 2*time.Hour, 50*time.Minute, false)
		f.submit("big", 8, 2*time.Hour, time.Hour, false)
		f.submit("ckpt", 4, 90*time.Minute, 80*time.Minute, true)
		f.submit("after", 6, 30*time.Minute, 25*time.Minute, false)
		loop := rm.New(srv.Client(), f, rm.Options{Interval: time.Minute, Log: quiet(),
			Plan: &pb.PlanOptions{Policy: pb.Policy_POLICY_HUITIAN_GREEDY}})
		runToTheEnd(t, f, loop)

		// Every preemption in a cycle came before every start of that cycle.
		cycle := 0
		seenStart := false
		var preempted []string
		for _, c := range f.calls {
			switch {
			case c == "snapshot":
				cycle++
				seenStart = false
			case strings.HasPrefix(c, "start "):
				seenStart = true
			case strings.HasPrefix(c, "preempt "):
				preempted = append(preempted, strings.TrimPrefix(c, "preempt "))
				if seenStart {
					t.Errorf("cycle %d: %s after a start", cycle, c)
				}
			}
		}
		if !slices.Contains(preempted, "ckpt") {
			t.Errorf("preempted %v, want the checkpointable backfill job ckpt suspended for big", preempted)
		}
		if loop.Unsent() != 0 || f.acked != len(f.events) {
			t.Errorf("%d events acknowledged of %d, %d unsent", f.acked, len(f.events), loop.Unsent())
		}

		if f.informed == 0 {
			t.Errorf("the driver was never told of a waiting job")
		}

		// The service learned every finish.
		c := srv.Client()
		for _, j := range f.jobs {
			resp, err := c.GetJobInsight(t.Context(), connect.NewRequest(&pb.GetJobInsightRequest{ClusterId: "fake", JobId: j.spec.GetId()}))
			if err != nil {
				t.Fatalf("GetJobInsight %s: %v", j.spec.GetId(), err)
			}
			if got := resp.Msg.GetInsight().GetState(); got != pb.JobState_JOB_STATE_FINISHED {
				t.Errorf("service says %s is %v, want finished", j.spec.GetId(), got)
			}
		}
	})
}

func (f *fake) Inform(_ context.Context, _ *rm.Snapshot, plan *pb.PlanResponse) error {
	f.informed += len(plan.GetPending()) + len(plan.GetReservations())
	return nil
}

// TestLoopKeepsEventsUntilTheServiceAcknowledges: a cycle whose report
// cannot get through keeps the events, and the next cycle sends them first.
func TestLoopKeepsEventsUntilTheServiceAcknowledges(t *testing.T) {
	addr := rmtest.FreeAddr(t)
	dataDir := t.TempDir()
	up, ready := make(chan struct{}), make(chan error)
	go func() {
		<-up
		_, err := rmtest.StartAt(t, addr, dataDir)
		ready <- err
	}()
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, 4)
		f.submit("a", 2, time.Hour, time.Minute, false)
		f.jobs[0].done = true // it ran before the service was reachable
		f.cancel = func() {}
		finished := &pb.JobEvent{JobId: "a", Kind: pb.JobEventKind_JOB_EVENT_KIND_FINISHED, Time: timestamppb.New(time.Now()),
			Spec: f.jobs[0].spec, StartTime: timestamppb.New(time.Now().Add(-time.Minute)), Exit: pb.ExitState_EXIT_STATE_COMPLETED}
		d := &onceEvents{fake: f, events: []*pb.JobEvent{finished}}
		loop := rm.New(rmtest.NewClient("http://"+addr), d, rm.Options{Log: quiet()})

		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		_, err := loop.Cycle(ctx)
		cancel()
		if err == nil || loop.Unsent() != 1 {
			t.Fatalf("cycle against a closed port: error %v, %d unsent; want an error and 1 unsent", err, loop.Unsent())
		}
		close(up)
		if err := <-ready; err != nil {
			t.Fatalf("start the service: %v", err)
		}
		res, err := loop.Cycle(t.Context())
		if err != nil {
			t.Fatalf("cycle: %v", err)
		}
		if res.Reported != 1 || loop.Unsent() != 0 || f.acked != 1 {
			t.Errorf("reported %d, acknowledged %d, %d unsent; want the kept event sent", res.Reported, f.acked, loop.Unsent())
		}
	})
}

// onceEvents is a fake whose first snapshot carries events.
type onceEvents struct {
	*fake
	events []*pb.JobEvent
}

func (o *onceEvents) Snapshot(ctx context.Context) (*rm.Snapshot, error) {
	s, err := o.fake.Snapshot(ctx)
	s.Events, o.events = append(s.Events, o.events...), nil
	return s, err
}

// timed is a fake that records when each cycle's snapshot was taken, the
// times each cycle asked to be followed by (its plan's replan_by, the
// notices of the preemptions carried out, not yet run out), the first
// start each reservation promised and when each job started.
type timed struct {
	*fake
	snaps    []time.Time
	asks     [][]time.Time
	due      []time.Time
	promised map[string]time.Time
	started  map[string]time.Time
}

func (d *timed) Preempt(ctx context.Context, p *pb.Preemption, r *pb.RunningJob) ([]*pb.JobEvent, error) {
	d.due = append(d.due, time.Now().Add(p.GetNotice().AsDuration()))
	return d.fake.Preempt(ctx, p, r)
}

func (d *timed) Snapshot(ctx context.Context) (*rm.Snapshot, error) {
	d.snaps = append(d.snaps, time.Now())
	return d.fake.Snapshot(ctx)
}

func (d *timed) Start(ctx context.Context, s *pb.Start, spec *pb.JobSpec) ([]*pb.JobEvent, error) {
	if _, ok := d.started[s.GetJobId()]; !ok {
		d.started[s.GetJobId()] = time.Now()
	}
	return d.fake.Start(ctx, s, spec)
}

func (d *timed) Inform(ctx context.Context, snap *rm.Snapshot, plan *pb.PlanResponse) error {
	var at []time.Time
	if by := plan.GetReplanBy(); by != nil {
		at = append(at, by.AsTime())
	}
	for _, t := range d.due {
		if t.After(snap.Now) {
			at = append(at, t)
		}
	}
	d.asks = append(d.asks, at)
	for _, r := range plan.GetReservations() {
		if _, ok := d.promised[r.GetJobId()]; !ok {
			d.promised[r.GetJobId()] = r.GetStartTime().AsTime()
		}
	}
	return d.fake.Inform(ctx, snap, plan)
}

// TestLoopPlansAgainWhenThePlanAsks: on an hourly interval, a plan's
// replan_by gets its cycle then, and so does the end of a preemption's
// notice (no sooner than MinGap after the last cycle): the checkpointable
// backfill job's protection ends and it is told to yield, and once its
// notice ran out the reserved 8-card job starts, by the start its first
// reservation promised. On the interval alone it would start an hour
// after the yield.
func TestLoopPlansAgainWhenThePlanAsks(t *testing.T) {
	srv := rmtest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 2, 4)
		f.submit("first", 4, 2*time.Hour, 50*time.Minute, false)
		f.submit("big", 8, 2*time.Hour, time.Hour, false)
		f.submit("ckpt", 4, 90*time.Minute, 80*time.Minute, true)
		d := &timed{fake: f, promised: map[string]time.Time{}, started: map[string]time.Time{}}
		const interval, gap = time.Hour, 5 * time.Second
		runToTheEnd(t, f, rm.New(srv.Client(), d, rm.Options{Interval: interval, MinGap: gap, Log: quiet(),
			Plan: &pb.PlanOptions{Policy: pb.Policy_POLICY_HUITIAN_GREEDY}}))

		asked := 0
		for i := 1; i < len(d.snaps) && i <= len(d.asks); i++ {
			prev := d.snaps[i-1]
			want := interval
			for _, by := range d.asks[i-1] {
				want = min(want, max(by.Sub(prev), gap))
			}
			if want < interval {
				asked++
			}
			if got := d.snaps[i].Sub(prev); got != want {
				t.Errorf("cycle %d began %v after cycle %d (which asked for %v), want %v", i, got, i-1, d.asks[i-1], want)
			}
		}
		if asked < 2 {
			t.Errorf("%d cycles came before the next hour, want 2 or more: the protection's end, the notice's (snapshots %v)", asked, d.snaps)
		}
		promise, ok := d.promised["big"]
		if !ok {
			t.Fatalf("big was never reserved (calls %v)", f.calls)
		}
		if got := d.started["big"]; got.After(promise) {
			t.Errorf("big started at %v, %v after its first reservation's start %v; snapshots %v, asks %v, calls %v", got, got.Sub(promise), promise, d.snaps, d.asks, f.calls)
		}
		if !slices.Contains(f.calls, "preempt ckpt") {
			t.Errorf("ckpt never yielded (calls %v): the scenario does not test the promise", f.calls)
		}
	})
}

// waking is a timed fake whose Wakes the test feeds.
type waking struct {
	*timed
	wakes chan struct{}
}

func (w *waking) Wakes() <-chan struct{} { return w.wakes }

// TestLoopPlansOnWakes: a Waker's signal brings the next cycle at once, or
// MinGap after the last one began when it comes sooner; without one, the
// interval.
func TestLoopPlansOnWakes(t *testing.T) {
	srv := rmtest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, 4)
		f.submit("long", 1, 10*time.Hour, 9*time.Hour, false) // keeps the loop running
		f.cancel = func() {}
		w := &waking{timed: &timed{fake: f, promised: map[string]time.Time{}, started: map[string]time.Time{}}, wakes: make(chan struct{}, 1)}
		ctx, cancel := context.WithCancel(t.Context())
		loop := rm.New(srv.Client(), w, rm.Options{Interval: time.Hour, MinGap: 5 * time.Second, Log: quiet()})
		done := make(chan error, 1)
		go func() { done <- loop.Run(ctx) }()
		begin := time.Now()
		time.Sleep(30 * time.Second) // then a wake: a cycle at 30 s
		w.wakes <- struct{}{}
		time.Sleep(2 * time.Second) // and another 2 s later: at 35 s, MinGap after 30 s
		w.wakes <- struct{}{}
		time.Sleep(2 * time.Hour) // then the interval: 1h35s, 2h35s
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		var got []time.Duration
		for _, s := range w.snaps {
			got = append(got, s.Sub(begin))
		}
		want := []time.Duration{0, 30 * time.Second, 35 * time.Second, time.Hour + 35*time.Second}
		if !slices.Equal(got, want) {
			t.Errorf("cycles at %v after the start, want %v", got, want)
		}
	})
}
