package server

import (
	"context"
	"fmt"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/huitian/huitian/internal/wire"
	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/solver"
)

// ReportEvents stores a batch of job events durably, then hands the new
// ones to the cluster's Learners in stored order. Duplicates (same job,
// kind and time) are counted and dropped.
func (s *Server) ReportEvents(ctx context.Context, req *connect.Request[pb.ReportEventsRequest]) (*connect.Response[pb.ReportEventsResponse], error) {
	// 1. Validate and convert.
	evs, err := wire.Events(req.Msg)
	if err != nil {
		return nil, fromModelError(err)
	}
	batch := make([]storedEvent, len(evs))
	mo := proto.MarshalOptions{Deterministic: true}
	for i, e := range req.Msg.GetEvents() {
		raw, err := mo.Marshal(e)
		if err != nil {
			return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("events[%d]: %w", i, err))
		}
		batch[i] = storedEvent{key: evs[i].Key(), raw: raw, ev: evs[i]}
	}
	c := s.cluster(req.Msg.GetClusterId())

	// 2. Store (fsync'd), then deliver, under the cluster's lock: the
	// stored order is the order the Learners see.
	c.mu.Lock()
	fresh, err := s.store.Append(c.id, batch)
	if err != nil {
		c.mu.Unlock()
		s.storeFailed("append_events", err)
		return nil, storeWriteError(err)
	}
	s.storeOK()
	c.gen.Add(1)
	learners := c.learnersLocked()
	var accepted int32
	for i, ok := range fresh {
		if !ok {
			continue
		}
		accepted++
		for _, l := range learners {
			s.observe1(c, l, evs[i])
		}
	}
	c.mu.Unlock()

	for i, ok := range fresh {
		result := "duplicate"
		if ok {
			result = "accepted"
		}
		s.met.events.WithLabelValues(evs[i].Kind.String(), result).Inc()
	}
	return connect.NewResponse(&pb.ReportEventsResponse{Accepted: accepted, Duplicates: int32(len(evs)) - accepted}), nil
}

// observe1 gives one event to one Learner. A Learner that panics is
// dropped, to be rebuilt from the log by the next Plan. c.mu is held.
func (s *Server) observe1(c *cluster, l solver.Learner, e model.Event) {
	defer func() {
		if r := recover(); r != nil {
			for k, p := range c.planners {
				if p == solver.Planner(l) {
					delete(c.planners, k)
				}
			}
			s.log.Error("planner panicked observing an event; dropped, to be rebuilt from the event log",
				"cluster", logID(c.id), "job", logID(e.JobID), "kind", e.Kind.String(), "panic", fmt.Sprint(r))
		}
	}()
	l.Observe(e)
}
