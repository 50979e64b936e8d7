package sim

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/sim/trace"
)

func ref(node string, i int) model.CardRef { return model.CardRef{Node: node, Index: i} }

func start(id string, kind model.AllocKind, cards ...model.CardRef) model.Start {
	return model.Start{JobID: id, Cards: cards, Kind: kind}
}

// startN is a regular start that names its cards by number alone.
func startN(id string, cards ...int) model.Start {
	return model.Start{JobID: id, CardNumbers: cards, Kind: model.Regular}
}

func TestBadDecisions(t *testing.T) {
	// Two 1-card jobs submitted at 0 and a 2-card job at 1 on flat:2. The
	// planner starts job a on p0 at 0; at the second cycle (t=1) it makes
	// the bad decision under test.
	jobs := []trace.Job{tj("a", 0, 100, 100, 1), tj("b", 0, 100, 100, 1), tj("c", 1, 100, 100, 2)}
	for _, tc := range []struct {
		name   string
		second model.Decision
		job    string
		reason string
	}{
		{"start on a busy card", model.Decision{Starts: []model.Start{start("b", model.Regular, ref("p0", 0))}},
			"b", `card p0/0 is busy: job "a" holds it`},
		{"start by number on a busy card", model.Decision{Starts: []model.Start{startN("b", 0)}},
			"b", `card p0/0 is busy: job "a" holds it`},
		{"start by an unknown number", model.Decision{Starts: []model.Start{startN("b", 2)}},
			"b", "card number 2 does not exist (the cluster has 2 cards)"},
		{"start by a negative number", model.Decision{Starts: []model.Start{startN("b", -1)}},
			"b", "card number -1 does not exist (the cluster has 2 cards)"},
		{"start by numbers out of order", model.Decision{Preemptions: []model.Preemption{{JobID: "a", Action: model.PreemptRequeue}}, Starts: []model.Start{startN("c", 1, 0)}},
			"c", "card numbers not sorted, or a card twice: 0 after 1"},
		{"start by a number twice", model.Decision{Preemptions: []model.Preemption{{JobID: "a", Action: model.PreemptRequeue}}, Starts: []model.Start{startN("c", 1, 1)}},
			"c", "card numbers not sorted, or a card twice: 1 after 1"},
		{"start by too few numbers", model.Decision{Starts: []model.Start{startN("c", 1)}},
			"c", "started on 1 cards, it asks for 2"},
		{"start on an unknown card", model.Decision{Starts: []model.Start{start("b", model.Regular, ref("p7", 0))}},
			"b", "card p7/0 does not exist"},
		{"job started twice in one decision", model.Decision{Starts: []model.Start{
			start("b", model.Regular, ref("p1", 0)), start("b", model.Regular, ref("p1", 0))}},
			"b", "started twice in one decision"},
		{"two starts on one card", model.Decision{Starts: []model.Start{
			start("b", model.Regular, ref("p1", 0)), start("c", model.Regular, ref("p1", 0), ref("p0", 0))}},
			"c", "also given to another start in this decision"},
		{"start of a running job", model.Decision{Starts: []model.Start{start("a", model.Regular, ref("p1", 0))}},
			"a", "already running"},
		{"start of a job not yet submitted", model.Decision{Starts: []model.Start{start("z", model.Regular, ref("p1", 0))}},
			"z", "not in the queue"},
		{"start on too few cards", model.Decision{Starts: []model.Start{start("c", model.Regular, ref("p1", 0))}},
			"c", "started on 1 cards, it asks for 2"},
		{"start of an unknown kind", model.Decision{Starts: []model.Start{start("b", model.AllocKind(7), ref("p1", 0))}},
			"b", "start kind 7"},
		{"preemption of a queued job", model.Decision{Preemptions: []model.Preemption{{JobID: "b", Action: model.PreemptRequeue}}},
			"b", "queued, not running"},
		{"preemption without an action", model.Decision{Preemptions: []model.Preemption{{JobID: "a"}}},
			"a", "preemption action unspecified"},
		{"preemption with a negative notice", model.Decision{Preemptions: []model.Preemption{{JobID: "a", Action: model.PreemptSuspend, Notice: -time.Second}}},
			"a", "notice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cycle := 0
			pl := planFunc(func(s *model.Snapshot) (*model.Decision, error) {
				cycle++
				if cycle == 1 {
					return &model.Decision{Starts: []model.Start{start("a", model.Regular, ref("p0", 0))}}, nil
				}
				d := tc.second
				return &d, nil
			})
			_, err := Run(t.Context(), jobs, pl, Config{Cluster: flat(t, 2)})
			if !errors.Is(err, ErrBadDecision) {
				t.Fatalf("error %v, want one wrapping ErrBadDecision", err)
			}
			var de *DecisionError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecisionError", err)
			}
			if de.Cycle != 2 || de.JobID != tc.job || !strings.Contains(de.Reason, tc.reason) || sec(de.Time) != 1 {
				t.Errorf("got cycle %d at %d s, job %q, reason %q; want cycle 2 at 1 s, job %q, reason containing %q",
					de.Cycle, sec(de.Time), de.JobID, de.Reason, tc.job, tc.reason)
			}
		})
	}
}

func TestBadShape(t *testing.T) {
	c, err := HGX(2)
	if err != nil {
		t.Fatal(err)
	}
	job := tj("g", 0, 10, 10, 2)
	job.Spec.Topology = model.TopologySameNode
	pl := planFunc(func(s *model.Snapshot) (*model.Decision, error) {
		return &model.Decision{Starts: []model.Start{start("g", model.Regular, ref("hgx0", 0), ref("hgx1", 0))}}, nil
	})
	_, err = Run(t.Context(), []trace.Job{job}, pl, Config{Cluster: c})
	var de *DecisionError
	if !errors.As(err, &de) || !strings.Contains(de.Reason, "asks for one node") {
		t.Fatalf("error %v, want a DecisionError about one node", err)
	}
}

// preemptor starts every queued job it can on a 1-card cluster in queue
// order, and preempts job "bf" with the given action when "main" is queued.
func preemptor(action model.PreemptAction, notice time.Duration) Planner {
	return planFunc(func(s *model.Snapshot) (*model.Decision, error) {
		d := &model.Decision{}
		busy := len(s.Running) > 0
		for _, q := range s.Queued {
			if q.ID == "main" {
				for _, r := range s.Running {
					if r.Job.ID == "bf" {
						d.Preemptions = append(d.Preemptions, model.Preemption{JobID: "bf", Action: action, Notice: notice, ForJobID: "main"})
					}
				}
			}
			if !busy && (q.ID == "main" || !hasQueued(s, "main")) {
				d.Starts = append(d.Starts, start(q.ID, model.Backfill, ref("p0", 0)))
				busy = true
			}
		}
		return d, nil
	})
}

func hasQueued(s *model.Snapshot, id string) bool {
	for _, q := range s.Queued {
		if q.ID == id {
			return true
		}
	}
	return false
}

func TestPreemption(t *testing.T) {
	// bf (100 s of work, checkpoint 7 s) starts at 0; main (10 s) arrives
	// at 30. bf yields at 30 + notice; main runs; bf restarts after it.
	for _, tc := range []struct {
		name        string
		action      model.PreemptAction
		notice      time.Duration
		mainStart   int64
		bfEnd       int64
		lost        float64
		bfRequeue   int
		preemptions int
	}{
		// Suspend: checkpoint 30–37, main 37–47, bf restores 47–54 and
		// does its remaining 70 s: ends at 124. Lost: 7 s save + 7 s restore.
		{"suspend keeps progress", model.PreemptSuspend, 0, 37, 124, 14, 1, 1},
		// Requeue: main 30–40, bf starts over 40–140. Lost: 30 s of work.
		{"requeue loses progress", model.PreemptRequeue, 0, 30, 140, 30, 1, 1},
		// A 10 s notice: bf works until 33, checkpoints 33–40 (within the
		// notice), main 40–50, bf restores 50–57 and ends at 124.
		{"suspend within a notice", model.PreemptSuspend, 10 * time.Second, 40, 124, 14, 1, 1},
		// A 5 s notice: bf works until 35, then requeues.
		{"requeue after a notice", model.PreemptRequeue, 5 * time.Second, 35, 145, 35, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bf := tj("bf", 0, 100, 200, 1)
			bf.Spec.Checkpointable, bf.Spec.CheckpointCost = true, 7*time.Second
			jobs := []trace.Job{bf, tj("main", 30, 10, 10, 1)}
			var events []model.Event
			var requeues []int
			pl := &learner{Planner: preemptor(tc.action, tc.notice), observe: func(e model.Event) { events = append(events, e) },
				decided: func(s *model.Snapshot, _ *model.Decision) {
					for _, q := range s.Queued {
						if q.ID == "bf" {
							requeues = append(requeues, q.RequeueCount)
						}
					}
				}}
			res := run(t, jobs, pl, Config{Cluster: flat(t, 1)})
			m := byID(res)
			if got := m["main"].Start; got != tc.mainStart {
				t.Errorf("main started at %d, want %d", got, tc.mainStart)
			}
			if got := m["bf"]; got.End != tc.bfEnd || got.Start != 0 || got.Preemptions != tc.preemptions || got.Run != 100 {
				t.Errorf("bf: start %d end %d run %d preemptions %d, want 0, %d, 100, %d", got.Start, got.End, got.Run, got.Preemptions, tc.bfEnd, tc.preemptions)
			}
			s := res.Summary
			if s.LostCardSeconds != tc.lost || s.Preemptions != tc.preemptions {
				t.Errorf("lost %v card-s, %d preemptions; want %v, %d", s.LostCardSeconds, s.Preemptions, tc.lost, tc.preemptions)
			}
			if len(requeues) == 0 || requeues[len(requeues)-1] != tc.bfRequeue {
				t.Errorf("bf's requeue counts seen in the queue %v, want last %d", requeues, tc.bfRequeue)
			}
			if s.BackfillCompletionRate == nil || *s.BackfillCompletionRate != 0.5 {
				t.Errorf("backfill completion rate %v, want 0.5 (main clean, bf preempted)", s.BackfillCompletionRate)
			}
			var kinds []string
			for _, e := range events {
				kinds = append(kinds, e.JobID+":"+e.Kind.String())
				if e.Kind == model.EventPreempted && e.Action != tc.action {
					t.Errorf("preempted event action %s, want %s", e.Action, tc.action)
				}
			}
			want := "bf:started bf:preempted main:started main:finished bf:started bf:finished"
			if got := strings.Join(kinds, " "); got != want {
				t.Errorf("events %q, want %q", got, want)
			}
		})
	}
}
