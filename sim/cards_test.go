package sim

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/sim/trace"
	"github.com/huitian/huitian/solver"
	"github.com/huitian/huitian/solver/baseline"
)

// cardsChecked is a CardsPlanner that checks, every cycle, the cards the
// simulator gives against those its start named by number (and against
// those the references name, CardIDs.Resolve, for a job that names them),
// and that each running job's slice is the one it was given the cycle
// before, then plans with them. Its planner's starts must name their
// cards by number alone.
type cardsChecked struct {
	t      *testing.T
	pl     CardsPlanner
	ids    baseline.CardIDs
	last   map[string][]int
	named  map[string][]int // a copy of each start's card numbers, by job
	own    map[string][]int // each start's card numbers, the slice itself
	cycles int
	asked  int // reservations' numbers asked for (ReservationNumbers)
	// handed are the lists the simulator handed back (Recycle), by their
	// first number's address; reused counts the starts named in one.
	handed map[*int]bool
	reused int
}

// Recycle notes the list handed back and passes it on to the planner,
// when a Recycler. A list lent out again while its job still ran would
// change that job's cards, which PlanCards checks every cycle against a
// copy of its start's.
func (c *cardsChecked) Recycle(cards []int) {
	if c.handed == nil {
		c.handed = map[*int]bool{}
	}
	c.handed[&cards[0]] = true
	if r, ok := c.pl.(Recycler); ok {
		r.Recycle(cards)
	}
}

func (c *cardsChecked) Plan(context.Context, *model.Snapshot) (*model.Decision, error) {
	c.t.Fatal("the simulator called Plan on a CardsPlanner")
	return nil, nil
}

func (c *cardsChecked) PlanCards(ctx context.Context, s *model.Snapshot, cards [][]int) (*model.Decision, error) {
	if c.named == nil {
		c.named, c.own = map[string][]int{}, map[string][]int{}
	}
	next := map[string][]int{}
	for i, r := range s.Running {
		want := c.named[r.Job.ID]
		if r.Cards != nil {
			one := *s
			one.Running = s.Running[i : i+1]
			ids, err := c.ids.Resolve(&one)
			if err != nil {
				c.t.Fatal(err)
			}
			want = ids[0]
		}
		if !slices.Equal(cards[i], want) {
			c.t.Fatalf("cycle %d: %s: the simulator gives cards %v, its start named %v", c.cycles, r.Job.ID, cards[i], want)
		}
		if own, ok := c.own[r.Job.ID]; ok && r.Cards == nil && &own[0] != &cards[i][0] {
			c.t.Fatalf("cycle %d: %s: the simulator gives its cards in a slice other than its start's", c.cycles, r.Job.ID)
		}
		if l, ok := c.last[r.Job.ID]; ok && &l[0] != &cards[i][0] {
			c.t.Fatalf("cycle %d: %s: a new slice for the cards of a job that runs on", c.cycles, r.Job.ID)
		}
		next[r.Job.ID] = cards[i]
	}
	c.last = next
	c.cycles++
	d, err := c.pl.PlanCards(ctx, s, cards)
	if err != nil {
		return nil, err
	}
	for _, st := range d.Starts {
		if st.Cards != nil || len(st.CardNumbers) == 0 {
			c.t.Fatalf("cycle %d: %T: %s: a start of PlanCards names %d cards by reference and %d by number", c.cycles, c.pl, st.JobID, len(st.Cards), len(st.CardNumbers))
		}
		c.named[st.JobID], c.own[st.JobID] = slices.Clone(st.CardNumbers), st.CardNumbers
		if c.handed[&st.CardNumbers[0]] {
			c.reused++
		}
	}
	return d, nil
}

// ReservationNumbers asks the planner, a ClaimNamer, for the numbers it
// left unread.
func (c *cardsChecked) ReservationNumbers(k int) []int {
	c.asked++
	if cn, ok := c.pl.(ClaimNamer); ok {
		return cn.ReservationNumbers(k)
	}
	return nil
}

// learning is a wrapped planner that passes the simulator's events on to
// the planner it wraps, a Learner.
type learning struct {
	Planner
	l Learner
}

func (x learning) Observe(e model.Event)                        { x.l.Observe(e) }
func (x learning) Decided(s *model.Snapshot, d *model.Decision) { x.l.Decided(s, d) }

// learningByNumber is learning for a wrapped ClaimNamer: the simulator
// plans with it by number.
type learningByNumber struct {
	learning
	n ClaimNamer
}

func (x learningByNumber) PlanCards(ctx context.Context, s *model.Snapshot, cards [][]int) (*model.Decision, error) {
	return x.n.PlanCards(ctx, s, cards)
}

func (x learningByNumber) ReservationNumbers(k int) []int { return x.n.ReservationNumbers(k) }

// planOnly hides a planner's PlanCards: the simulator then calls Plan.
type planOnly struct{ pl Planner }

func (p planOnly) Plan(ctx context.Context, s *model.Snapshot) (*model.Decision, error) {
	return p.pl.Plan(ctx, s)
}

// TestCardsPlannerAsPlan: a planner given the running jobs' cards by the
// simulator (CardsPlanner) names its starts' cards by number, gets those
// numbers back, the same slice for as long as a job runs, and plans what
// it plans from references alone: the same results job by job, for EASY
// and for huitian-greedy, whose jobs are preempted, suspended and
// requeued.
func TestCardsPlannerAsPlan(t *testing.T) {
	tr, err := trace.Synth(trace.SynthOptions{Jobs: 1500, Seed: 1, Load: 1.2, Cards: 32})
	if err != nil {
		t.Fatal(err)
	}
	for _, pol := range []model.Policy{model.PolicyEASY, model.PolicyHuitianGreedy} {
		mk := func() CardsPlanner {
			pl, err := solver.New(pol, 0)
			if err != nil {
				t.Fatal(err)
			}
			cp, ok := pl.(CardsPlanner)
			if !ok {
				t.Fatalf("%v: %T is not a CardsPlanner", pol, pl)
			}
			return cp
		}
		cfg := Config{Cluster: hgx(t, 4)}
		checked := &cardsChecked{t: t, pl: mk()}
		got := run(t, tr.Jobs, checked, cfg)
		want := run(t, tr.Jobs, planOnly{mk()}, cfg)
		if diff := cmp.Diff(want.Jobs, got.Jobs); diff != "" {
			t.Fatalf("%v: results differ with the simulator's cards (-references +cards):\n%s", pol, diff)
		}
		if checked.cycles == 0 || got.Summary.Cycles != checked.cycles {
			t.Fatalf("%v: %d cycles planned with the cards of %d", pol, checked.cycles, got.Summary.Cycles)
		}
		if pol == model.PolicyHuitianGreedy && got.Summary.Preemptions == 0 {
			t.Errorf("%v: no preemption in the run: not a test of cards freed by a yield", pol)
		}
	}
}

// TestRecycledListsReplayAsAllocated: on a flat machine EASY numbers
// the cards of a start that no run of free cards holds into a list an
// ended job's cards were handed back in (Recycler), and plans what it
// plans from references alone, job by job; every running job keeps its
// start's numbers throughout (cardsChecked).
func TestRecycledListsReplayAsAllocated(t *testing.T) {
	// 3,000 jobs of 1 to 96 cards on 256, arriving faster than they end,
	// with runtimes from a tenth of their limits to all of them: the free
	// cards scatter.
	rng := rand.New(rand.NewPCG(2, 3))
	var jobs []trace.Job
	submit := int64(0)
	for i := range 3000 {
		submit += rng.Int64N(600)
		limit := 60 + rng.Int64N(7200)
		jobs = append(jobs, tj(strconv.Itoa(i), submit, max(limit/10, 1+rng.Int64N(limit)), limit, 1+rng.IntN(96)))
	}
	mk := func() CardsPlanner {
		pl, err := solver.New(model.PolicyEASY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := pl.(Recycler); !ok {
			t.Fatalf("EASY's %T takes back no card lists", pl)
		}
		return pl.(CardsPlanner)
	}
	flat := func() Config {
		c, err := Flat(256)
		if err != nil {
			t.Fatal(err)
		}
		return Config{Cluster: c}
	}
	checked := &cardsChecked{t: t, pl: mk()}
	got := run(t, jobs, checked, flat())
	want := run(t, jobs, planOnly{mk()}, flat())
	if diff := cmp.Diff(want.Jobs, got.Jobs); diff != "" {
		t.Fatalf("results differ with lists handed back (-references +numbers):\n%s", diff)
	}
	if checked.reused == 0 {
		t.Fatalf("no start's cards numbered into a list handed back (%d handed back): not a test of them", len(checked.handed))
	}
	t.Logf("%d lists handed back, %d starts numbered into one", len(checked.handed), checked.reused)
}

// TestPlanCardsRefusesAMismatch: a planner given card numbers that do not
// match the snapshot's running jobs in count says which.
func TestPlanCardsRefusesAMismatch(t *testing.T) {
	c := hgx(t, 1)
	s := &model.Snapshot{Now: DefaultEpoch, Cluster: c, Running: []model.Running{{
		Job: model.Job{ID: "r", Cards: 2, TimeLimit: 3600e9}, Cards: []model.CardRef{{Node: c.Nodes[0].Name, Index: 0}, {Node: c.Nodes[0].Name, Index: 1}},
		Start: DefaultEpoch,
	}}}
	for _, pol := range []model.Policy{model.PolicyEASY, model.PolicyHuitianGreedy} {
		pl, _ := solver.New(pol, 0)
		cp := pl.(CardsPlanner)
		for _, cards := range [][][]int{nil, {{0}}, {{}}} {
			if _, err := cp.PlanCards(context.Background(), s, cards); err == nil {
				t.Errorf("%v: cards %v for a job on 2 cards: no error", pol, cards)
			}
		}
		if _, err := cp.PlanCards(context.Background(), s, [][]int{{0, 1}}); err != nil {
			t.Errorf("%v: the job's own cards: %v", pol, err)
		}
	}
}

// TestLazyClaimsReplayAsPlan: on KTH-SP2's flat machine (a pool its node
// names order), huitian-greedy given the cards by number leaves its head
// reservation's numbers unread, and the simulator asks for them
// (ClaimNamer) only while jobs lent into windows run, to measure how long
// they alone hold the head: every job's result is the one planned from
// references, whose reservations name their numbers every cycle.
func TestLazyClaimsReplayAsPlan(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("KTH-SP2 under huitian-greedy, twice")
	}
	kth := loadKTH(t)
	jobs := kth.Jobs
	mk := func() CardsPlanner {
		pl, err := solver.New(model.PolicyHuitianGreedy, 0)
		if err != nil {
			t.Fatal(err)
		}
		return pl.(CardsPlanner)
	}
	flat := func() Config {
		c, err := Flat(kth.MaxCards)
		if err != nil {
			t.Fatal(err)
		}
		return Config{Cluster: c}
	}
	pl, ref := mk(), mk()
	checked := &cardsChecked{t: t, pl: pl}
	got := run(t, jobs, learningByNumber{learning{checked, pl.(Learner)}, checked}, flat())
	want := run(t, jobs, learning{planOnly{ref}, ref.(Learner)}, flat())
	if diff := cmp.Diff(want.Jobs, got.Jobs); diff != "" {
		t.Fatalf("results differ with the claims read when asked (-references +numbers):\n%s", diff)
	}
	held := 0
	for _, r := range want.Jobs {
		if r.HeadHeld > 0 {
			held++
		}
	}
	if held == 0 {
		t.Fatal("no head held by lent jobs alone: not a test of the numbers asked for")
	}
	if checked.asked == 0 {
		t.Fatal("the simulator never asked for a reservation's numbers: not a test of them")
	}
}
