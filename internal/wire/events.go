package wire

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// Events validates a ReportEventsRequest's events and converts them, in
// request order. Invalid input gives a *model.ValidationError with every
// problem, its field path rooted at the request ("events[3].spec"): the
// contract's rules first, then the cross-field rules the contract states in
// words (STARTED and FINISHED need a spec, FINISHED an exit state,
// PREEMPTED an action).
func Events(req *pb.ReportEventsRequest) ([]model.Event, error) {
	probs, err := Problems(req)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(probs))
	for _, p := range probs {
		seen[p.Field] = true
	}
	add := func(field, msg string) {
		if !seen[field] {
			seen[field] = true
			probs = append(probs, model.Problem{Field: field, Message: msg})
		}
	}
	out := make([]model.Event, 0, len(req.GetEvents()))
	for i, e := range req.GetEvents() {
		path := fmt.Sprintf("events[%d]", i)
		switch e.GetKind() {
		case pb.JobEventKind_JOB_EVENT_KIND_STARTED, pb.JobEventKind_JOB_EVENT_KIND_FINISHED:
			if e.GetSpec() == nil {
				add(path+".spec", "required for a "+EventKind(e.GetKind()).String()+" event")
			}
		}
		if e.GetKind() == pb.JobEventKind_JOB_EVENT_KIND_FINISHED && e.GetExit() == pb.ExitState_EXIT_STATE_UNSPECIFIED {
			add(path+".exit", "required for a finished event")
		}
		if e.GetKind() == pb.JobEventKind_JOB_EVENT_KIND_PREEMPTED && e.GetAction() == pb.PreemptionAction_PREEMPTION_ACTION_UNSPECIFIED {
			add(path+".action", "required for a preempted event")
		}
		if s := e.GetSpec(); s != nil && s.GetId() != "" && s.GetId() != e.GetJobId() {
			add(path+".spec.id", fmt.Sprintf("%q differs from job_id %q", s.GetId(), e.GetJobId()))
		}
		out = append(out, Event(e))
	}
	if len(probs) > 0 {
		return nil, &model.ValidationError{Problems: probs}
	}
	return out, nil
}

// Event converts one job event without validating it.
func Event(e *pb.JobEvent) model.Event {
	out := model.Event{
		Kind:     EventKind(e.GetKind()),
		JobID:    e.GetJobId(),
		Time:     ts(e.GetTime()),
		Start:    ts(e.GetStartTime()),
		Exit:     ExitState(e.GetExit()),
		Action:   PreemptAction(e.GetAction()),
		Progress: e.GetProgress(),
	}
	if e.GetAllocation() == pb.AllocationKind_ALLOCATION_KIND_BACKFILL {
		out.Alloc = model.Backfill
	}
	if e.GetSpec() != nil {
		j := Job(e.GetSpec())
		out.Job = &j
	}
	return out
}

// EventProto converts a model event back to the wire.
func EventProto(e model.Event) *pb.JobEvent {
	out := &pb.JobEvent{
		JobId:      e.JobID,
		Kind:       EventKindProto(e.Kind),
		Time:       timestamppb.New(e.Time),
		Allocation: AllocKindProto(e.Alloc),
		StartTime:  TimeOrNil(e.Start),
		Exit:       pb.ExitState(e.Exit),
		Action:     pb.PreemptionAction(e.Action),
		Progress:   e.Progress,
	}
	if e.Job != nil {
		out.Spec = JobProto(*e.Job)
	}
	return out
}

// EventKind converts an event kind; the enums share their numbering.
func EventKind(k pb.JobEventKind) model.EventKind { return model.EventKind(k) }

// EventKindProto converts an event kind back.
func EventKindProto(k model.EventKind) pb.JobEventKind { return pb.JobEventKind(k) }

// ExitState converts an exit state; the enums share their numbering.
func ExitState(x pb.ExitState) model.ExitState { return model.ExitState(x) }

// PreemptAction converts a preemption action; the enums share their numbering.
func PreemptAction(a pb.PreemptionAction) model.PreemptAction { return model.PreemptAction(a) }

// JobProto converts a job specification back to the wire, with the
// documented defaults written out (topology ANY, communication NONE,
// backfill ALLOW).
func JobProto(j model.Job) *pb.JobSpec {
	out := &pb.JobSpec{
		Id: j.ID, User: j.User, JobClass: j.Class, Cards: int32(j.Cards), CardsPerNode: int32(j.CardsPerNode),
		TimeLimit: durOrNil(j.TimeLimit), Checkpointable: j.Checkpointable, CheckpointCost: durOrNil(j.CheckpointCost),
		MaxPreemptionProbability: j.MaxPreemptProb, Priority: int32(j.Priority),
		SubmitTime: TimeOrNil(j.Submit), RequeueCount: int32(j.RequeueCount), CardModel: j.CardModel,
	}
	switch j.Topology {
	case model.TopologyAny:
		out.Topology = pb.Topology_TOPOLOGY_ANY
	case model.TopologySameNode:
		out.Topology = pb.Topology_TOPOLOGY_SAME_NODE
	case model.TopologySameIsland:
		out.Topology = pb.Topology_TOPOLOGY_SAME_NVLINK_ISLAND
	case model.TopologySameSwitch:
		out.Topology = pb.Topology_TOPOLOGY_SAME_SWITCH
	}
	switch j.Comm {
	case model.CommNone:
		out.Comm = pb.Comm_COMM_NONE
	case model.CommLow:
		out.Comm = pb.Comm_COMM_LOW
	case model.CommHigh:
		out.Comm = pb.Comm_COMM_HIGH
	}
	switch j.Backfill {
	case model.BackfillAllow:
		out.Backfill = pb.BackfillPreference_BACKFILL_PREFERENCE_ALLOW
	case model.BackfillOptOut:
		out.Backfill = pb.BackfillPreference_BACKFILL_PREFERENCE_OPT_OUT
	case model.BackfillLowRiskOnly:
		out.Backfill = pb.BackfillPreference_BACKFILL_PREFERENCE_LOW_RISK_ONLY
	}
	return out
}

func durOrNil(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}
