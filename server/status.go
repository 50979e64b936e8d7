package server

import (
	"context"
	"fmt"
	"math"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/huitian/huitian/internal/wire"
	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// GetStatus reports a cluster's planner state. Tuner and measures come from
// the planner of the last plan when it reports them (statusReporter); the
// fragment inventory comes from the last decision.
func (s *Server) GetStatus(ctx context.Context, req *connect.Request[pb.GetStatusRequest]) (*connect.Response[pb.GetStatusResponse], error) {
	id := req.Msg.GetClusterId()
	c, ok := s.lookup(id)
	events, err := s.store.EventCount(id)
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("event count: %w", err))
	}
	if (!ok || c.last.Load() == nil) && events == 0 {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("cluster %q: no plans and no events yet", logID(id)))
	}
	out := &pb.GetStatusResponse{ClusterId: id}
	if ok {
		if lp := c.last.Load(); lp != nil {
			out = proto.CloneOf(lp.header)
			if req.Msg.GetIncludeCards() {
				out.Cards = lp.cards // never modified once published
			}
		}
		out.Plans = c.plans.Load()
		// After a restart, the tuner's state lives in the event log: ask
		// the last plan's planner (rebuilt by replay) for its status.
		if out.LastPlanTime != nil {
			key := plannerKey{policy: wire.Policy(out.GetLastPolicy()), depth: int(out.GetLastReservationDepth())}
			c.mu.Lock()
			pl, err := s.plannerLocked(c, key)
			var st *model.PlannerStatus
			if sr, ok := pl.(statusReporter); ok && err == nil {
				v := sr.PlannerStatus()
				st = &v
			}
			out.Memory = c.memory[key]
			c.mu.Unlock()
			out.Tuner, out.Measures = nil, nil
			if st != nil {
				statusProto(out, st)
			}
		}
	}
	out.Events = events
	return connect.NewResponse(out), nil
}

// statusProto writes what a planner reports into a status response; a
// measure without data (NaN) stays absent.
func statusProto(out *pb.GetStatusResponse, st *model.PlannerStatus) {
	if t := st.Tuner; t != nil {
		out.Tuner = &pb.TunerParameters{
			MaxBackfillRuntime: durationpb.New(t.MaxBackfillRuntime),
			ProtectionFraction: t.ProtectFraction, Epsilon: t.Epsilon, HoldPreemption: t.HoldPreemption,
		}
	}
	if m := st.Measures; m != nil {
		opt := func(v float64) *wrapperspb.DoubleValue {
			if math.IsNaN(v) {
				return nil
			}
			return wrapperspb.Double(v)
		}
		out.Measures = &pb.BackfillMeasures{
			CompletionRate: opt(m.CompletionRate), Utilization: opt(m.Utilization), EstimatorExceed: opt(m.EstimatorExceed), LostShare: opt(m.LostShare),
			BackfillJobs: int32(m.BackfillJobs), MainJobs: int32(m.MainJobs),
		}
		if m.MainJobs > 0 {
			out.Measures.MainWaitDelta = durationpb.New(m.MainWaitDelta.Round(time.Millisecond))
		}
	}
}
