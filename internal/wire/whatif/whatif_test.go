package whatif

import (
	"math"
	"testing"

	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/sim"
)

func TestSeconds(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   float64
		want *durationpb.Duration
	}{
		{"whole seconds", 90, &durationpb.Duration{Seconds: 90}},
		{"to the nanosecond", 1.0000000016, &durationpb.Duration{Seconds: 1, Nanos: 2}},
		{"nanos that round up to a second", 1.9999999999, &durationpb.Duration{Seconds: 2}},
		{"negative: both parts negative", -2.5, &durationpb.Duration{Seconds: -2, Nanos: -500000000}},
		{"NaN is zero", math.NaN(), &durationpb.Duration{}},
		{"beyond the largest Duration", math.Inf(1), &durationpb.Duration{Seconds: maxDurationSeconds}},
	} {
		got := Seconds(tc.in)
		if got.Seconds != tc.want.Seconds || got.Nanos != tc.want.Nanos {
			t.Errorf("%s: Seconds(%v) = %v, want %v", tc.name, tc.in, got, tc.want)
		}
	}
}

// TestResultAbsentStaysAbsent: a rate with nothing to measure is absent in
// the contract, a rate of 0 is 0.
func TestResultAbsentStaysAbsent(t *testing.T) {
	zero := 0.0
	s := sim.Summary{Jobs: 3, LostShare: &zero, Classes: []sim.ClassStats{{Class: "1", Jobs: 3}}}
	r := Result(pb.Policy_POLICY_EASY, s, nil, Counts{Requeues: 2})
	if r.BackfillCompletionRate != nil || r.UtilizationWhileQueued != nil || r.MainMeanWait != nil {
		t.Errorf("absent measures mapped to %v, %v, %v", r.BackfillCompletionRate, r.UtilizationWhileQueued, r.MainMeanWait)
	}
	if r.LostShare == nil || r.LostShare.GetValue() != 0 || r.Requeues != 2 || r.MeanCycleTime.AsDuration() != 0 {
		t.Errorf("lost share %v, requeues %d, mean cycle %v", r.LostShare, r.Requeues, r.MeanCycleTime)
	}
	if len(r.SizeClasses) != 1 || r.SizeClasses[0].VsReference != nil {
		t.Errorf("classes %v: want one, without a reference", r.SizeClasses)
	}
}
