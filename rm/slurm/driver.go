package slurm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/rm"
)

// Driver is the Slurm rm.Driver. The loop calls it from one goroutine;
// the watch behind Wakes runs on its own and shares only cfg, run and log
// with it (Close stops it).
type Driver struct {
	cfg   Config
	run   Runner
	log   *slog.Logger
	acked map[string]bool // events the service acknowledged: id|kind|time
	nodes map[string]*pb.Node
	held  map[string]bool // "node/index" held by jobs huitian does not manage
	jobs  map[string]*Job // the last snapshot's jobs of the partition, by id

	wake chan struct{} // rm.Waker: a change the watch saw, not yet taken
	// mu guards the watch's start and stop (stop, stopped, closed); it is
	// never held with another lock, nor while the watch polls.
	mu      sync.Mutex
	stop    context.CancelFunc // nil until the watch starts
	stopped chan struct{}      // closed when the watch has returned
	closed  bool
}

var (
	_ rm.Driver       = (*Driver)(nil)
	_ rm.Acknowledger = (*Driver)(nil)
	_ rm.Informer     = (*Driver)(nil)
	_ rm.Waker        = (*Driver)(nil)
)

// New returns a driver for cfg. It starts nothing: the watch of the
// partition's jobs starts with the first Wakes, and Close stops it.
func New(cfg Config, log *slog.Logger) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	run := cfg.Run
	if run == nil {
		run = Exec(30 * time.Second)
	}
	return &Driver{cfg: cfg, run: run, log: log, acked: map[string]bool{}, wake: make(chan struct{}, 1)}, nil
}

// ErrPlanStale means a planned action no longer matches the cluster; the
// job is skipped this cycle and planned again.
var ErrPlanStale = errors.New("slurm: plan no longer matches the cluster")

func eventKey(e *pb.JobEvent) string {
	return fmt.Sprintf("%s|%d|%d", e.GetJobId(), e.GetKind(), e.GetTime().AsTime().UnixNano())
}

// Acknowledged remembers the acknowledged events, so that the next
// snapshot does not derive them again. After a restart they are derived
// once more; the service ignores an event it already has (same job, kind
// and time), and the times come from Slurm or the AdminComment, so they
// are the same.
func (d *Driver) Acknowledged(_ context.Context, evs []*pb.JobEvent) error {
	for _, e := range evs {
		d.acked[eventKey(e)] = true
	}
	return nil
}

// final job states: the job holds nothing any more.
var finalStates = map[string]pb.ExitState{
	"COMPLETED": pb.ExitState_EXIT_STATE_COMPLETED, "TIMEOUT": pb.ExitState_EXIT_STATE_KILLED_AT_LIMIT,
	"DEADLINE": pb.ExitState_EXIT_STATE_KILLED_AT_LIMIT, "FAILED": pb.ExitState_EXIT_STATE_FAILED,
	"CANCELLED": pb.ExitState_EXIT_STATE_FAILED, "NODE_FAIL": pb.ExitState_EXIT_STATE_FAILED,
	"OUT_OF_MEMORY": pb.ExitState_EXIT_STATE_FAILED, "BOOT_FAIL": pb.ExitState_EXIT_STATE_FAILED,
	"PREEMPTED": pb.ExitState_EXIT_STATE_FAILED,
}

func baseState(s string) string {
	s, _, _ = strings.Cut(strings.ToUpper(s), "+")
	return s
}

// Snapshot reads the cluster from Slurm: the partition's nodes and GPUs
// (`scontrol show node -o`), every job (`squeue --json -t all`). It also
// carries out what is due: a SUSPEND whose notice ran out, the read-back of
// a job that started, a re-hold of a job Slurm could have started alone.
func (d *Driver) Snapshot(ctx context.Context) (*rm.Snapshot, error) {
	now := d.cfg.now()
	// 1. Nodes and cards.
	out, err := d.run(ctx, "scontrol", "show", "node", "-o")
	if err != nil {
		return nil, err
	}
	nodes, err := ParseNodes(out)
	if err != nil {
		d.log.Warn("some nodes left out", "error", err)
	}
	cluster := d.cluster(nodes)
	if len(cluster.Nodes) == 0 {
		return nil, fmt.Errorf("slurm: partition %s has no node with GPUs", d.cfg.Partition)
	}
	d.nodes = map[string]*pb.Node{}
	for _, n := range cluster.Nodes {
		d.nodes[n.Name] = n
	}

	// 2. Jobs.
	out, err = d.run(ctx, "squeue", "--json", "-t", "all")
	if err != nil {
		return nil, err
	}
	jobs, err := ParseQueue(out)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(jobs, func(a, b Job) int { return int(a.ID - b.ID) })
	s := &rm.Snapshot{Now: now, Cluster: cluster}
	d.held = map[string]bool{}
	d.jobs = map[string]*Job{}
	seen := map[string]bool{}
	for i := range jobs {
		j := &jobs[i]
		seen[strconv.FormatInt(j.ID, 10)] = true
		if j.Partition != d.cfg.Partition {
			d.external(j)
			continue
		}
		d.jobs[strconv.FormatInt(j.ID, 10)] = j
		d.observe(ctx, j, now, s)
	}
	for _, n := range cluster.Nodes {
		for _, c := range n.Cards {
			if d.held[cardKey(n.Name, int(c.Index))] {
				c.Unhealthy = true
			}
		}
	}
	// Jobs Slurm forgot (MinJobAge) take their acknowledgements along.
	for k := range d.acked {
		if id, _, _ := strings.Cut(k, "|"); !seen[id] {
			delete(d.acked, k)
		}
	}
	s.Events = slices.DeleteFunc(s.Events, func(e *pb.JobEvent) bool { return d.acked[eventKey(e)] })
	return s, nil
}

func cardKey(node string, idx int) string { return node + "/" + strconv.Itoa(idx) }

// external marks the GPUs of a running job huitian does not manage as held.
func (d *Driver) external(j *Job) {
	st := baseState(j.State)
	if _, done := finalStates[st]; done || st == "PENDING" {
		return
	}
	as, err := j.Allocs()
	if err != nil {
		d.log.Debug("GPUs of an unmanaged job unknown", "job", j.ID, "error", err)
		return
	}
	for _, a := range as {
		for _, i := range a.GPUs {
			d.held[cardKey(a.Node, i)] = true
		}
	}
}

// cluster turns the partition's nodes into a Cluster.
func (d *Driver) cluster(nodes []Node) *pb.Cluster {
	c := &pb.Cluster{Id: d.cfg.ClusterID}
	dom := "switch/" + d.cfg.Partition
	slices.SortFunc(nodes, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	for _, n := range nodes {
		if !slices.Contains(n.Partitions, d.cfg.Partition) || n.GPUCount() == 0 {
			continue
		}
		pn := &pb.Node{Name: n.Name, Unschedulable: n.Unavailable(), Domains: []string{dom}}
		idx := 0
		for _, g := range n.GPUs {
			for range g.Count {
				pn.Cards = append(pn.Cards, &pb.Card{Index: int32(idx), Model: g.Type, NumaNode: -1})
				idx++
			}
		}
		if t := d.topology(n.Name, len(pn.Cards)); t != nil {
			pn.Cards = t
		}
		c.Nodes = append(c.Nodes, pn)
	}
	if len(c.Nodes) > 0 {
		c.Domains = []*pb.Domain{{Id: dom, Kind: pb.DomainKind_DOMAIN_KIND_SWITCH}}
	}
	return c
}

// topology reads the node's huitian topology file, if there is one that
// matches Slurm's GPU count.
func (d *Driver) topology(node string, gpus int) []*pb.Card {
	if d.cfg.TopologyDir == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(d.cfg.TopologyDir, node+".json"))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			d.log.Warn("topology file", "node", node, "error", err)
		}
		return nil
	}
	var n pb.Node
	if err := protojson.Unmarshal(b, &n); err != nil {
		d.log.Warn("topology file: not a huitian topo --json Node", "node", node, "error", err)
		return nil
	}
	if len(n.Cards) != gpus {
		d.log.Warn("topology file: card count differs from Slurm's Gres; ignored", "node", node, "file", len(n.Cards), "slurm", gpus)
		return nil
	}
	for i, c := range n.Cards {
		if int(c.GetIndex()) != i {
			d.log.Warn("topology file: cards not indexed 0..n-1; ignored", "node", node)
			return nil
		}
	}
	return n.Cards
}

// observe adds one job of the partition to the snapshot and derives its
// events.
func (d *Driver) observe(ctx context.Context, j *Job, now time.Time, s *rm.Snapshot) {
	id := strconv.FormatInt(j.ID, 10)
	words, st, err := splitAdmin(j.AdminComment)
	if err != nil {
		d.log.Warn("unreadable huitian state in AdminComment; treated as none", "job", id, "error", err)
		st = state{}
	}
	spec, specErr := jobSpec(j, &st)
	bs := baseState(j.State)
	exit, final := finalStates[bs]
	switch {
	case final:
		if st.Planned == nil {
			return
		}
		if st.Notice > 0 && bs != "CANCELLED" {
			// It checkpointed and ended within its notice: back to the queue.
			if e, err := d.requeueNow(ctx, j, words, st, spec, "S", now); err != nil {
				d.log.Warn("requeue a job that ended under notice", "job", id, "error", err)
			} else {
				s.Events = append(s.Events, e)
			}
			return
		}
		if spec == nil {
			d.log.Warn("finished job has no valid spec; finish not reported", "job", id, "error", specErr)
			return
		}
		startAt := time.Unix(j.StartTime, 0)
		s.Events = append(s.Events, d.startedEvent(id, spec, &st, startAt),
			&pb.JobEvent{JobId: id, Kind: pb.JobEventKind_JOB_EVENT_KIND_FINISHED, Time: timestamppb.New(time.Unix(j.EndTime, 0)),
				Spec: spec, Allocation: kindOf(st.Kind), StartTime: timestamppb.New(startAt), Exit: exit})
	case bs == "PENDING":
		d.pending(ctx, j, words, st, spec, specErr, now, s)
	default: // RUNNING, COMPLETING, CONFIGURING, SUSPENDED, …: GPUs held
		if st.Planned == nil {
			d.log.Debug("job of the partition runs without a huitian start; its GPUs count as held", "job", id)
			d.external(j)
			return
		}
		if spec == nil {
			d.log.Warn("running job has no valid spec; its GPUs count as held", "job", id, "error", specErr)
			d.external(j)
			return
		}
		if st.Got == nil {
			st.Got = d.readBack(ctx, j, words, st)
		}
		if st.Notice > 0 && now.Unix() >= st.Notice {
			if e, err := d.requeueNow(ctx, j, words, st, spec, "S", now); err != nil {
				d.log.Warn("requeue at the end of the notice", "job", id, "error", err)
			} else {
				s.Events = append(s.Events, e)
				return
			}
		}
		startAt := time.Unix(j.StartTime, 0)
		if bs != "CONFIGURING" {
			s.Events = append(s.Events, d.startedEvent(id, spec, &st, startAt))
		}
		rj := &pb.RunningJob{Spec: spec, Cards: cardsOf(st.Got), StartTime: timestamppb.New(startAt), Kind: kindOf(st.Kind)}
		if st.Protected > 0 {
			rj.ProtectedUntil = timestamppb.New(time.Unix(st.Protected, 0))
		}
		if len(rj.Cards) != int(spec.GetCards()) {
			// Never plan on a view the service would refuse: the GPUs Slurm
			// reports are held, the job is left out of this plan.
			d.log.Warn("running job holds another number of GPUs than it asks for; its GPUs count as held", "job", id,
				"holds", encodeAllocs(st.Got), "asks", spec.GetCards())
			for _, a := range st.Got {
				for _, i := range a.GPUs {
					d.held[cardKey(a.Node, i)] = true
				}
			}
			return
		}
		s.Running = append(s.Running, rj)
	}
}

// pending handles a job of the partition that waits in Slurm.
func (d *Driver) pending(ctx context.Context, j *Job, words string, st state, spec *pb.JobSpec, specErr error, now time.Time, s *rm.Snapshot) {
	id := strconv.FormatInt(j.ID, 10)
	held := j.Priority == 0
	if st.Planned != nil {
		switch {
		case j.Restarts > st.Restarts:
			// Requeued since its start (by the driver before it could write
			// that down, or by Slurm on a node failure).
			action := "Q"
			if st.Notice > 0 {
				action = "S"
			}
			if !held {
				d.hold(ctx, id)
			}
			y := &yield{Action: action, Time: now.Unix(), Start: st.StartedAt, Kind: st.Kind}
			st = state{Submit: st.Submit, Yield: y}
			if err := d.update(ctx, id, "AdminComment="+adminComment("huitian: requeued; back in the queue at its place", st)); err != nil {
				d.log.Warn("record a requeue", "job", id, "error", err)
			}
		case held:
			// The driver set the plan but did not release it: plan anew.
			st = state{Submit: st.Submit, Yield: st.Yield}
			if err := d.update(ctx, id, "AdminComment="+adminComment(words, st)); err != nil {
				d.log.Warn("drop an unreleased plan", "job", id, "error", err)
				return
			}
		case now.Unix()-st.StartedAt > int64(d.cfg.StartTimeout/time.Second):
			d.log.Warn("released job did not start on its planned nodes in time; held and planned anew", "job", id,
				"planned", encodeAllocs(st.Planned), "slurm reason", j.Reason)
			d.hold(ctx, id)
			st = state{Submit: st.Submit}
			if err := d.update(ctx, id, "AdminComment="+adminComment("huitian: Slurm did not start it on the planned nodes ("+j.Reason+"); planned again", st)); err != nil {
				d.log.Warn("drop a plan Slurm did not carry out", "job", id, "error", err)
			}
			return
		default:
			// Released, about to start: its planned GPUs are taken.
			if spec != nil {
				rj := &pb.RunningJob{Spec: spec, Cards: cardsOf(st.Planned), StartTime: timestamppb.New(time.Unix(st.StartedAt, 0)), Kind: kindOf(st.Kind)}
				if st.Protected > 0 {
					rj.ProtectedUntil = timestamppb.New(time.Unix(st.Protected, 0))
				}
				s.Running = append(s.Running, rj)
			}
			return
		}
	}
	if !held {
		// Slurm's own scheduler must not start it: hold it again.
		d.log.Info("job of the partition was not held; held again", "job", id)
		d.hold(ctx, id)
	}
	if y := st.Yield; y != nil {
		s.Events = append(s.Events, &pb.JobEvent{JobId: id, Kind: pb.JobEventKind_JOB_EVENT_KIND_PREEMPTED, Time: timestamppb.New(time.Unix(y.Time, 0)),
			Spec: spec, Allocation: kindOf(y.Kind), StartTime: timestamppb.New(time.Unix(y.Start, 0)), Action: actionOf(y.Action)})
	}
	if spec == nil {
		msg := "huitian: cannot plan this job: " + strings.TrimPrefix(specErr.Error(), ErrInvalidJob.Error()+": ")
		if words != msg {
			d.log.Info("job cannot be planned", "job", id, "error", specErr)
			if err := d.update(ctx, id, "AdminComment="+adminComment(msg, st)); err != nil {
				d.log.Warn("tell the user", "job", id, "error", err)
			}
		}
		return
	}
	s.Queued = append(s.Queued, spec)
}

func (d *Driver) startedEvent(id string, spec *pb.JobSpec, st *state, at time.Time) *pb.JobEvent {
	return &pb.JobEvent{JobId: id, Kind: pb.JobEventKind_JOB_EVENT_KIND_STARTED, Time: timestamppb.New(at), Spec: spec, Allocation: kindOf(st.Kind)}
}

// readBack asks Slurm which GPUs a job that now runs got (`scontrol show
// job -d -o`, IDX; squeue's gres_detail when that cannot be read), records
// them in its AdminComment and tells the user when they differ from the
// plan.
func (d *Driver) readBack(ctx context.Context, j *Job, words string, st state) []Alloc {
	id := strconv.FormatInt(j.ID, 10)
	var got []Alloc
	out, err := d.run(ctx, "scontrol", "show", "job", "-d", "-o", id)
	if err == nil {
		_, got, err = ParseJobDetail(strings.TrimSpace(string(out)), j.Name)
	}
	if err != nil || len(got) == 0 {
		d.log.Debug("read back from squeue's gres_detail", "job", id, "error", err)
		if got, err = j.Allocs(); err != nil {
			d.log.Warn("GPUs of a started job unknown; the plan's are assumed held", "job", id, "error", err)
			return st.Planned
		}
	}
	st.Got = got
	if g, p := encodeAllocs(got), encodeAllocs(st.Planned); g != p {
		d.log.Warn("Slurm gave other GPUs than the plan named; reporting Slurm's", "job", id, "planned", p, "got", g)
		words += "; Slurm gave GPUs " + g + " (the plan named " + p + ")"
	}
	if err := d.update(ctx, id, "AdminComment="+adminComment(words, st)); err != nil {
		d.log.Warn("record the GPUs Slurm gave", "job", id, "error", err)
	}
	return got
}

// update runs `scontrol update JobId=ID args…`.
func (d *Driver) update(ctx context.Context, id string, args ...string) error {
	_, err := d.run(ctx, "scontrol", append([]string{"update", "JobId=" + id}, args...)...)
	return err
}

func (d *Driver) hold(ctx context.Context, id string) {
	if _, err := d.run(ctx, "scontrol", "hold", id); err != nil {
		d.log.Warn("hold", "job", id, "error", err)
	}
}

// fresh reads one job from Slurm, not the snapshot: an action must not be
// taken twice on a stale view.
func (d *Driver) fresh(ctx context.Context, id string) (*Job, string, state, error) {
	if _, err := strconv.ParseInt(id, 10, 64); err != nil {
		return nil, "", state{}, fmt.Errorf("slurm: job id %q is not a Slurm job id", id)
	}
	out, err := d.run(ctx, "squeue", "--json", "-t", "all", "-j", id)
	if err != nil {
		return nil, "", state{}, err
	}
	jobs, err := ParseQueue(out)
	if err != nil {
		return nil, "", state{}, err
	}
	for i := range jobs {
		if strconv.FormatInt(jobs[i].ID, 10) == id {
			j := &jobs[i]
			if j.Partition != d.cfg.Partition {
				return nil, "", state{}, fmt.Errorf("%w: job %s is not in partition %s", ErrPlanStale, id, d.cfg.Partition)
			}
			words, st, err := splitAdmin(j.AdminComment)
			return j, words, st, err
		}
	}
	return nil, "", state{}, fmt.Errorf("%w: job %s is gone", ErrPlanStale, id)
}

func kindOf(s string) pb.AllocationKind {
	if s == "B" {
		return pb.AllocationKind_ALLOCATION_KIND_BACKFILL
	}
	return pb.AllocationKind_ALLOCATION_KIND_REGULAR
}

func kindCode(k pb.AllocationKind) string {
	if k == pb.AllocationKind_ALLOCATION_KIND_BACKFILL {
		return "B"
	}
	return "R"
}

func actionOf(s string) pb.PreemptionAction {
	if s == "Q" {
		return pb.PreemptionAction_PREEMPTION_ACTION_REQUEUE
	}
	return pb.PreemptionAction_PREEMPTION_ACTION_SUSPEND
}

func joinErrs(errs []error) error { return errors.Join(errs...) }
