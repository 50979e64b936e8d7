package sorted

import (
	"cmp"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestMergeIsTheSort: merging two sorted runs gives their sort, in
// whatever the tail of s held before, with ties and empty runs; MergeFunc
// in a reversed order, and stably (an added entry after the equal ones
// already there).
func TestMergeIsTheSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.SliceOf(rapid.IntRange(0, 9)).Draw(t, "a")
		add := rapid.SliceOf(rapid.IntRange(0, 9)).Draw(t, "add")
		slices.Sort(a)
		slices.Sort(add)
		want := slices.Sorted(slices.Values(append(slices.Clone(a), add...)))
		s := append(slices.Clone(a), rapid.SliceOfN(rapid.Int(), len(add), len(add)).Draw(t, "junk")...)
		Merge(s, len(a), add)
		if !slices.Equal(s, want) {
			t.Fatalf("Merge(%v, %v) = %v, want %v", a, add, s, want)
		}

		// By the first field, descending; the second tells the runs apart.
		type kv struct{ k, from int }
		desc := func(x, y kv) int { return cmp.Compare(y.k, x.k) }
		var ka, kadd []kv
		for _, v := range a {
			ka = append(ka, kv{v, 0})
		}
		for _, v := range add {
			kadd = append(kadd, kv{v, 1})
		}
		slices.SortStableFunc(ka, desc)
		slices.SortStableFunc(kadd, desc)
		kwant := slices.Clone(append(slices.Clone(ka), kadd...))
		slices.SortStableFunc(kwant, desc)
		ks := append(slices.Clone(ka), make([]kv, len(kadd))...)
		MergeFunc(ks, len(ka), kadd, desc)
		if !slices.Equal(ks, kwant) {
			t.Fatalf("MergeFunc(%v, %v) = %v, want %v", ka, kadd, ks, kwant)
		}
	})
}
