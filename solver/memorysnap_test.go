package solver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/solver/clp"
)

// feed draws one step and gives it to every planner: a job event (a queued
// job starts, a job finishes, a running job is preempted) or a cycle
// (Plan, then Decided) at a later now. Each cycle's decisions must be the
// same for all planners.
type feed struct {
	s   *model.Snapshot
	now time.Time
}

func (f *feed) step(t *rapid.T, hs ...*Huitian) {
	job := func() *model.Job {
		all := make([]*model.Job, 0, len(f.s.Queued)+len(f.s.Running))
		for i := range f.s.Queued {
			all = append(all, &f.s.Queued[i])
		}
		for i := range f.s.Running {
			all = append(all, &f.s.Running[i].Job)
		}
		if len(all) == 0 {
			return nil
		}
		return all[rapid.IntRange(0, len(all)-1).Draw(t, "job")]
	}
	f.now = f.now.Add(time.Duration(rapid.IntRange(0, 90).Draw(t, "dt")) * time.Minute)
	alloc := model.AllocKind(rapid.IntRange(int(model.Regular), int(model.Backfill)).Draw(t, "alloc"))
	switch op := rapid.IntRange(0, 3).Draw(t, "op"); op {
	case 0, 1, 2:
		j := job()
		if j == nil {
			return
		}
		e := model.Event{JobID: j.ID, Job: j, Time: f.now, Alloc: alloc}
		switch op {
		case 0:
			e.Kind = model.EventStarted
		case 1:
			e.Kind = model.EventFinished
			e.Start = f.now.Add(-time.Duration(rapid.IntRange(0, 300).Draw(t, "ran")) * time.Minute)
			e.Exit = model.ExitState(rapid.IntRange(1, 3).Draw(t, "exit"))
		case 2:
			e.Kind = model.EventPreempted
			e.Start = f.now.Add(-time.Duration(rapid.IntRange(0, 300).Draw(t, "ran")) * time.Minute)
		}
		for _, h := range hs {
			h.Observe(e)
		}
	case 3:
		s := *f.s
		s.Now = f.now
		var first *model.Decision
		for i, h := range hs {
			d, err := h.Plan(context.Background(), &s)
			if err != nil {
				t.Fatalf("plan: %v", err)
			}
			if i == 0 {
				first = d
			} else if diff := cmp.Diff(first, d, cmpopts.EquateNaNs()); diff != "" {
				t.Fatalf("planner %d plans differently from the original at %s (-original +restored):\n%s", i, f.now, diff)
			}
			h.Decided(&s, d)
		}
	}
}

func freshLike(h *Huitian) *Huitian {
	if h.lp != nil {
		return NewHuitian(DefaultConfig(), clp.LP{})
	}
	return NewHuitianGreedy(DefaultConfig())
}

// TestRestoredMemoryPlansAsTheOriginal: after any sequence of events and
// cycles, a planner restored from the saved memory saves the same bytes,
// plans the same snapshots as the original, and keeps doing so as both are
// fed the same events and decisions.
func TestRestoredMemoryPlansAsTheOriginal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, h := randomWorld(t)
		f := &feed{s: s, now: s.Now}
		for range rapid.IntRange(0, 30).Draw(t, "before") {
			f.step(t, h)
		}
		saved, err := h.MarshalMemory()
		if err != nil {
			t.Fatal(err)
		}
		r := freshLike(h)
		if err := r.UnmarshalMemory(saved); err != nil {
			t.Fatal(err)
		}
		again, err := r.MarshalMemory()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(saved, again) {
			t.Fatalf("restored memory saves other bytes:\n%s\n%s", saved, again)
		}
		if diff := cmp.Diff(h.PlannerStatus(), r.PlannerStatus(), cmpopts.EquateNaNs()); diff != "" {
			t.Fatalf("restored status differs:\n%s", diff)
		}
		for range rapid.IntRange(1, 15).Draw(t, "after") {
			f.step(t, h, r)
		}
		a, _ := h.MarshalMemory()
		b, _ := r.MarshalMemory()
		if !bytes.Equal(a, b) {
			t.Fatalf("memories differ after the same feed:\n%s\n%s", a, b)
		}
	})
}

func TestUnmarshalMemoryRefuses(t *testing.T) {
	h := NewHuitianGreedy(DefaultConfig())
	saved, err := h.MarshalMemory()
	if err != nil {
		t.Fatal(err)
	}
	other := bytes.Replace(saved, []byte(fmt.Sprintf(`"version":%d`, MemoryVersion)), []byte(`"version":999`), 1)
	for _, tc := range []struct {
		name    string
		planner *Huitian
		b       []byte
		version bool
	}{
		{"another encoding version", NewHuitianGreedy(DefaultConfig()), other, true},
		{"another planner's memory", NewHuitian(DefaultConfig(), clp.LP{}), saved, false},
		{"not JSON", NewHuitianGreedy(DefaultConfig()), []byte("{"), false},
		{"a ring's next outside it", NewHuitianGreedy(DefaultConfig()),
			bytes.Replace(saved, []byte(`"keys":[]`), []byte(`"keys":[{"key":"all","vals":[0.5],"next":3}]`), 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.planner.UnmarshalMemory(tc.b)
			if err == nil {
				t.Fatal("restored")
			}
			if got := errors.Is(err, ErrMemoryVersion); got != tc.version {
				t.Fatalf("errors.Is(%v, ErrMemoryVersion) = %v, want %v", err, got, tc.version)
			}
		})
	}
}

func FuzzUnmarshalMemory(f *testing.F) {
	h := NewHuitianGreedy(DefaultConfig())
	saved, _ := h.MarshalMemory()
	f.Add(saved)
	f.Fuzz(func(t *testing.T, b []byte) {
		h := NewHuitianGreedy(DefaultConfig())
		if h.UnmarshalMemory(b) != nil {
			return
		}
		if _, err := h.MarshalMemory(); err != nil {
			t.Fatalf("a restored memory does not save: %v", err)
		}
	})
}
