package model

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestRunsAndWords: Runs cuts a list into its runs of consecutive numbers,
// in order, each as long as it goes; Words marks exactly a run's cards.
func TestRunsAndWords(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cards := rapid.SliceOf(rapid.IntRange(0, 300)).Draw(t, "cards")
		var back []int
		prevEnd := -1
		for first, end := range Runs(cards) {
			if end <= first {
				t.Fatalf("run [%d, %d) is empty", first, end)
			}
			if first == prevEnd {
				t.Fatalf("run from %d follows one that ended there: not the longest", first)
			}
			set := make([]uint64, 6)
			for w, mask := range Words(first, end) {
				if set[w]&mask != 0 {
					t.Fatalf("word %d yielded twice", w)
				}
				set[w] |= mask
			}
			for c := range 6 * 64 {
				if in := set[c>>6]&(1<<(c&63)) != 0; in != (c >= first && c < end) {
					t.Fatalf("run [%d, %d): card %d marked %v", first, end, c, in)
				}
			}
			for c := first; c < end; c++ {
				back = append(back, c)
			}
			prevEnd = end
		}
		if !slices.Equal(back, cards) {
			t.Fatalf("runs %v make %v", cards, back)
		}
	})
}
