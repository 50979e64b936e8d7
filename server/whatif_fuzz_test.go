package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// FuzzWhatIf sends arbitrary WhatIf requests (a binary protobuf, as a
// client would) to a running service, with small limits so that a replay
// it accepts is quick: whatever the request, the answer is a comparison or
// a client error (invalid argument, unimplemented, not found, out of
// range), never an internal error, a panic or a stream without its end.
// The seeds are an uploaded SWF log, a synthetic spec and a cluster shape.
func FuzzWhatIf(f *testing.F) {
	for _, req := range []*pb.WhatIfRequest{
		uploadRequest([]byte(smallSWF), smallPolicies...),
		{Trace: &pb.WhatIfRequest_SynthSpec{SynthSpec: "synth:jobs=40,seed=2,cards=16"}, Format: pb.TraceFormat_TRACE_FORMAT_SYNTH,
			Cluster:  &pb.WhatIfRequest_Shape{Shape: &pb.ClusterShape{Nodes: 2, CardsPerNode: 8, NodesPerSwitch: 1}},
			Policies: []pb.Policy{pb.Policy_POLICY_EASY, pb.Policy_POLICY_HUITIAN_GREEDY}, MaxJobs: 30},
		{Trace: &pb.WhatIfRequest_SynthSpec{SynthSpec: "synth:jobs=20"}, Format: pb.TraceFormat_TRACE_FORMAT_SYNTH,
			Cluster: &pb.WhatIfRequest_ClusterPreset{ClusterPreset: "hgx:1"}, Policies: []pb.Policy{pb.Policy_POLICY_CONSERVATIVE}},
	} {
		b, err := proto.Marshal(req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	ts := start(f, func(c *Config) { c.MaxJobs, c.MaxCards = 200, 64 })
	c := ts.client()
	f.Fuzz(func(t *testing.T, body []byte) {
		req := &pb.WhatIfRequest{}
		if proto.Unmarshal(body, req) != nil {
			return // not a request a client could send
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		st, err := c.WhatIf(ctx, connect.NewRequest(req))
		if err == nil {
			ended := false
			for st.Receive() {
				ended = st.Msg().GetComparison() != nil
			}
			err = st.Err()
			st.Close()
			if err == nil && !ended {
				t.Fatal("the stream ended without a comparison")
			}
		}
		if err == nil {
			return
		}
		var ce *connect.Error
		if !errors.As(err, &ce) {
			t.Fatalf("not a Connect error: %v", err)
		}
		switch ce.Code() {
		case connect.CodeInvalidArgument, connect.CodeUnimplemented, connect.CodeNotFound, connect.CodeOutOfRange,
			connect.CodeFailedPrecondition, connect.CodeResourceExhausted:
		default:
			t.Fatalf("%v: %v", ce.Code(), err)
		}
	})
}
