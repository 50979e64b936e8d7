package slurm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// fakeSlurm answers the driver's commands from canned outputs and records
// what it ran: the driver's logic without a slurmctld (the real one is
// test/e2e/slurm).
type fakeSlurm struct {
	nodes []byte
	queue string
	calls []string

	// The watch's squeue runs on its own goroutine: mu guards calls while
	// it runs, and its answer.
	mu        sync.Mutex
	states    string // squeue --noheader … --format=%i %T
	statesErr error
	block     bool // the watch's squeue hangs until its context ends
}

// answer sets what the watch's squeue answers from now on.
func (f *fakeSlurm) answer(states string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.states, f.statesErr = states, err
}

func (f *fakeSlurm) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := name + " " + strings.Join(args, " ")
	f.mu.Lock()
	f.calls = append(f.calls, cmd)
	states, err, block := f.states, f.statesErr, f.block
	f.mu.Unlock()
	switch {
	case strings.HasPrefix(cmd, "squeue --noheader"):
		if block {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return []byte(states), err
	case strings.HasPrefix(cmd, "scontrol show node"):
		return f.nodes, nil
	case strings.HasPrefix(cmd, "squeue --json"):
		return []byte(f.queue), nil
	case strings.HasPrefix(cmd, "scontrol show job"):
		return nil, errors.New("no detail in this test")
	}
	return nil, nil
}

func (f *fakeSlurm) ran(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

func job(id int, state string, prio int, admin, gres string) string {
	return fmt.Sprintf(`{"job_id":%d,"name":"j%d","user_name":"u","partition":"huitian","job_state":%q,"priority":%d,"nodes":"n1","node_count":1,
		"time_limit":5,"submit_time":1000,"start_time":1100,"end_time":1400,"restart_cnt":0,"tres_per_node":"gres:gpu:2",
		"gres_detail":[%s],"comment":"huitian: checkpointable=true checkpoint-cost=5s","admin_comment":%q}`, id, id, state, prio, gres, admin)
}

func newFake(t *testing.T, jobs ...string) (*Driver, *fakeSlurm) {
	f := &fakeSlurm{nodes: read(t, "scontrol-show-node.txt"), queue: `{"errors":[],"jobs":[` + strings.Join(jobs, ",") + `]}`}
	cfg := Defaults()
	cfg.Run = f.run
	cfg.Clock = func() time.Time { return time.Unix(1200, 0) }
	d, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return d, f
}

func TestSlurmSnapshotAfterARestart(t *testing.T) {
	d, f := newFake(t,
		job(1, "PENDING", 0, "", ""),
		job(2, "RUNNING", 1, "huitian: BACKFILL {hx k=B c=n1:0,1 g=n1:0,1 t=1100 s=1000 n=1190 }", `"gpu:2(IDX:0-1)"`),
		job(3, "RUNNING", 1, "huitian: REGULAR {hx k=R c=n1:2,3 g=n1:2,3 t=1100 s=1000 }", `"gpu:2(IDX:2-3)"`),
		job(4, "PENDING", 5, "", ""),
		job(5, "COMPLETED", 1, "huitian: REGULAR {hx k=R c=n1:4,5 g=n1:4,5 t=1100 s=1000 }", `"gpu:2(IDX:4-5)"`))
	s, err := d.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// 1 and 4 queue (4 held again: Slurm must not start it alone); 2's
	// notice ran out: requeued held, PREEMPTED; 3 runs; 5 finished.
	if len(s.Queued) != 2 || len(s.Running) != 1 || s.Running[0].GetSpec().GetId() != "3" {
		t.Fatalf("queued %v running %v", s.Queued, s.Running)
	}
	if f.ran("scontrol requeuehold 2") != 1 || f.ran("scontrol hold 4") != 1 {
		t.Errorf("calls %v", f.calls)
	}
	kinds := map[string][]pb.JobEventKind{}
	for _, e := range s.Events {
		kinds[e.GetJobId()] = append(kinds[e.GetJobId()], e.GetKind())
	}
	want := map[string][]pb.JobEventKind{"2": {pb.JobEventKind_JOB_EVENT_KIND_PREEMPTED}, "3": {pb.JobEventKind_JOB_EVENT_KIND_STARTED},
		"5": {pb.JobEventKind_JOB_EVENT_KIND_STARTED, pb.JobEventKind_JOB_EVENT_KIND_FINISHED}}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
	// Acknowledged events are not derived again.
	if err := d.Acknowledged(context.Background(), s.Events); err != nil {
		t.Fatal(err)
	}
	f.queue = strings.Replace(f.queue, `"job_id":2,`, `"job_id":22,`, 1) // 2 is gone from this view
	s, err = d.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range s.Events {
		if e.GetJobId() == "3" || e.GetJobId() == "5" {
			t.Errorf("event derived again after acknowledgement: %v", e)
		}
	}
}

func TestSlurmNoDoubleActions(t *testing.T) {
	d, f := newFake(t,
		job(1, "PENDING", 1, "huitian: REGULAR {hx k=R c=n1:0,1 t=1190 s=1000 }", ""),
		job(2, "RUNNING", 1, "huitian: notice {hx k=B c=n1:2,3 g=n1:2,3 t=1100 s=1000 n=1300 }", `"gpu:2(IDX:2-3)"`))
	if _, err := d.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A released job is not started again.
	_, err := d.Start(context.Background(), &pb.Start{JobId: "1", Cards: []*pb.CardRef{{Node: "n1", Index: 0}, {Node: "n1", Index: 1}}},
		&pb.JobSpec{Id: "1", Cards: 2})
	if !errors.Is(err, ErrPlanStale) || f.ran("scontrol release") != 0 {
		t.Errorf("start of a released job: %v, calls %v", err, f.calls)
	}
	// A job under notice gets no second USR1.
	evs, err := d.Preempt(context.Background(), &pb.Preemption{JobId: "2", Action: pb.PreemptionAction_PREEMPTION_ACTION_SUSPEND,
		Notice: durationpb.New(5 * time.Second)}, nil)
	if err != nil || len(evs) != 0 || f.ran("scancel") != 0 {
		t.Errorf("second notice: %v %v, calls %v", evs, err, f.calls)
	}
}

func TestSlurmStartSetsNodesThenReleases(t *testing.T) {
	d, f := newFake(t, job(1, "PENDING", 0, "", ""))
	if _, err := d.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := &pb.Start{JobId: "1", Kind: pb.AllocationKind_ALLOCATION_KIND_BACKFILL, PreemptionProbability: 0.04,
		ExpectedRetention: durationpb.New(130 * time.Minute), Cards: []*pb.CardRef{{Node: "n2", Index: 4}, {Node: "n2", Index: 5}}}
	if _, err := d.Start(context.Background(), st, &pb.JobSpec{Id: "1", Cards: 2}); err != nil {
		t.Fatal(err)
	}
	var upd string
	for _, c := range f.calls {
		if strings.HasPrefix(c, "scontrol update JobId=1 NodeList=n2 StartTime=now AdminComment=") {
			upd = c
		}
	}
	if !strings.Contains(upd, "huitian: BACKFILL, keeps its GPUs ~2h10m, 4% preemption risk; planned GPUs n2:4,5 {hx k=B c=n2:4,5") ||
		f.ran("scontrol release 1") != 1 {
		t.Errorf("calls %v", f.calls)
	}
	// A plan on two nodes for a one-node job is refused.
	d, _ = newFake(t, job(1, "PENDING", 0, "", ""))
	d.Snapshot(context.Background())
	st.Cards = []*pb.CardRef{{Node: "n1", Index: 0}, {Node: "n2", Index: 0}}
	if _, err := d.Start(context.Background(), st, &pb.JobSpec{Id: "1", Cards: 2}); !errors.Is(err, ErrPlanStale) {
		t.Errorf("two nodes for a one-node job: %v", err)
	}
}

// TestSlurmNoticeIsRecordedBeforeUSR1: a job that saves and exits on USR1
// at once is finished before a later update could land, and Slurm refuses
// to update a finished job; the notice must already be in its AdminComment
// so that its end reads as a checkpoint to requeue, not as a completion.
// (The e2e on a loaded machine saw the USR1 order lose that race: the job
// was reported FINISHED and never requeued.)
func TestSlurmNoticeIsRecordedBeforeUSR1(t *testing.T) {
	d, f := newFake(t, job(2, "RUNNING", 1, "huitian: BACKFILL {hx k=B c=n1:2,3 g=n1:2,3 t=1100 s=1000 }", `"gpu:2(IDX:2-3)"`))
	if _, err := d.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.calls = nil
	if _, err := d.Preempt(context.Background(), &pb.Preemption{JobId: "2", Action: pb.PreemptionAction_PREEMPTION_ACTION_SUSPEND,
		Notice: durationpb.New(time.Minute), ForJobId: "9"}, nil); err != nil {
		t.Fatal(err)
	}
	notice, signal := -1, -1
	for i, c := range f.calls {
		switch {
		case strings.HasPrefix(c, "scontrol update") && strings.Contains(c, "SUSPEND notice"):
			notice = i
		case strings.HasPrefix(c, "scancel --signal=USR1"):
			signal = i
		}
	}
	if notice < 0 || signal < 0 || notice > signal {
		t.Fatalf("want the notice recorded, then USR1; calls %v", f.calls)
	}
	// The job exits on the signal: its end is a checkpoint, requeued held.
	f.queue = `{"errors":[],"jobs":[` + job(2, "COMPLETED", 1, "huitian: SUSPEND notice {hx k=B c=n1:2,3 g=n1:2,3 t=1100 s=1000 n=1260 }", `"gpu:2(IDX:2-3)"`) + `]}`
	s, err := d.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if f.ran("scontrol requeuehold 2") != 1 || len(s.Events) != 1 || s.Events[0].GetKind() != pb.JobEventKind_JOB_EVENT_KIND_PREEMPTED {
		t.Fatalf("events %v, calls %v", s.Events, f.calls)
	}
}
