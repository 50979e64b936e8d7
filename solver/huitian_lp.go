package solver

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strconv"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/solver/baseline"
	"github.com/huitian/huitian/solver/estimate"
	"github.com/huitian/huitian/solver/lp"
	"github.com/huitian/huitian/solver/preempt"
	"github.com/huitian/huitian/solver/profile"
)

// NewHuitian returns the huitian planner with LP placement of backfill
// candidates (policy huitian), solving with s.
func NewHuitian(cfg Config, s lp.Solver) *Huitian {
	h := NewHuitianGreedy(cfg)
	h.name = "huitian"
	h.lp = s
	if h.cfg.MaxCandidates <= 0 {
		h.cfg.MaxCandidates = 256
	}
	if h.cfg.MaxOptions <= 0 {
		h.cfg.MaxOptions = 8
	}
	return h
}

// levels are the distinct windows of the cards free now, shortest first;
// the last level is "no reservation claims it" (Forever).
type levels struct {
	sorted map[int][]int // level → nodes with free cards there, by free count then name
	t      []int64       // window of each level
	res    []int         // the reservation claiming at that window, -1 for the last
	// protect: the level's claim is a large job's reservation, which
	// protects its cards but draws nothing to them (ReserveProtect):
	// windowUse counts its cards as unclaimed.
	protect []bool
	avail   [][]int       // [node][level] free usable cards
	of      map[int]int32 // card → level
	// claimed lists the nodes with free cards that a reservation claims
	// later, in node order.
	claimed []int
}

func (c *cycle) windowLevels() *levels {
	lv := &levels{of: map[int]int32{}}
	free := c.prof.FreeCards()
	var ws []int64
	for _, id := range free {
		ws = append(ws, c.prof.Window(id, 0))
	}
	ws = append(ws, profile.Forever)
	slices.Sort(ws)
	lv.t = slices.Compact(ws)
	lv.res = make([]int, len(lv.t))
	lv.protect = make([]bool, len(lv.t))
	for l, t := range lv.t {
		lv.res[l] = -1
		for k := range c.resv {
			if c.resv[k].t == t {
				lv.res[l] = k
				lv.protect[l] = c.resv[k].protect
				break
			}
		}
	}
	// Every node's levels in one array of the planner's, reused: at
	// 65,536 cards, 8,192 allocations a cycle.
	nl, L := len(c.lay.Nodes), len(lv.t)
	flat := resized(&c.h.lvFlat, nl*L)
	clear(flat)
	lv.avail = resized(&c.h.lvAvail, nl)
	for n := range lv.avail {
		lv.avail[n] = flat[n*L : (n+1)*L : (n+1)*L]
	}
	for _, id := range free {
		n := c.lay.Cards[id].Node
		l, _ := slices.BinarySearch(lv.t, c.prof.Window(id, 0))
		lv.avail[n][l]++
		lv.of[id] = int32(l)
	}
	for n := range lv.avail {
		if lv.avail[n][len(lv.t)-1] < atLeast(lv.avail[n], 0) {
			lv.claimed = append(lv.claimed, n)
		}
	}
	return lv
}

// byFree returns the nodes with free cards at level ≥ l, fewest first,
// then in name order.
func (lv *levels) byFree(c *cycle, l int) []int {
	if o, ok := lv.sorted[l]; ok {
		return o
	}
	var o []int
	for n := range lv.avail {
		if atLeast(lv.avail[n], l) > 0 {
			o = append(o, n)
		}
	}
	slices.SortFunc(o, func(a, b int) int {
		if x := cmp.Compare(atLeast(lv.avail[a], l), atLeast(lv.avail[b], l)); x != 0 {
			return x
		}
		return cmp.Compare(c.prof.NodeRank(a), c.prof.NodeRank(b))
	})
	if lv.sorted == nil {
		lv.sorted = map[int][]int{}
	}
	lv.sorted[l] = o
	return o
}

func atLeast(a []int, l int) int {
	s := 0
	for _, v := range a[l:] {
		s += v
	}
	return s
}

// candidate is a backfill candidate the LP considers.
type candidate struct {
	idx   int // into s.Queued
	job   *model.Job
	e     jobEst
	req   profile.Request
	level int     // the shortest window level the mechanisms allow
	prob  float64 // preemption probability at that level
}

// allowedLevel finds the shortest window level at which the admission
// rule (admit) accepts the candidate: safe first, as the greedy pass asks;
// only when there is none, a checkpointable job's suspendable level.
// Claimed levels carry the risk against their reservation, unclaimed ones
// the exposure to the head's reservation moving (see riskOf).
func (c *cycle) allowedLevel(cd *candidate, lv *levels) bool {
	rks := make([]risk, len(lv.t))
	for l := range lv.t {
		if k := lv.res[l]; k >= 0 {
			rv := &c.resv[k]
			rks[l] = risk{prob: estimate.ProbExceeds(&cd.e.dist, &rv.s), claim: rv.s, claimT: rv.t, claimed: true, res: k}
		} else {
			rks[l] = risk{prob: c.exposure(&cd.e.dist, cd.job.Cards)}
		}
	}
	for _, want := range []verdict{safe, suspendable} {
		for l := range lv.t {
			if c.admit(cd.job, &cd.e, rks[l], lv.t[l]) == want {
				cd.level, cd.prob = l, rks[l].prob
				return true
			}
		}
	}
	return false
}

// value is the objective gain of placing a candidate at a level on a node
// (node < 0: spread).
//
// The job part is the bounded-slowdown relief of starting the job now. A
// job of median runtime m that would otherwise wait D longer loses
// D / max(m, 10 s) of slowdown; the relief is taken as (τ/m)², τ the
// candidates' median runtime, times the candidates' mean card count and τ
// (so that it is in card-seconds, like the risk terms), and raised by the
// bounded compensation of requeued jobs. The square keeps the LP close to
// shortest-first unless packing gains much; card-seconds themselves enter
// through the capacity rows. (Measured over eight 20k-job synthetic seeds,
// bounded slowdown relative to huitian-greedy, geometric mean of per-seed
// ratios: useful card-seconds weighted by slowdown-so-far and τ/mean 1.21×,
// 1/m 1.12×, (1/m)² 1.03–1.10× (±0.07) with a cycle per event — where the
// two decide alike and the spread is chaos — and 0.95× (±0.06) with cycles
// every 300 s; see sim/README.md, "Paired comparisons".)
//
// Less the expected lost work of a job that cannot checkpoint (probability
// × cards × the runtime at risk) or the expected checkpoint cost of one that
// can. The node part is a tie-break of at most a few percent between the
// nodes that hold the job: the long windows it uses (windowUse), a bonus
// for a communication-heavy job on an intra-node leftover, FGD's
// fragmentation measure for the queue's size mix, best fit, then name
// order.
func (c *cycle) value(cd *candidate, lv *levels, l, node int, frag func(f, k int) float64, tau float64) float64 {
	j := cd.job
	tau = math.Max(tau, minRelief)
	med := math.Max(cd.e.dist.Quantile(0.5), minRelief)
	comp := float64(preempt.Compensation(c.h.cfg.Preempt, j.RequeueCount))
	r := min(tau/med, 100) // keeps the objective's range within what the simplex's tolerances handle
	v := (1 + 0.25*comp) * r * r * c.cardScale * tau
	// Equal estimates (the same user and class) go in queue order, as in
	// the greedy pass: a tie-break far below any other difference.
	v *= 1 - 1e-4*float64(c.posOf[cd.idx])/float64(len(c.s.Queued))
	if node >= 0 {
		n := c.lay.Nodes[node]
		bonus := 0.0
		if j.Comm == model.CommHigh && j.Cards > 1 {
			for id := n.First; id < n.First+n.Len; id++ {
				if !c.prof.FreeNow(id) && c.lay.Cards[id].Usable {
					bonus = 0.5
					break
				}
			}
		}
		f := atLeast(lv.avail[node], 0)
		where := lv.windowUse(node, l, j.Cards, tau) - bonus + 0.1*frag(f-j.Cards, f) +
			0.05*float64(f-j.Cards)/float64(n.Len) + 1e-3*float64(c.prof.NodeRank(node))/float64(len(c.lay.Nodes))
		v *= 1 - 0.002*where
	}
	if j.Checkpointable {
		v -= cd.prob * float64(j.Cards) * j.CheckpointCost.Seconds()
	} else {
		atRisk := cd.e.dist.Mean()
		if k := lv.res[l]; k >= 0 {
			atRisk = math.Min(atRisk, c.resv[k].s.Mean())
		}
		v -= cd.prob * float64(j.Cards) * atRisk
	}
	return v
}

// minRelief bounds the runtimes in value from below, as bounded slowdown
// does. (600 s made every job shorter than ten minutes worth the same, and
// the LP then took a 514 s job before a 31 s one where the greedy pass
// takes the shortest.)
const minRelief = 10

// windowUse is how much long-window capacity a job of k cards uses on node
// n when it takes the cards of the shortest windows of level ≥ l: a card
// whose window is W counts W/(W+τ), one that no reservation claims (or a
// large job's only, protect) counts 2. Short windows suit few jobs, long
// ones any: the greedy pass fills temporal fragments first for the same
// reason.
func (lv *levels) windowUse(n, l, k int, tau float64) float64 {
	u := 0.0
	for lvl := l; lvl < len(lv.t) && k > 0; lvl++ {
		take := min(k, lv.avail[n][lvl])
		k -= take
		if lv.t[lvl] == profile.Forever || lv.protect[lvl] {
			u += 2 * float64(take)
		} else {
			w := float64(lv.t[lvl])
			u += float64(take) * w / (w + tau)
		}
	}
	return u
}

// lpCheckEvery is how many backfill candidates the LP's build reads
// between two looks at the time budget (reading one, its estimate made,
// takes about a microsecond). Listing a candidate's options is looked at
// every time: at 8,192 nodes one can take a millisecond (the nodes
// sorted by free cards at a level not asked before).
const lpCheckEvery = 256

// placeLP places backfill candidates with the LP and returns those it
// did not place, for the greedy pass. fallback is true when the solver ran
// out of time (nothing was placed by the LP), or the time budget ran out
// while the instance was being built: its levels, the candidates read and
// their options cost 5–20 ms at 65,536 cards and 20,000 queued, and a
// build begun just before the deadline answered that much past it.
func (c *cycle) placeLP(ctx context.Context, cands []int) (rest []int, fallback bool) {
	h := c.h
	lv := c.windowLevels()
	if baseline.Done(ctx) != nil {
		return cands, true
	}
	// 1. Candidates the mechanisms allow somewhere.
	cs, left := h.lpCands[:0], h.lpRest[:0]
	defer func() { h.lpCands, h.lpRest = cs[:0], left[:0] }() // the next cycle's buffers
	for k, idx := range cands {
		if k%lpCheckEvery == lpCheckEvery-1 && baseline.Done(ctx) != nil {
			return cands, true
		}
		if len(cs) >= h.cfg.MaxCandidates {
			left = append(left, cands[k:]...)
			break
		}
		j := &c.s.Queued[idx]
		req, lend := c.lendRequest(j, profile.RequestOf(j))
		if !lend {
			left = append(left, idx)
			continue
		}
		cd := candidate{idx: idx, job: j, e: c.queuedEst(idx), req: req}
		if j.Backfill == model.BackfillOptOut || !c.prof.CanEverFit(req) ||
			cd.e.dist.Quantile(0.5) > c.params.MaxBackfillRuntime.Seconds() || !c.allowedLevel(&cd, lv) {
			left = append(left, idx)
			continue
		}
		cs = append(cs, cd)
	}
	// The fragmentation measure for the queue's size mix (FGD, Weng et
	// al. ATC'23): a node with f free cards strands them for every job
	// larger than f.
	sizes := map[int]float64{}
	var runtimes []float64
	for _, cd := range cs {
		sizes[cd.job.Cards]++
		runtimes = append(runtimes, cd.e.dist.Quantile(0.5))
	}
	frag := func(after, before int) float64 {
		fr := func(f int) float64 {
			s := 0.0
			for size, n := range sizes {
				if size > f {
					s += n * float64(f)
				}
			}
			return s / float64(len(cs))
		}
		return fr(after) - fr(before)
	}
	tau := 0.0
	c.cardScale = 0
	for _, cd := range cs {
		c.cardScale += float64(cd.job.Cards) / float64(len(cs))
	}
	if len(runtimes) > 0 {
		slices.Sort(runtimes)
		tau = runtimes[len(runtimes)/2]
	}
	// 2. Options: best-fit nodes, then spreads over a switch or the cluster.
	in := &lp.Instance{Levels: len(lv.t), Avail: lv.avail}
	for i := range cs {
		if baseline.Done(ctx) != nil {
			return cands, true
		}
		in.Cands = append(in.Cands, lp.Cand{Cards: cs[i].job.Cards, Opts: c.options(&cs[i], lv, frag, tau)})
	}
	c.d.Stats.Candidates = len(cs)
	// 3. Solve and round.
	out, err := lp.Solve(ctx, in, h.lp)
	if out != nil {
		c.d.Stats.LPRows, c.d.Stats.LPCols = out.Rows, out.Cols
	}
	if err != nil {
		// Out of time (lp.ErrNotOptimal, a passed deadline) or a solver
		// failure: the caller falls back to the greedy decision and says so.
		return cands, true
	}
	c.d.Stats.LPBound = out.Bound
	// 4. Exact cards for each choice, feasibility re-checked card by card.
	placed := map[int]bool{}
	objective := 0.0
	for _, ch := range out.Choices {
		cd := &cs[ch.Cand]
		op := in.Cands[ch.Cand].Opts[ch.Opt]
		nodes := make([]int32, 0, len(ch.Take))
		for n := range ch.Take {
			nodes = append(nodes, int32(n))
		}
		// Cards of level ≥ L are those whose window is at least T_L.
		cards, fit := c.prof.FitNowOn(lv.t[op.Level], cd.req, nodes)
		if fit != profile.Fits {
			continue
		}
		rk := c.riskOf(&cd.e.dist, cards)
		v := c.admit(cd.job, &cd.e, rk, c.windowOf(cards))
		if v == rejected {
			continue
		}
		placed[ch.Cand] = true
		objective += op.Value
		c.startBackfill(cd.job, cards, cd.e, rk, v, "placed by the LP")
	}
	c.d.Stats.Objective = objective
	if out.Bound > 0 {
		// The simplex's bound is exact to its tolerance (1e-7 relative); a
		// rounded objective above it by less is optimal, not a negative gap.
		c.d.Stats.Gap = max(0, (out.Bound-objective)/out.Bound)
	}
	for i := range cs {
		if !placed[i] {
			left = append(left, cs[i].idx)
		}
	}
	// Keep queue order for the greedy pass.
	pos := resized(&h.lpPos, len(c.s.Queued))
	for k, idx := range cands {
		pos[idx] = int32(k)
	}
	slices.SortFunc(left, func(a, b int) int { return cmp.Compare(pos[a], pos[b]) })
	return left, false
}

// options lists where a candidate may go, best first, at most MaxOptions.
func (c *cycle) options(cd *candidate, lv *levels, frag func(int, int) float64, tau float64) []lp.Opt {
	j := cd.job
	l := cd.level
	type nodeFit struct {
		n    int
		free int
	}
	var fits []nodeFit
	singleNode := j.Topology != model.TopologyAny || cd.req.PerNode == 0 || cd.req.PerNode == j.Cards
	if j.Topology == model.TopologySameSwitch && cd.req.PerNode > 0 && cd.req.PerNode < j.Cards {
		singleNode = false
	}
	if singleNode {
		if j.CardModel == "" {
			// Nodes by free cards at this level, then name: the first that
			// hold the job are the best fits.
			// The best fits, and every node with claimed cards (few: the
			// windowUse order below may prefer them).
			holds := func(n int) bool {
				return atLeast(lv.avail[n], l) >= j.Cards && (j.Topology != model.TopologySameIsland || c.islandFree(n, l, lv, "") >= j.Cards)
			}
			order := lv.byFree(c, l)
			i, _ := slices.BinarySearchFunc(order, j.Cards, func(n int, k int) int { return cmp.Compare(atLeast(lv.avail[n], l), k) })
			for ; i < len(order) && len(fits) < c.h.cfg.MaxOptions; i++ {
				if n := order[i]; holds(n) {
					fits = append(fits, nodeFit{n, atLeast(lv.avail[n], l)})
				}
			}
			for _, n := range lv.claimed {
				if holds(n) && !slices.ContainsFunc(fits, func(f nodeFit) bool { return f.n == n }) {
					fits = append(fits, nodeFit{n, atLeast(lv.avail[n], l)})
				}
			}
		} else {
			for n := range lv.avail {
				f := c.modelFree(n, l, lv, j.CardModel)
				if f >= j.Cards && (j.Topology != model.TopologySameIsland || c.islandFree(n, l, lv, j.CardModel) >= j.Cards) {
					fits = append(fits, nodeFit{n, f})
				}
			}
			slices.SortFunc(fits, func(a, b nodeFit) int {
				if x := cmp.Compare(a.free, b.free); x != 0 {
					return x
				}
				return cmp.Compare(c.prof.NodeRank(a.n), c.prof.NodeRank(b.n))
			})
		}
	}
	// Tightest windows first: a node whose claimed leftovers hold the job
	// keeps the cards no reservation claims for jobs that need them, as the
	// greedy pass does; then the fewest free cards (the order fits has).
	if len(fits) > 0 {
		use := make(map[int]float64, len(fits))
		for _, f := range fits {
			use[f.n] = lv.windowUse(f.n, l, j.Cards, math.Max(tau, minRelief))
		}
		slices.SortStableFunc(fits, func(a, b nodeFit) int { return cmp.Compare(use[a.n], use[b.n]) })
	}
	var opts []lp.Opt
	for _, f := range fits {
		if len(opts) >= c.h.cfg.MaxOptions {
			break
		}
		opts = append(opts, lp.Opt{Level: l, Node: f.n, Value: c.value(cd, lv, l, f.n, frag, tau)})
	}
	if len(opts) > 0 || j.Topology == model.TopologySameNode || j.Topology == model.TopologySameIsland {
		return opts
	}
	// Spread over one switch group, or over the cluster for ANY.
	groups := map[int32][]int{}
	for n := range lv.avail {
		if c.modelFree(n, l, lv, j.CardModel) > 0 {
			g := c.prof.Group(n)
			groups[g] = append(groups[g], n)
		}
	}
	gids := make([]int32, 0, len(groups))
	for g := range groups {
		gids = append(gids, g)
	}
	slices.Sort(gids)
	capOf := func(nodes []int) int {
		t := 0
		for _, n := range nodes {
			f := c.modelFree(n, l, lv, j.CardModel)
			if cd.req.PerNode > 0 {
				if f >= cd.req.PerNode {
					t += cd.req.PerNode
				}
			} else {
				t += f
			}
		}
		return t
	}
	// A spread offers nodes until they hold twice the job: enough for the
	// LP to choose, few enough to keep it small (each node of a spread is a
	// column and a row). Nodes whose cards have the shortest windows come
	// first, as the greedy pass fills temporal fragments first; then those
	// with the most usable cards (fewer nodes for the job).
	tauW := math.Max(tau, minRelief)
	spread := func(nodes []int) []int {
		ns := slices.Clone(nodes)
		type key struct {
			use  float64
			free int
		}
		keys := make(map[int]key, len(ns))
		for _, n := range ns {
			f := c.modelFree(n, l, lv, j.CardModel)
			keys[n] = key{lv.windowUse(n, l, atLeast(lv.avail[n], l), tauW) / float64(max(atLeast(lv.avail[n], l), 1)), f}
		}
		slices.SortStableFunc(ns, func(a, b int) int {
			if x := cmp.Compare(keys[a].use, keys[b].use); x != 0 {
				return x
			}
			return cmp.Compare(keys[b].free, keys[a].free)
		})
		got := 0
		for k := range ns {
			if got += capOf(ns[k : k+1]); got >= 2*j.Cards {
				return ns[:k+1]
			}
		}
		return ns
	}
	v := c.value(cd, lv, l, -1, frag, tau)
	for _, g := range gids {
		if len(opts) >= c.h.cfg.MaxOptions/2 {
			break
		}
		if capOf(groups[g]) >= j.Cards {
			opts = append(opts, lp.Opt{Level: l, Node: -1, Spread: spread(groups[g]), PerNode: cd.req.PerNode, Value: v})
		}
	}
	if len(opts) == 0 && j.Topology == model.TopologyAny {
		var all []int
		for _, g := range gids {
			all = append(all, groups[g]...)
		}
		if capOf(all) >= j.Cards {
			opts = append(opts, lp.Opt{Level: l, Node: -1, Spread: spread(all), PerNode: cd.req.PerNode, Value: v})
		}
	}
	return opts
}

// modelFree counts a node's free cards at level ≥ l that a job asking for
// model m can use.
func (c *cycle) modelFree(n, l int, lv *levels, m string) int {
	if m == "" {
		return atLeast(lv.avail[n], l)
	}
	nd := c.lay.Nodes[n]
	k := 0
	for id := nd.First; id < nd.First+nd.Len; id++ {
		if lvl, ok := lv.of[id]; ok && int(lvl) >= l && model.ModelAccepts(m, c.lay.Cards[id].Model) {
			k++
		}
	}
	return k
}

// islandFree is the largest count of free cards at level ≥ l in one island of node n.
func (c *cycle) islandFree(n, l int, lv *levels, m string) int {
	nd := c.lay.Nodes[n]
	cnt := map[int32]int{}
	best := 0
	for id := nd.First; id < nd.First+nd.Len; id++ {
		if lvl, ok := lv.of[id]; ok && int(lvl) >= l && model.ModelAccepts(m, c.lay.Cards[id].Model) {
			isl := c.lay.Cards[id].Island
			cnt[isl]++
			best = max(best, cnt[isl])
		}
	}
	return best
}

func backfillReason(waiting string, p float64, basis string) string {
	// Built by hand: one per backfill start, thousands in a large plan.
	buf := make([]byte, 0, 96+len(waiting)+len(basis))
	buf = append(buf, "backfilled while "...)
	buf = append(buf, waiting...)
	buf = append(buf, " waits; preemption probability "...)
	buf = strconv.AppendFloat(buf, p, 'f', 3, 64)
	buf = append(buf, "; estimate from "...)
	buf = append(buf, basis...)
	return string(buf)
}
