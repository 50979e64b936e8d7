package preempt

import (
	"testing"
	"time"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/modeltest"
	"pgregory.net/rapid"
)

func TestReleaseRules(t *testing.T) {
	c := Defaults()
	now := modeltest.Epoch.Add(time.Hour)
	job := modeltest.Job("b").Build()
	ckpt := modeltest.Job("c").Checkpoint(2 * time.Minute).Build()
	tests := []struct {
		name      string
		r         model.Running
		threshold bool
		want      Release
	}{
		{"a regular job is never released", model.Running{Job: ckpt, Kind: model.Regular, Start: modeltest.Epoch}, true, Release{}},
		{"a backfill job that cannot checkpoint waits for the threshold", model.Running{Job: job, Kind: model.Backfill, Start: modeltest.Epoch}, false, Release{}},
		// Lost: 2 cards × its run until it stops, an hour and the minute's notice.
		{"after the threshold it is requeued with a short notice",
			model.Running{Job: job, Kind: model.Backfill, Start: modeltest.Epoch, Cards: modeltest.Refs("n", 0, 2)}, true,
			Release{OK: true, At: now.Add(time.Minute), Action: model.PreemptRequeue, Notice: time.Minute, Lost: 2 * 3660}},
		// Lost: 1 card × the 2-minute checkpoint, written and read back.
		{"a checkpointable job is suspended with checkpoint cost plus margin",
			model.Running{Job: ckpt, Kind: model.Backfill, Start: modeltest.Epoch, Cards: modeltest.Refs("n", 0, 1)}, false,
			Release{OK: true, At: now.Add(3 * time.Minute), Action: model.PreemptSuspend, Notice: 3 * time.Minute, Lost: 240}},
		{"a protected job is released only after its protection",
			model.Running{Job: ckpt, Kind: model.Backfill, Start: modeltest.Epoch, Cards: modeltest.Refs("n", 0, 1), ProtectedUntil: now.Add(10 * time.Minute)}, false,
			Release{OK: true, At: now.Add(13 * time.Minute), Action: model.PreemptSuspend, Notice: 3 * time.Minute, Lost: 240}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReleaseOf(c, &tc.r, now, tc.threshold); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCompensationBounded(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := Config{CompensationStep: rapid.IntRange(0, 5).Draw(t, "step"), CompensationCap: rapid.IntRange(0, 10).Draw(t, "cap")}
		n := rapid.IntRange(-5, 1000).Draw(t, "requeues")
		if got := Compensation(c, n); got < 0 || got > c.CompensationCap {
			t.Fatalf("compensation %d outside [0, %d]", got, c.CompensationCap)
		}
	})
}
