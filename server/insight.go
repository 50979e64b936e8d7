package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/huitian/huitian/internal/wire"
	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// GetJobInsight answers what a user sees for one job: the last plan's view
// of it, updated by the events reported since. Answers are cached per
// cluster generation (bumped by every stored write), so a cached answer is
// never older than the last write before the call.
func (s *Server) GetJobInsight(ctx context.Context, req *connect.Request[pb.GetJobInsightRequest]) (*connect.Response[pb.GetJobInsightResponse], error) {
	cid, jid := req.Msg.GetClusterId(), req.Msg.GetJobId()
	// Asking creates nothing: a cluster the service has never planned nor
	// stored events for is NotFound, and leaves no trace.
	c, err := s.known(cid)
	if err != nil {
		return nil, err
	}
	// Read the generation before the data: an answer computed now is at
	// least as new as this generation.
	key := insightKey(cid, jid, c.gen.Load())
	if in, ok := s.cache.Get(key); ok {
		return connect.NewResponse(&pb.GetJobInsightResponse{Insight: in}), nil
	}
	in, err := s.compose(c.id, c.last.Load(), jid)
	if err != nil {
		return nil, err
	}
	s.cache.Set(key, in, 1)
	return connect.NewResponse(&pb.GetJobInsightResponse{Insight: in}), nil
}

// insightKey is a job's insight cache key: the cluster id's length, then
// the ids and the generation. The length makes the key unambiguous
// whatever the ids hold (joined with a separator, cluster "a" and job
// "b\x000" met cluster "a\x00b" and job "0").
func insightKey(cluster, job string, gen uint64) string {
	return strconv.Itoa(len(cluster)) + ":" + cluster + job + "#" + strconv.FormatUint(gen, 10)
}

// known returns the state of a cluster the service has planned or stored
// events for; for any other id it is NotFound, and nothing is made.
func (s *Server) known(id string) (*cluster, error) {
	if c, ok := s.lookup(id); ok {
		return c, nil
	}
	n, err := s.store.EventCount(id)
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("event count: %w", err))
	}
	if n == 0 {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("cluster %q: no plans and no events", logID(id)))
	}
	return s.cluster(id), nil
}

// compose is a job's insight, what GetJobInsight answers and ListJobs lists:
// the job's entry in the last plan lp (nil: none yet), updated by the job's
// latest reported state. Whichever is newer sets the state (an event at the
// plan's own time wins, as it reports what was done with the plan).
func (s *Server) compose(cluster string, lp *lastPlan, job string) (*pb.JobInsight, error) {
	var in *pb.JobInsight
	if lp != nil {
		if p, ok := lp.jobs[job]; ok {
			in = proto.CloneOf(p)
		}
	}
	rec, ok, err := s.store.Job(cluster, job)
	if err != nil {
		code := connect.CodeInternal
		if errors.Is(err, ErrStoredData) {
			code = connect.CodeDataLoss
		}
		return nil, connect.NewError(code, fmt.Errorf("job record: %w", err))
	}
	if in == nil && !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("cluster %q: job %q is in no plan and has no events", logID(cluster), logID(job)))
	}
	if in == nil {
		in = &pb.JobInsight{JobId: job}
	}
	if ok && rec.Kind != model.EventUnspecified && (in.PlanTime == nil || !rec.Time.Before(in.PlanTime.AsTime())) {
		in.EventTime = timestamppb.New(rec.Time)
		in.Kind = wire.AllocKindProto(rec.Alloc)
		in.PendingReason = pb.PendingReason_PENDING_REASON_UNSPECIFIED
		in.EstimatedStart = nil
		in.ReservationConfidence = 0
		in.QueuePosition = 0
		switch rec.Kind {
		case model.EventStarted:
			in.State = pb.JobState_JOB_STATE_RUNNING
			in.StartTime = timestamppb.New(rec.Time)
			in.Message = "running on " + rec.Alloc.String() + " resources"
		case model.EventFinished:
			in.State = pb.JobState_JOB_STATE_FINISHED
			in.Exit = pb.ExitState(rec.Exit)
			in.Message = "finished: " + rec.Exit.String()
			if rec.Exit == model.ExitCompleted {
				in.Progress = 1
			}
			in.ProtectedUntil = nil
			in.ExpectedRetention, in.RetentionUnbounded, in.ClaimedBy = nil, false, ""
		case model.EventPreempted:
			in.State = pb.JobState_JOB_STATE_REQUEUED
			if rec.Action == model.PreemptSuspend {
				in.State = pb.JobState_JOB_STATE_SUSPENDED
			}
			in.Message = "preempted: " + rec.Action.String()
			in.StartTime, in.ProtectedUntil = nil, nil
			in.ExpectedRetention, in.RetentionUnbounded, in.ClaimedBy = nil, false, ""
		}
	}
	if ok && in.State != pb.JobState_JOB_STATE_FINISHED && !rec.ProgressTime.IsZero() &&
		(in.PlanTime == nil || !rec.ProgressTime.Before(in.PlanTime.AsTime())) {
		in.Progress = rec.Progress
	}
	return in, nil
}
