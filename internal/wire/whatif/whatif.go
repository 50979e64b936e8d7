package whatif

import (
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/shape"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/sim"
)

// traceFormats maps the contract's trace formats to sim/trace's names.
var traceFormats = map[pb.TraceFormat]string{
	pb.TraceFormat_TRACE_FORMAT_SWF:    "swf",
	pb.TraceFormat_TRACE_FORMAT_PHILLY: "philly",
	pb.TraceFormat_TRACE_FORMAT_OPENB:  "openb",
	pb.TraceFormat_TRACE_FORMAT_HELIOS: "helios",
	pb.TraceFormat_TRACE_FORMAT_ACME:   "acme",
	pb.TraceFormat_TRACE_FORMAT_SYNTH:  "synth",
}

// TraceFormat is the sim/trace name of a contract's trace format; false
// for one it does not know (unspecified).
func TraceFormat(f pb.TraceFormat) (string, bool) {
	name, ok := traceFormats[f]
	return name, ok
}

// Counts are what a run's observer counted besides its summary: the
// preemptions by action and the mean planning time per cycle.
type Counts struct {
	Suspensions, Requeues int64
	MeanCycleTime         time.Duration
}

// Progress is a policy's progress message: jobs finished of total, and
// the simulated clock when it has started (now is not zero).
func Progress(p pb.Policy, done, total int64, now time.Time) *pb.WhatIfProgress {
	out := &pb.WhatIfProgress{Policy: p, JobsDone: done, JobsTotal: total}
	if !now.IsZero() {
		out.SimulatedTime = timestamppb.New(now)
	}
	return out
}

// Result maps a run's summary to the contract: the same numbers `huitian
// whatif --json` prints (seconds become durations), with the size classes
// compared on the same jobs with the reference run (same is nil without
// one), the preemptions split by action and the mean planning time per
// cycle. The backfill measures a run does not have (no backfill job, a
// planner without idle-capacity accounting: null in the JSON) are absent,
// never 0.
func Result(p pb.Policy, s sim.Summary, same []sim.SameJobs, c Counts) *pb.PolicyResult {
	out := &pb.PolicyResult{
		Policy:              p,
		Jobs:                int64(s.Jobs),
		Makespan:            Seconds(float64(s.Makespan)),
		MeanWait:            Seconds(s.AvgWait),
		P95Wait:             Seconds(s.P95Wait),
		MeanBoundedSlowdown: s.AvgBSLD,
		Utilization:         s.Utilization,
		BackfillStarts:      int64(s.BackfillStarts),
		Suspensions:         c.Suspensions,
		Requeues:            c.Requeues,
		MeanCycleTime:       durationpb.New(c.MeanCycleTime),
		MedianWait:          Seconds(s.MedianWait),
		MeanFlow:            Seconds(s.AvgFlow),
		NeverStarted:        int64(s.NeverStarted),
		RegularStarts:       int64(s.RegularStarts),
		LostCardSeconds:     s.LostCardSeconds,
		MainJobs:            int64(s.MainJobs),
		Cycles:              int64(s.Cycles),
		// Absent stays absent: a rate with nothing to measure is not 0.
		BackfillCompletionRate: optional(s.BackfillCompletionRate),
		BackfillUtilization:    optional(s.BackfillUtilization),
		UtilizationWhileQueued: optional(s.UtilizationQueued),
		LostShare:              optional(s.LostShare),
		HeadDelay: &pb.HeadDelay{
			Jobs: int64(s.HeadDelay.Jobs), Mean: Seconds(s.HeadDelay.Mean),
			P95: Seconds(s.HeadDelay.P95), Max: Seconds(s.HeadDelay.Max),
			Held: int64(s.HeadDelay.Held), HeldMean: Seconds(s.HeadDelay.HeldMean), HeldMax: Seconds(s.HeadDelay.HeldMax),
		},
	}
	if v := s.MainAvgWait; v != nil {
		out.MainMeanWait = Seconds(*v)
	}
	for i, c := range s.Classes {
		sc := &pb.SizeClassResult{
			Class: c.Class, MinCards: int32(c.MinCards), MaxCards: int32(c.MaxCards), Jobs: int64(c.Jobs),
			MeanWait: Seconds(c.MeanWait), P95Wait: Seconds(c.P95Wait), MeanBoundedSlowdown: c.MeanBSLD,
			Preemptions: int64(c.Preemptions),
		}
		if i < len(same) {
			sc.VsReference = SameJobs(same[i])
		}
		out.SizeClasses = append(out.SizeClasses, sc)
	}
	return out
}

// SameJobs maps a size class's comparison on the same jobs.
func SameJobs(v sim.SameJobs) *pb.SameJobs {
	return &pb.SameJobs{
		Jobs: int64(v.Jobs), MeanWait: Seconds(v.MeanWait), P95Wait: Seconds(v.P95Wait), MeanBoundedSlowdown: v.MeanBSLD,
		ReferenceMeanWait: Seconds(v.RefMeanWait), ReferenceP95Wait: Seconds(v.RefP95Wait), ReferenceMeanBoundedSlowdown: v.RefMeanBSLD,
		MeanWaitRatio: optional(v.MeanWaitRatio), P95WaitRatio: optional(v.P95WaitRatio), BoundedSlowdownRatio: optional(v.BSLDRatio),
	}
}

func optional(v *float64) *wrapperspb.DoubleValue {
	if v == nil {
		return nil
	}
	return wrapperspb.Double(*v)
}

// maxDurationSeconds is the largest google.protobuf.Duration.
const maxDurationSeconds = 315_576_000_000

// Seconds converts seconds to a Duration, to the nanosecond; NaN is 0 and
// values beyond the largest Duration are clamped to it.
func Seconds(f float64) *durationpb.Duration {
	if math.IsNaN(f) {
		return &durationpb.Duration{}
	}
	neg := f < 0
	f = math.Abs(f)
	if f >= maxDurationSeconds {
		f = maxDurationSeconds
	}
	sec := math.Floor(f)
	nanos := math.Round((f - sec) * 1e9)
	if nanos >= 1e9 {
		sec++
		nanos -= 1e9
	}
	d := &durationpb.Duration{Seconds: int64(sec), Nanos: int32(nanos)}
	if neg {
		d.Seconds, d.Nanos = -d.Seconds, -d.Nanos
	}
	return d
}

// Shape builds a uniform cluster: nodes n000…, each with
// cards_per_node cards of card_model in one NVLink island (as HGX nodes
// have), leaf switches of nodes_per_switch nodes (all nodes under one when
// 0) under one spine.
func Shape(sh *pb.ClusterShape) (*model.Cluster, error) {
	n, per, k := int(sh.GetNodes()), int(sh.GetCardsPerNode()), int(sh.GetNodesPerSwitch())
	if k <= 0 || k > n {
		k = n
	}
	island := ""
	if per > 1 {
		island = "nvswitch"
	}
	c := shape.Uniform{
		ID: fmt.Sprintf("shape-%dx%d", n, per), Nodes: n, CardsPerNode: per,
		NodesPerSwitch: k, Spine: "spine",
		NodeName: shape.Names{Prefix: "n"}, SwitchName: shape.Names{Prefix: "leaf"},
		Card: model.Card{Model: sh.GetCardModel(), NUMA: -1, Island: island},
	}.Cluster()
	if err := c.Seal(); err != nil {
		return nil, err
	}
	return c, nil
}
