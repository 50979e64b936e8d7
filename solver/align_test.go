package solver

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/modeltest"
)

// alignWorld: two nodes of 8 cards. n000 has one card held by a job of
// 100 hours; n001 six cards held by a job of 1 hour. A one-card job of
// 50 hours waits. Best fit puts it on n001 (two free cards), keeping n001
// busy 49 hours longer; aligned, it goes to n000, busy longer anyway.
func alignWorld() *model.Snapshot {
	c := modeltest.Uniform(2, 8, 0)
	now := modeltest.Epoch.Add(1000 * time.Hour)
	long := modeltest.Job("long").Cards(1).Limit(100 * time.Hour).Build()
	short := modeltest.Job("short").Cards(6).Limit(time.Hour).Build()
	s := &model.Snapshot{Now: now, Cluster: c, Running: []model.Running{
		modeltest.Running(long, now, modeltest.Refs("n000", 0, 1)...),
		modeltest.Running(short, now, modeltest.Refs("n001", 0, 6)...),
	}}
	s.Queued = append(s.Queued, modeltest.Job("new").Cards(1).Limit(50*time.Hour).SubmitAfter(999*time.Hour).Build())
	return s
}

// observeRuntimes feeds h finished jobs of the given runtimes, each with
// the limit limit(runtime).
func observeRuntimes(h *Huitian, runtimes []time.Duration, limit func(time.Duration) time.Duration) {
	for k, rt := range runtimes {
		j := modeltest.Job(fmt.Sprintf("h%d", k)).User("ann").Cards(1).Limit(limit(rt)).Build()
		start := modeltest.Epoch.Add(time.Duration(k) * time.Hour)
		observeFinished(h, j, start, rt)
	}
}

// TestAlignOnlyOnLimitsThatOrder: the planner places end-aligned only once
// its history shows limits that order runtimes (Config.AlignSpread) and a
// job of a whole node's cards: with limits twice the runtimes it does,
// with one limit of 3 days for jobs of a minute to a day it keeps best
// fit, as it does with no history, with AlignEnds off, or with no job of
// 8 cards among those it saw finish.
func TestAlignOnlyOnLimitsThatOrder(t *testing.T) {
	var runtimes []time.Duration
	for k := range 20 {
		runtimes = append(runtimes, time.Duration(60*math.Pow(1.6, float64(k)))*time.Second)
	}
	scaled := func(rt time.Duration) time.Duration { return 2 * rt }
	flat := func(time.Duration) time.Duration { return 72 * time.Hour }
	for _, tc := range []struct {
		name  string
		align bool
		limit func(time.Duration) time.Duration
		whole bool   // the history holds a job of 8 cards
		want  string // the node the waiting job starts on
	}{
		{"limits twice the runtimes", true, scaled, true, "n000"},
		{"one limit for all", true, flat, true, "n001"},
		{"no history", true, nil, false, "n001"},
		{"AlignEnds off", false, scaled, true, "n001"},
		{"no job of a whole node's cards", true, scaled, false, "n001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.AlignEnds = tc.align
			h := NewHuitianGreedy(cfg)
			if tc.limit != nil {
				observeRuntimes(h, runtimes, tc.limit)
			}
			if tc.whole {
				gang := modeltest.Job("gang").User("ann").Cards(8).Limit(2 * time.Hour).Build()
				observeFinished(h, gang, modeltest.Epoch, time.Hour)
			}
			d, err := h.Plan(context.Background(), alignWorld())
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Starts) != 1 || d.Starts[0].JobID != "new" {
				t.Fatalf("starts %+v, want the waiting job", d.Starts)
			}
			if got := d.Starts[0].Cards[0].Node; got != tc.want {
				t.Errorf("started on %s, want %s", got, tc.want)
			}
		})
	}
}
