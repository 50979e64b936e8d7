package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/sim/trace"
)

// TestReplanBy: a decision's ReplanBy is a planning cycle when nothing
// else happens then, in per-time and per-event cycles; the earliest one
// asked for wins, a passed or superseded one makes no cycle, interval
// cycles plan on their ticks only, and the loop's on its ticks and the
// wakes.
func TestReplanBy(t *testing.T) {
	const s = time.Second
	// Job a (1 card, runs 100 s) starts at 0 and holds flat:1; job b waits
	// behind it from 1. Nothing happens between 1 and 100.
	jobs := []trace.Job{tj("a", 0, 100, 100, 1), tj("b", 1, 10, 10, 1)}
	for _, tc := range []struct {
		name   string
		cycles Cycles
		every  time.Duration
		asks   map[int64][]time.Duration // at a cycle's time: the ReplanBy of its decisions (from the epoch), one per cycle there
		want   []int64
	}{
		{"none", CyclesPerTime, 0, nil, []int64{0, 1, 100}},
		{"one wake", CyclesPerTime, 0, map[int64][]time.Duration{1: {40 * s}}, []int64{0, 1, 40, 100}},
		{"a wake asks for the next", CyclesPerTime, 0, map[int64][]time.Duration{1: {40 * s}, 40: {70 * s}}, []int64{0, 1, 40, 70, 100}},
		{"rounded up to a second", CyclesPerTime, 0, map[int64][]time.Duration{1: {1500 * time.Millisecond}}, []int64{0, 1, 2, 100}},
		{"now or before: none", CyclesPerTime, 0, map[int64][]time.Duration{1: {1 * s}}, []int64{0, 1, 100}},
		{"the earliest wins", CyclesPerTime, 0, map[int64][]time.Duration{0: {60 * s}, 1: {30 * s}}, []int64{0, 1, 30, 100}},
		{"superseded: no cycle at the later", CyclesPerTime, 0, map[int64][]time.Duration{0: {30 * s}, 1: {20 * s}}, []int64{0, 1, 20, 100}},
		{"per event", CyclesPerEvent, 0, map[int64][]time.Duration{1: {40 * s}}, []int64{0, 1, 40, 100}},
		{"interval: its ticks only", CyclesInterval, 25 * s, map[int64][]time.Duration{25: {40 * s}}, []int64{0, 25, 50, 75, 100}},
		{"loop: its ticks and the wakes", CyclesLoop, 25 * s, map[int64][]time.Duration{25: {40 * s}}, []int64{0, 25, 40, 50, 75, 100}},
		{"loop: a wake on a tick is one cycle", CyclesLoop, 25 * s, map[int64][]time.Duration{25: {50 * s}}, []int64{0, 25, 50, 75, 100}},
		{"after the queue emptied: none", CyclesPerTime, 0, map[int64][]time.Duration{100: {150 * s}}, []int64{0, 1, 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var times []int64
			seen := map[int64]int{}
			pl := planFunc(func(s *model.Snapshot) (*model.Decision, error) {
				now := sec(s.Now)
				times = append(times, now)
				d := &model.Decision{}
				if asks := tc.asks[now]; seen[now] < len(asks) {
					d.ReplanBy = DefaultEpoch.Add(asks[seen[now]])
				}
				seen[now]++
				if len(s.Running) == 0 {
					for _, j := range s.Queued {
						d.Starts = append(d.Starts, model.Start{JobID: j.ID, Cards: []model.CardRef{{Node: "p0"}}, Kind: model.Regular})
						break
					}
				}
				return d, nil
			})
			run(t, jobs, pl, Config{Cluster: flat(t, 1), Cycles: tc.cycles, Interval: tc.every})
			if !slices.Equal(times, tc.want) {
				t.Errorf("cycles at %v, want %v", times, tc.want)
			}
		})
	}
}

// TestLoopCyclesWhenCardsComeBack: the loop's cycles (CyclesLoop) come on
// its ticks and when a preempted job's cards come back, its notice run
// out; interval cycles wait for the next tick. Backfill job a (runs 100 s)
// starts at 0 on flat:1; b arrives at 1; the tick at 25 requeues a with a
// 7-second notice.
func TestLoopCyclesWhenCardsComeBack(t *testing.T) {
	jobs := []trace.Job{tj("a", 0, 100, 100, 1), tj("b", 1, 10, 10, 1)}
	for _, tc := range []struct {
		cycles Cycles
		want   []int64
		bStart int64
	}{
		{CyclesLoop, []int64{0, 25, 32, 50}, 32},
		{CyclesInterval, []int64{0, 25, 50, 75}, 50},
	} {
		t.Run(tc.cycles.String(), func(t *testing.T) {
			var times []int64
			bStart := int64(-1)
			told := false
			pl := planFunc(func(s *model.Snapshot) (*model.Decision, error) {
				now := sec(s.Now)
				times = append(times, now)
				d := &model.Decision{}
				switch {
				case len(s.Running) == 0 && len(s.Queued) > 0:
					j := s.Queued[len(s.Queued)-1] // b before a requeued
					kind := model.Regular
					if j.ID == "a" {
						kind = model.Backfill
					}
					if j.ID == "b" {
						bStart = now
					}
					d.Starts = append(d.Starts, model.Start{JobID: j.ID, Cards: []model.CardRef{{Node: "p0"}}, Kind: kind})
				case len(s.Running) == 1 && s.Running[0].Job.ID == "a" && !told && len(s.Queued) > 0:
					told = true
					d.Preemptions = append(d.Preemptions, model.Preemption{JobID: "a", Action: model.PreemptRequeue, Notice: 7 * time.Second, ForJobID: "b"})
				}
				return d, nil
			})
			run(t, jobs, pl, Config{Cluster: flat(t, 1), Cycles: tc.cycles, Interval: 25 * time.Second})
			if len(times) < len(tc.want) || !slices.Equal(times[:len(tc.want)], tc.want) {
				t.Errorf("cycles at %v, want %v first", times, tc.want)
			}
			if bStart != tc.bStart {
				t.Errorf("b started at %d, want %d", bStart, tc.bStart)
			}
		})
	}
}
