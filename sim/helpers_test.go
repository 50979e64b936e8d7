package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/sim/trace"
	"github.com/huitian/huitian/solver/baseline"
)

// tj builds a trace job: one TopologyAny job of cards cards.
func tj(id string, submit, runtime, limit int64, cards int) trace.Job {
	return trace.Job{ID: id, Submit: submit, Runtime: runtime, Limit: limit,
		Spec: model.Job{ID: id, Cards: cards}}
}

// planFunc is a planner made of a function.
type planFunc func(s *model.Snapshot) (*model.Decision, error)

func (f planFunc) Plan(_ context.Context, s *model.Snapshot) (*model.Decision, error) { return f(s) }

func easy() Planner {
	p, _ := baseline.ForPolicy(model.PolicyEASY, 0)
	return baseline.New(p)
}

func flat(t testing.TB, n int) *model.Cluster {
	t.Helper()
	c, err := Flat(n)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func run(t testing.TB, jobs []trace.Job, pl Planner, cfg Config) *Result {
	t.Helper()
	res, err := Run(context.Background(), jobs, pl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// byID indexes job results.
func byID(res *Result) map[string]JobResult {
	m := map[string]JobResult{}
	for _, r := range res.Jobs {
		m[r.ID] = r
	}
	return m
}

// sec converts a snapshot time back to trace seconds.
func sec(t time.Time) int64 { return int64(t.Sub(DefaultEpoch) / time.Second) }

// recorder wraps a planner and writes down every snapshot it was shown and
// every decision it made, as text.
type recorder struct {
	pl    Planner
	lines []string
	times []int64
}

func (r *recorder) Plan(ctx context.Context, s *model.Snapshot) (*model.Decision, error) {
	d, err := r.pl.Plan(ctx, s)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "t=%d queued=", sec(s.Now))
	for _, j := range s.Queued {
		fmt.Fprintf(&b, "%s(%d,%v) ", j.ID, j.Cards, j.TimeLimit)
	}
	b.WriteString("running=")
	for _, rj := range s.Running {
		fmt.Fprintf(&b, "%s@%d ", rj.Job.ID, sec(rj.Start))
	}
	b.WriteString("starts=")
	for _, st := range d.Starts {
		fmt.Fprintf(&b, "%s%v%s ", st.JobID, st.Cards, st.Kind)
	}
	r.lines = append(r.lines, b.String())
	r.times = append(r.times, sec(s.Now))
	return d, nil
}

// learner makes a Learner of a planner and two functions.
type learner struct {
	Planner
	observe func(model.Event)
	decided func(*model.Snapshot, *model.Decision)
}

func (l *learner) Observe(e model.Event) {
	if l.observe != nil {
		l.observe(e)
	}
}

func (l *learner) Decided(s *model.Snapshot, d *model.Decision) {
	if l.decided != nil {
		l.decided(s, d)
	}
}
