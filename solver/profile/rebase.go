package profile

// Keeping a profile from one cycle to the next (issue 15): a planner that
// loaded the running jobs into a profile and planned on it readies it for
// the next cycle with Advance, which undoes the plan's reservations and
// moves time on, and Set, which gives the cards of the jobs that started,
// ended or changed since, and of the starts no job took up, their busy
// times. The result is the profile Reset and Hold would
// load from the new snapshot, at a cost that follows what changed: the
// cards of those jobs, and one pass over the busy times to move them.

// Advance undoes every reservation Reserve made since the last Reset or
// Advance, and then moves time dt ≥ 0 seconds on: every card's busy time
// ends dt seconds sooner, and a card whose busy time ends by then is free
// now. The busy times Hold and Set gave stay, moved; so do the cards
// Reserve started now since, which it returns (valid until the next
// Reserve) for the caller to free those that no job holds now — a start a
// resource manager took up is then already in place, and Set to the same
// busy time changes nothing. The caller sets what else changed (a job past
// its end is held until the overrun grace, a job that ended is free) with
// Set.
func (p *Profile) Advance(dt int64) []int32 {
	if dt < 0 {
		panic("profile: Advance moves time forward only")
	}
	started := p.startLog
	p.startLog = p.startLog[:0]
	p.dropLazy() // undone unread
	for _, c := range p.spanLog {
		if len(p.spans[c]) > 0 {
			p.Set(int(c), p.rel[c])
		}
	}
	p.spanLog = p.spanLog[:0]
	p.gen++
	p.grew++
	if dt == 0 {
		return started
	}
	p.ix.al.shift += dt
	p.evClock += dt
	// Move every busy time first, then free the cards whose time is up:
	// a node's last release (aligned placement) is read over all of its
	// cards, moved.
	freed := p.sc.freed[:0]
	for c, r := range p.rel {
		switch {
		case r == 0:
		case r > dt:
			p.rel[c] = r - dt
		default:
			freed = append(freed, int32(c))
		}
	}
	for _, c := range freed {
		p.Set(int(c), 0)
	}
	p.sc.freed = freed
	// The base events hold releases on the profile's clock (baseAt): a
	// uniform move changes none of them, and only the cards that became
	// free (noted) move out of their order, which patching puts back.
	return started
}

// Set gives a card the state that Reset and a Hold until until (0: none,
// the card is free now) would give it: busy from now until then, with no
// reservation.
func (p *Profile) Set(card int, until int64) {
	p.settleFor(card)
	hadSpans := len(p.spans[card]) > 0
	if p.rel[card] == until && !hadSpans {
		return
	}
	node := p.nodeOf[card]
	wasFree := p.FreeNow(card)
	if hadSpans {
		p.spanGen++
		if wasFree {
			p.ix.change(node, 0, -1)
		}
		p.spans[card] = p.spans[card][:0]
	}
	switch {
	case until == 0 && p.rel[card] != 0:
		p.rel[card] = 0
		if p.cardOK[card] {
			p.ix.change(node, 1, 0)
			p.freeDirty = true
		}
	case until != 0 && wasFree:
		p.ix.change(node, -1, 0)
		p.dropFree(card)
		p.rel[card] = until
	default:
		p.rel[card] = until
	}
	p.busyChanged(node)
	p.gen++
	p.grew++
	p.noteChanged(card)
}
