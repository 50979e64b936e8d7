package profile

import (
	"cmp"
	"slices"
)

// fitFlat is fitAmong over every free card for a flatCount request of
// k > 1 cards (fastFit answers one card), when at least k cards are free
// and node names rank the cards in card order (sim.Flat's machines): the
// same cards and outcome, without a pass over every free card's windows.
// ok is false when the names do not rank the cards so.
//
// On a machine of one-card nodes a free card is clean (no reservation:
// window and preference Forever) or dirty (a reservation later); every
// dirty card is in the reservation log since the last Reset or Advance
// (spanLog), which undo every reservation. So the candidates long enough
// are the clean cards and the dirty ones whose window holds dur, and
// placeFlat's choice — the k smallest keys, from the claimed cards alone
// when they hold the job — is a merge of the dirty cards' keys, sorted,
// with the clean cards of the free list in card (= rank) order, read only
// as far as the k-th card taken. The backfill walk of a flat
// 93,312-card replay read every free card's windows for each job it tried
// (a sixth of the replay). The index is not read: keeping its buckets for
// this cost more than the pass (every card a job holds or frees).
func (p *Profile) fitFlat(dur int64, k int) (cards []int, out Outcome, ok bool) {
	if !p.cardRanked {
		return nil, 0, false
	}
	// The dirty cards long enough, by key: those a reservation claims
	// (finite claim window) and those it only protects (Forever), as
	// fitAmong counts them.
	list := p.flatDirtyCards()
	ff := p.flatFreeNow(list)
	dirty := len(ff.keys)
	var ks []int64
	claimed := 0
	switch {
	case dur <= ff.minWin: // all of them
		ks, claimed = ff.keys, ff.claimed
	case dur > ff.maxWin: // none
	default:
		ks = p.sc.flatKs[:0]
		for _, e := range list {
			if e.win < dur || !p.FreeNow(e.card()) {
				continue // too short, or started since the list was made
			}
			if e.claimed {
				claimed++
			}
			ks = append(ks, e.key)
		}
		p.sc.flatKs = ks
	}
	clean := p.ix.total - dirty
	if clean+len(ks) < k {
		// Enough free cards (fitNow's check), not long enough: any k of
		// them would be a place, were it not for the reservations.
		return nil, Claimed, true
	}
	cards = make([]int, 0, k)
	if claimed >= k {
		// fitAmong places among the claimed cards alone (or among all
		// candidates when all are claimed: the same cards).
		for _, e := range list {
			if len(cards) == k {
				break
			}
			if e.claimed && e.win >= dur && p.FreeNow(e.card()) {
				cards = append(cards, e.card())
			}
		}
		slices.Sort(cards)
		return cards, Fits, true
	}
	// Merge the dirty keys with the clean cards' (Forever's, by card).
	p.refreshFree()
	inf := clampKey(Forever) << 24
	i := 0
	for _, c := range p.free {
		if len(cards) == k {
			break
		}
		if !p.FreeNow(c) || len(p.spans[c]) > 0 {
			continue // taken since the list was made, or dirty
		}
		key := inf | int64(c)
		for i < len(ks) && ks[i] < key && len(cards) < k {
			cards = append(cards, int(ks[i]&(1<<24-1)))
			i++
		}
		if len(cards) < k {
			cards = append(cards, c)
		}
	}
	for ; i < len(ks) && len(cards) < k; i++ {
		cards = append(cards, int(ks[i]&(1<<24-1)))
	}
	if !slices.IsSorted(cards) {
		slices.Sort(cards)
	}
	return cards, Fits, true
}

// flatFree is the dirty cards' list (flatDirtyCards) read at one state
// version: the keys of the cards still free, in key order, how many of
// them are claimed, and their shortest and longest windows. The backfill
// walk asks fitFlat job after job between two starts, and every card of
// the list mostly has one window (the head's start): a job either fits in
// all of them or in none, and the list is read once per start, not once
// per job.
type flatFree struct {
	at             int64 // Profile.gen+1 when read (0: never)
	keys           []int64
	claimed        int
	minWin, maxWin int64
}

// flatFreeNow returns the list's cards still free, as of this state.
func (p *Profile) flatFreeNow(list []flatDirty) *flatFree {
	ff := &p.sc.flatFree
	if ff.at == p.gen+1 {
		return ff
	}
	ff.keys, ff.claimed, ff.minWin, ff.maxWin = ff.keys[:0], 0, Forever, -1
	for _, e := range list {
		if !p.FreeNow(e.card()) {
			continue
		}
		ff.keys = append(ff.keys, e.key)
		if e.claimed {
			ff.claimed++
		}
		ff.minWin, ff.maxWin = min(ff.minWin, e.win), max(ff.maxWin, e.win)
	}
	ff.at = p.gen + 1
	return ff
}

// flatDirty is a dirty card's placement key (its claim window, then the
// card) and its window from now.
type flatDirty struct {
	key, win int64
	claimed  bool // a finite claim window: claimed, not only protected
}

func (e flatDirty) card() int { return int(e.key & (1<<24 - 1)) }

// flatDirtyCards lists the cards free now with reservations, by key, as
// of the last change to any card's spans: a backfill walk tries job
// after job on the same reservations, and starts only take cards (the
// caller skips those no longer free), so the list, its windows and its
// sort are made once for all of them. Every card with a span is in the
// reservation log since the last Reset or Advance (spanLog); seen marks
// each once (the log repeats a card reserved twice), cleared after.
func (p *Profile) flatDirtyCards() []flatDirty {
	if p.sc.flatAt == p.spanGen+1 {
		return p.sc.flatDirty
	}
	seen := p.sc.bits
	out := p.sc.flatDirty[:0]
	for _, c := range p.spanLog {
		if seen[c>>6]&(1<<(c&63)) != 0 || !p.FreeNow(int(c)) || len(p.spans[c]) == 0 {
			continue
		}
		seen[c>>6] |= 1 << (c & 63)
		w := p.claimWindow(int(c))
		out = append(out, flatDirty{clampKey(w)<<24 | int64(c), p.Window(int(c), 0), w != Forever})
	}
	for _, c := range p.spanLog {
		seen[c>>6] = 0
	}
	slices.SortFunc(out, func(a, b flatDirty) int { return cmp.Compare(a.key, b.key) })
	p.sc.flatDirty, p.sc.flatAt = out, p.spanGen+1
	return out
}
