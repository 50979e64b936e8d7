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
