package profile

import "math/bits"

// Spares keeps card lists a caller has handed back once their jobs ended
// (solver/baseline's Planner.Recycle, from the what-if simulator), for
// LowestFree to number later starts' cards into instead of allocating.
// On a flat 93,312-card machine EASY's starts that no run of free cards
// holds write 45 M card numbers a 10,000-job replay, 354 MB of lists that
// live only as long as their jobs run; taking fresh memory for each was
// most of what the replay spent beyond the 100-processor one.
//
// A list is kept by size class, the largest power of two its capacity
// holds, and lent for a count up to that; once lists are handed back, new
// ones are made with their class's capacity, to be lent again whole. A
// list handed back is retired until Ready: the planner's next load still
// reads it (the ended job's cards, to free them). Only slot 0's pool
// takes from them (baseline's plan): each slot's pool is its own, and
// another slot's kept load could read a list long after. The zero value
// is ready; it is not safe for concurrent use.
type Spares struct {
	retired [][]int
	ready   [bits.UintSize][][]int
	handed  bool // a list was ever handed back: make lists of a class's capacity
}

// maxSpares bounds each class's kept lists.
const maxSpares = 64

// Retire hands back a list no one reads or writes any more but the
// planner's next load.
func (s *Spares) Retire(cards []int) {
	if cap(cards) > 0 {
		s.retired = append(s.retired, cards)
		s.handed = true
	}
}

// Ready makes the retired lists available, once the load that reads them
// is done.
func (s *Spares) Ready() {
	for _, cs := range s.retired {
		c := bits.Len(uint(cap(cs))) - 1
		if len(s.ready[c]) < maxSpares {
			s.ready[c] = append(s.ready[c], cs[:0])
		}
	}
	clear(s.retired)
	s.retired = s.retired[:0]
}

// take returns a list of k numbers to fill: a ready one of k's class, or
// a new one with the class's capacity. A nil s, or one whose caller never
// hands lists back (huitian's guarantee), makes a list of exactly k.
func (s *Spares) take(k int) []int {
	if s == nil || !s.handed || k <= 0 {
		return make([]int, k)
	}
	c := bits.Len(uint(k - 1))
	if n := len(s.ready[c]); n > 0 {
		cs := s.ready[c][n-1]
		s.ready[c][n-1] = nil
		s.ready[c] = s.ready[c][:n-1]
		return cs[:k]
	}
	return make([]int, k, 1<<c)
}
