package baseline

import (
	"cmp"
	"slices"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/modeltest"
)

// TestOrdersByIsTheSortedOrder checks Orders.By, with its raised jobs
// sorted apart and merged in and its buffers reused from call to call,
// against a plain sort of every job by priority plus bonus, submit time,
// natural id and position — on queues listed in any order, or in submit
// order but for a few jobs moved, with ties.
func TestOrdersByIsTheSortedOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var o Orders
		for range rapid.IntRange(1, 3).Draw(t, "calls") {
			n := rapid.IntRange(0, 80).Draw(t, "jobs")
			q := make([]model.Job, n)
			bonus := map[string]int{}
			for i := range q {
				q[i] = model.Job{
					ID:       "j" + strconv.Itoa(rapid.IntRange(0, 30).Draw(t, "id")),
					Priority: rapid.IntRange(0, 2).Draw(t, "prio"),
					Submit:   modeltest.Epoch.Add(time.Duration(rapid.IntRange(0, 5).Draw(t, "sec"))*time.Second + time.Duration(rapid.IntRange(0, 1).Draw(t, "ns"))),
				}
				if rapid.IntRange(0, 3).Draw(t, "raised") == 0 {
					bonus[q[i].ID] = rapid.IntRange(-1, 3).Draw(t, "bonus")
				}
			}
			if rapid.Bool().Draw(t, "listed") {
				// Listed as a resource manager lists it: by priority and
				// submit time, but for a few moved (requeued jobs keep
				// their submit).
				slices.SortStableFunc(q, func(a, b model.Job) int {
					if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
						return c
					}
					return a.Submit.Compare(b.Submit)
				})
				for range rapid.IntRange(0, 4).Draw(t, "moved") {
					if n > 1 {
						from, to := rapid.IntRange(0, n-1).Draw(t, "from"), rapid.IntRange(0, n-1).Draw(t, "to")
						j := q[from]
						q = slices.Insert(slices.Delete(q, from, from+1), to, j)
					}
				}
			}
			raise := func(j *model.Job) int { return bonus[j.ID] }
			if rapid.Bool().Draw(t, "none") {
				raise = nil
			}
			want := make([]int, n)
			for i := range want {
				want[i] = i
			}
			prio := func(k int) int {
				p := q[k].Priority
				if raise != nil {
					p += raise(&q[k])
				}
				return p
			}
			slices.SortFunc(want, func(a, b int) int {
				if c := cmp.Compare(prio(b), prio(a)); c != 0 {
					return c
				}
				if c := q[a].Submit.Compare(q[b].Submit); c != 0 {
					return c
				}
				if c := model.CompareIDs(q[a].ID, q[b].ID); c != 0 {
					return c
				}
				return cmp.Compare(a, b)
			})
			if got := o.By(q, raise); !slices.Equal(got, want) {
				t.Fatalf("order %v, want %v", got, want)
			}
		}
	})
}

// TestElapsedIsSub checks Elapsed against Time.Sub: wall-clock times
// near and far apart (beyond a Duration's range too), in other zones, and
// times that carry the monotonic clock's reading.
func TestElapsedIsSub(t *testing.T) {
	mono := time.Now()
	rapid.Check(t, func(t *rapid.T) {
		at := func(name string) time.Time {
			if rapid.IntRange(0, 5).Draw(t, name+"Mono") == 0 {
				return mono.Add(time.Duration(rapid.Int64Range(-1e12, 1e12).Draw(t, name+"Off")))
			}
			u := time.Unix(rapid.Int64Range(-1e13, 1e13).Draw(t, name+"Sec"), rapid.Int64Range(0, 999_999_999).Draw(t, name+"Ns"))
			if rapid.Bool().Draw(t, name+"Zone") {
				u = u.In(time.FixedZone("x", 3600*rapid.IntRange(-12, 12).Draw(t, name+"H")))
			}
			return u
		}
		now, start := at("now"), at("start")
		if rapid.Bool().Draw(t, "near") {
			start = now.Add(time.Duration(rapid.Int64Range(-1e15, 1e15).Draw(t, "d")))
		}
		if got, want := Elapsed(now, start), now.Sub(start); got != want {
			t.Fatalf("Elapsed(%v, %v) = %v, want %v", now, start, got, want)
		}
	})
}
