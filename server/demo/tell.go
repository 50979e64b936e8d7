package demo

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// teller writes what happens in words an operator reads, one line each: a
// reservation made, a reserved job starting (on time or not), a backfill
// start and the class of idle capacity it uses, a preemption with its
// notice, a job giving its cards back. Its methods are called with the
// RM's lock held.
type teller struct {
	w    io.Writer
	step time.Duration // the resource manager's cycle, in simulated time
	// resv is every reservation seen, by job, until the job starts.
	resv map[string]seenResv
	// before are the lines of what happened before this cycle's plan (jobs
	// that gave their cards back); held are those of what the plan made
	// happen, written once it is known (a temporal fragment is free until a
	// reservation of this plan claims it).
	before, held []func(plan *pb.PlanResponse)
	// yields counts each job's preemptions, to tell a restart.
	yields map[string]int
}

type seenResv struct {
	first, since, last time.Time // first reserved start, when first seen, latest reserved start
}

func newTeller(w io.Writer, step time.Duration) teller {
	return teller{w: w, step: step, resv: map[string]seenResv{}, yields: map[string]int{}}
}

// say holds a line for the end of the cycle, in to (&t.before or &t.held).
func (t *teller) say(to *[]func(*pb.PlanResponse), at time.Time, f func(plan *pb.PlanResponse) string) {
	if t.w == nil {
		return
	}
	*to = append(*to, func(plan *pb.PlanResponse) { fmt.Fprintf(t.w, "%s %s\n", clock(at), f(plan)) })
}

// flush writes the lines held in to; plan is nil when the cycle failed
// before it.
func (t *teller) flush(to *[]func(*pb.PlanResponse), plan *pb.PlanResponse) {
	for _, f := range *to {
		f(plan)
	}
	*to = (*to)[:0]
}

// started tells a reserved job's start, a backfill start and the idle
// capacity it uses, and a preempted job's restart.
func (t *teller) started(now time.Time, st *pb.Start, spec *pb.JobSpec) {
	id, where := st.GetJobId(), cardsText(st.GetCards())
	if r, ok := t.resv[id]; ok {
		delete(t.resv, id)
		t.say(&t.held, now, func(*pb.PlanResponse) string {
			return fmt.Sprintf("START reserved job %s (%s, %s) %s; reserved since %s", id, jobText(spec), where, t.punctuality(now, r), clock(r.since))
		})
		return
	}
	again := ""
	if n := t.yields[id]; n > 0 {
		again = " again after " + count(n, "preemption")
	}
	if st.GetKind() != pb.AllocationKind_ALLOCATION_KIND_BACKFILL {
		if again != "" {
			t.say(&t.held, now, func(*pb.PlanResponse) string {
				return fmt.Sprintf("START %s%s (%s, %s) on regular cards", id, again, jobText(spec), where)
			})
		}
		return
	}
	t.say(&t.held, now, func(plan *pb.PlanResponse) string {
		return fmt.Sprintf("BACKFILL %s%s (%s, %s) on %s; %s, %.0f%% chance of preemption", id, again, jobText(spec), where,
			fragmentText(st, plan), retentionText(st), 100*st.GetPreemptionProbability())
	})
}

// preempted tells a preemption as the plan asks it, with its notice.
func (t *teller) preempted(now time.Time, p *pb.Preemption, r *running, forSpec *pb.JobSpec) {
	id, where, notice := p.GetJobId(), cardsText(r.rj.GetCards()), p.GetNotice().AsDuration()
	forText := p.GetForJobId()
	if forSpec != nil {
		forText = fmt.Sprintf("%s, %s %d-card job,", p.GetForJobId(), article(forSpec.GetCards()), forSpec.GetCards())
	}
	claim := clock(now.Add(notice))
	t.say(&t.held, now, func(*pb.PlanResponse) string {
		if p.GetAction() == pb.PreemptionAction_PREEMPTION_ACTION_SUSPEND {
			return fmt.Sprintf("SUSPEND backfill job %s (%s) — %s notice to checkpoint: %s is reserved there from %s", id, where,
				durText(notice), forText, claim)
		}
		why := "it cannot checkpoint"
		if strings.Contains(p.GetReason(), "past the window") {
			why = "it cannot checkpoint and ran past the window it was admitted into"
		}
		return fmt.Sprintf("REQUEUE backfill job %s (%s) — %s; %s notice, then it is stopped and requeued with priority +%d: %s is reserved there from %s",
			id, where, why, durText(notice), compensation(r.rj.GetSpec().GetRequeueCount()+1), forText, claim)
	})
}

// yielded tells that a job gave its cards back when its notice ran out.
func (t *teller) yielded(at time.Time, spec *pb.JobSpec, r *running) {
	t.yields[spec.GetId()]++
	cards := plural(len(r.rj.GetCards()), "card")
	t.say(&t.before, at, func(*pb.PlanResponse) string {
		if r.action == pb.PreemptionAction_PREEMPTION_ACTION_SUSPEND {
			return fmt.Sprintf("%s checkpointed and gave back its %s; suspended, it waits in its place in the queue", spec.GetId(), cards)
		}
		return fmt.Sprintf("%s stopped and its %s given back; back in the queue, requeued %s, with priority compensation +%d", spec.GetId(), cards,
			timesText(int(spec.GetRequeueCount())), compensation(spec.GetRequeueCount()))
	})
}

// planned writes this cycle's lines: what happened before the plan, the
// reservations it made, then what it made happen.
func (t *teller) planned(now time.Time, plan *pb.PlanResponse, spec func(string) *pb.JobSpec) {
	t.flush(&t.before, plan)
	defer t.flush(&t.held, plan)
	for _, r := range plan.GetReservations() {
		at := r.GetStartTime().AsTime()
		seen, ok := t.resv[r.GetJobId()]
		if !ok {
			seen = seenResv{first: at, since: now}
			if t.w != nil {
				what := ""
				if s := spec(r.GetJobId()); s != nil {
					what = jobText(s) + ", "
				}
				cards := cardsText(r.GetCards())
				if len(r.GetCards()) == 0 { // a flat cluster's: a count
					cards = fmt.Sprintf("any %d cards", r.GetCount())
				}
				fmt.Fprintf(t.w, "%s RESERVE %s (%s%s) from %s: the earliest its cards are free by the running jobs' limits\n", clock(now),
					r.GetJobId(), what, cards, clock(at))
			}
		}
		seen.last = at
		t.resv[r.GetJobId()] = seen
	}
}

// punctuality compares a reserved job's start with its reservation.
func (t *teller) punctuality(now time.Time, r seenResv) string {
	d := now.Sub(r.last)
	switch {
	case d == 0 && now.Equal(r.first):
		return "at its reservation, " + clock(now) + " — on time"
	case d == 0 && now.Before(r.first):
		return fmt.Sprintf("at its reservation, %s — on time, %s before the first one (%s) as jobs ended early", clock(now), durText(r.first.Sub(now)), clock(r.first))
	case d == 0:
		return fmt.Sprintf("at its reservation, %s, %s after the first one (%s)", clock(now), durText(now.Sub(r.first)), clock(r.first))
	case d < 0:
		return fmt.Sprintf("%s before its reservation (%s): its cards were free early", durText(-d), clock(r.last))
	case d < t.step:
		return fmt.Sprintf("%s after its reservation (%s), at this resource manager's next cycle", durText(d), clock(r.last))
	}
	return fmt.Sprintf("%s after its reservation (%s)", durText(d), clock(r.last))
}

func fragmentText(st *pb.Start, plan *pb.PlanResponse) string {
	switch st.GetFragment() {
	case pb.FragmentClass_FRAGMENT_CLASS_TEMPORAL:
		for _, r := range plan.GetReservations() {
			if overlaps(st.GetCards(), r.GetCards()) {
				return fmt.Sprintf("a temporal fragment (free until %s's reservation claims them at %s)", r.GetJobId(), clock(r.GetStartTime().AsTime()))
			}
		}
		return "a temporal fragment (free until a reservation claims them)"
	case pb.FragmentClass_FRAGMENT_CLASS_INTRA_NODE:
		return "intra-node leftovers (free cards beside a running job, with its NVLink bandwidth)"
	case pb.FragmentClass_FRAGMENT_CLASS_CROSS_NODE:
		return "cross-node fragments (single free cards scattered over nodes)"
	}
	return "free cards no reservation claims"
}

func retentionText(st *pb.Start) string {
	if r := st.GetExpectedRetention().AsDuration(); r > 0 {
		return "expected to keep them " + durText(r)
	}
	return "keeps them until done"
}

func overlaps(a, b []*pb.CardRef) bool {
	for _, x := range a {
		for _, y := range b {
			if x.GetNode() == y.GetNode() && x.GetIndex() == y.GetIndex() {
				return true
			}
		}
	}
	return false
}

// cardsText is "2 cards on gpu-b" or "16 cards on gpu-c, gpu-d".
func cardsText(cards []*pb.CardRef) string {
	var nodes []string
	for _, c := range cards {
		if !slices.Contains(nodes, c.GetNode()) {
			nodes = append(nodes, c.GetNode())
		}
	}
	slices.Sort(nodes)
	return plural(len(cards), "card") + " on " + strings.Join(nodes, ", ")
}

func jobText(s *pb.JobSpec) string { return s.GetUser() + "'s " + s.GetJobClass() }

// compensation is the priority a job requeued n times gains (the
// planner's default: +1 a requeue, at most +3).
func compensation(n int32) int { return int(min(n, 3)) }

func article(n int32) string {
	if n == 8 || n == 11 || n == 18 || (n >= 80 && n < 90) {
		return "an"
	}
	return "a"
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// count is "one preemption" or "2 preemptions".
func count(n int, what string) string {
	if n == 1 {
		return "one " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// timesText is "once", "twice" or "3 times".
func timesText(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

func clock(t time.Time) string { return t.UTC().Format("15:04") }

// durText is "10 min", "2 h" or "1 h 5 min", rounded to the minute.
func durText(d time.Duration) string {
	m := int(d.Round(time.Minute) / time.Minute)
	switch {
	case m < 60:
		return fmt.Sprintf("%d min", m)
	case m%60 == 0:
		return fmt.Sprintf("%d h", m/60)
	}
	return fmt.Sprintf("%d h %d min", m/60, m%60)
}
