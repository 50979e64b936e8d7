package profile

import (
	"slices"

	"github.com/huitian/huitian/model"
)

// EarliestStartBrute is EarliestStart by exhaustion: it tries every time at
// which a card becomes free and checks every card over the whole interval.
// It is slow and obviously right, for differential tests.
func (p *Profile) EarliestStartBrute(after, dur int64, req Request) (int64, []int, bool) {
	if req.Cards <= 0 || dur <= 0 {
		return 0, nil, false
	}
	p.settle()
	times := []int64{after}
	for c := range p.rel {
		if p.rel[c] >= after {
			times = append(times, p.rel[c])
		}
		for _, s := range p.spans[c] {
			if s.end >= after {
				times = append(times, s.end)
			}
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)
	for _, t := range times {
		var cands []int
		for c := range p.rel {
			if !model.ModelAccepts(req.Model, p.lay.Cards[c].Model) {
				continue
			}
			if p.FreeOver(c, t, t+dur) {
				cands = append(cands, c)
				p.sc.key[c] = -p.freeSince(c, t)
			}
		}
		if got := p.place(req, cands); got != nil {
			return t, got, true
		}
	}
	return 0, nil, false
}
