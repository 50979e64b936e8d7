package model

import "iter"

// Runs yields a list of card numbers' runs of consecutive numbers, in the
// list's order: each one's first card and the card after its last. A
// job's cards on a flat machine are runs of hundreds, mostly, which a set
// of cards a bit each (a pool's, the simulator's) takes a word at a time
// (Words).
func Runs(cards []int) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		for i := 0; i < len(cards); {
			first, j := cards[i], i+1
			for j < len(cards) && cards[j] == first+(j-i) {
				j++
			}
			if !yield(first, first+j-i) {
				return
			}
			i = j
		}
	}
}

// SortedRuns is Runs for a list sorted with each card once (a set's, as
// the simulator keeps a job's cards): each run's end is found by
// doubling and halving steps instead of read card by card, so that a
// job's thousands of cards on a flat machine, in a few runs, cost a few
// dozen reads. On any other list its runs are wrong.
func SortedRuns(cards []int) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		for i := 0; i < len(cards); {
			// cards[i:j] is a run iff cards[j-1]-cards[i] == j-1-i, a
			// predicate true up to the run's end and false after it.
			first, in, out := cards[i], i, len(cards) // cards[in] in the run; cards[out] not, or the end
			for step := 1; in+step < len(cards); step *= 2 {
				if cards[in+step]-first != in+step-i {
					out = in + step
					break
				}
				in += step
			}
			for out-in > 1 {
				m := int(uint(in+out) >> 1)
				if cards[m]-first == m-i {
					in = m
				} else {
					out = m
				}
			}
			if !yield(first, first+in-i+1) {
				return
			}
			i = in + 1
		}
	}
}

// Words yields the words of a set a bit a card (card c is bit c&63 of
// word c>>6) that cards first to end-1 fall in, in order: each one's
// index and the run's bits in it.
func Words(first, end int) iter.Seq2[int, uint64] {
	return func(yield func(int, uint64) bool) {
		for c := first; c < end; {
			w, lo := c>>6, c&63
			hi := min(64, lo+end-c) // bits lo..hi-1 of word w
			if !yield(w, ^uint64(0)>>(64-(hi-lo))<<lo) {
				return
			}
			c += hi - lo
		}
	}
}
