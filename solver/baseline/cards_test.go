package baseline

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/modeltest"
)

// TestResolveEqualsLookup: over random cycles of running jobs — some
// ended, some started, the list reordered, a job's cards changed under the
// same id (same count or not), a reference to a card that does not exist —
// Resolve gives each job the card numbers a lookup of each reference
// gives, sorted (a resource manager may list them out of card order), or
// the error naming the bad reference; a job unchanged since the last
// cycle gets the same slice again.
func TestResolveEqualsLookup(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := modeltest.Uniform(rapid.IntRange(1, 6).Draw(t, "nodes"), 4, 0)
		if err := c.Seal(); err != nil {
			t.Fatal(err)
		}
		lay := c.Layout()
		var ids CardIDs
		var running []model.Running
		type answer struct {
			refs []model.CardRef
			ids  []int
		}
		last := map[string]answer{} // the last cycle's, by job
		next := 0
		for cycle := range rapid.IntRange(1, 12).Draw(t, "cycles") {
			// Change the list: drop, reorder, move cards, add.
			var kept []model.Running
			for _, r := range running {
				switch rapid.IntRange(0, 5).Draw(t, "change") {
				case 0:
					continue // ended
				case 1: // its cards moved, same id
					r.Cards = randomRefs(t, lay, len(r.Cards))
				}
				kept = append(kept, r)
			}
			if rapid.IntRange(0, 4).Draw(t, "shuffle") == 0 {
				kept = rapid.Permutation(kept).Draw(t, "order")
			}
			for range rapid.IntRange(0, 4).Draw(t, "new") {
				next++
				j := modeltest.Job(fmt.Sprintf("r%d", next)).Cards(1).Limit(time.Hour).Build()
				kept = append(kept, model.Running{Job: j, Cards: randomRefs(t, lay, rapid.IntRange(1, 4).Draw(t, "n"))})
			}
			running = kept
			s := &model.Snapshot{Cluster: c, Running: running}
			bad := -1
			if len(running) > 0 && rapid.IntRange(0, 9).Draw(t, "bad") == 0 {
				bad = rapid.IntRange(0, len(running)-1).Draw(t, "which")
				s.Running = slices.Clone(running)
				s.Running[bad].Cards = append(slices.Clone(s.Running[bad].Cards), model.CardRef{Node: "nowhere", Index: 0})
			}
			got, err := ids.Resolve(s)
			if bad >= 0 {
				if err == nil {
					t.Fatalf("cycle %d: a reference to no card resolved", cycle)
				}
				clear(last) // the jobs before the bad one were resolved anew
				continue
			}
			if err != nil {
				t.Fatalf("cycle %d: %v", cycle, err)
			}
			for i, r := range running {
				var want []int
				for _, ref := range r.Cards {
					id, ok := lay.CardID(ref)
					if !ok {
						t.Fatalf("no card %v", ref)
					}
					want = append(want, id)
				}
				slices.Sort(want)
				if !slices.Equal(got[i], want) {
					t.Fatalf("cycle %d: %s resolved to %v, want %v", cycle, r.Job.ID, got[i], want)
				}
				if prev, ok := last[r.Job.ID]; ok && slices.Equal(prev.refs, r.Cards) && &prev.ids[0] != &got[i][0] {
					t.Fatalf("cycle %d: %s unchanged, resolved to another slice", cycle, r.Job.ID)
				}
			}
			clear(last)
			for i, r := range running {
				last[r.Job.ID] = answer{r.Cards, got[i]}
			}
		}
	})
}

// randomRefs draws n references to distinct cards, in card order or
// not.
func randomRefs(t *rapid.T, lay *model.Layout, n int) []model.CardRef {
	n = min(n, len(lay.Cards))
	all := make([]int, len(lay.Cards))
	for i := range all {
		all[i] = i
	}
	pick := rapid.Permutation(all).Draw(t, "cards")[:n]
	if rapid.Bool().Draw(t, "in order") {
		slices.Sort(pick)
	}
	return lay.Refs(pick)
}
