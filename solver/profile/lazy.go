package profile

// lazyResv is one reservation's spans on cards busy now, left lazy
// (Profile.lazy): its cards are lazyCards[from:to].
type lazyResv struct {
	from, to   int
	start, end int64
	protect    bool
}

// lazyTag is a card's place among the lazy spans: in the lazy reservation
// in (-1: in several) when epoch is the profile's lazyEpoch, else none.
type lazyTag struct {
	epoch uint32
	in    int32
}

// addSpan gives card c the span, after the spans that start before it
// (most often none: the card's first, or a claim before its
// reservation), and notes it for Advance to undo.
func (p *Profile) addSpan(c int, s span) {
	p.spanGen++
	p.spanLog = append(p.spanLog, int32(c))
	sp := p.spans[c]
	if len(sp) == 0 && p.rel[c] == 0 { // usable: FreeOver said so
		p.ix.change(p.nodeOf[c], 0, 1)
	}
	i := len(sp)
	for i > 0 && sp[i-1].start >= s.start {
		i--
	}
	sp = append(sp, span{})
	for k := len(sp) - 1; k > i; k-- { // a span or two: no memmove
		sp[k] = sp[k-1]
	}
	sp[i] = s
	p.spans[c] = sp
}

// settle gives the lazy spans to their cards, as reserve would have.
func (p *Profile) settle() {
	if len(p.lazy) == 0 {
		return
	}
	for _, r := range p.lazy {
		for _, c := range p.lazyCards[r.from:r.to] {
			p.addSpan(int(c), span{r.start, r.end, r.protect})
			p.noteChanged(int(c))
		}
	}
	p.dropLazy()
}

// settleFor settles the lazy spans when card c holds one: before its
// spans are read or changed.
func (p *Profile) settleFor(c int) {
	if len(p.lazy) > 0 && p.lazyOf[c].epoch == p.lazyEpoch {
		p.settle()
	}
}

// dropLazy forgets the lazy spans: settled, or undone unread. Every tag
// is of an older epoch then; when the epoch wraps, the tags are cleared
// so that none of them matches a later one.
func (p *Profile) dropLazy() {
	p.lazy, p.lazyCards = p.lazy[:0], p.lazyCards[:0]
	p.lazyEpoch++
	if p.lazyEpoch == 0 {
		clear(p.lazyOf)
		p.lazyEpoch = 1
	}
}
