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

// SortedRuns finds the runs Runs does on a list sorted with each card
// once, whatever their lengths.
func TestSortedRuns(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		set := rapid.SliceOfDistinct(rapid.IntRange(0, 3000), rapid.ID).Draw(t, "set")
		// Long runs too: a few stretches of consecutive cards.
		for _, n := range rapid.SliceOfN(rapid.IntRange(1, 700), 0, 4).Draw(t, "stretches") {
			first := rapid.IntRange(0, 3000).Draw(t, "first")
			for c := first; c < first+n; c++ {
				set = append(set, c)
			}
		}
		slices.Sort(set)
		set = slices.Compact(set)
		type run struct{ first, end int }
		var want, got []run
		for first, end := range Runs(set) {
			want = append(want, run{first, end})
		}
		for first, end := range SortedRuns(set) {
			got = append(got, run{first, end})
		}
		if !slices.Equal(got, want) {
			t.Fatalf("SortedRuns(%v) = %v, Runs gives %v", set, got, want)
		}
	})
}
