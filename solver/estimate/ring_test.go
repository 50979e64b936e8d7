package estimate

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestRingSortedFollowsAdds: the sorted values kept up to date value by
// value are the ring's values sorted, whenever they are read.
func TestRingSortedFollowsAdds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		capacity := rapid.IntRange(1, 12).Draw(t, "capacity")
		var r ring
		for range rapid.IntRange(0, 60).Draw(t, "adds") {
			// Few distinct values: repeats are the case to get right.
			r.add(float64(rapid.IntRange(0, 5).Draw(t, "v"))/4, capacity)
			if rapid.Bool().Draw(t, "read") {
				want := slices.Sorted(slices.Values(r.vals))
				if got := r.sortedVals(); !slices.Equal(got, want) {
					t.Fatalf("sorted %v, want %v (values %v)", got, want, r.vals)
				}
			}
		}
	})
}
