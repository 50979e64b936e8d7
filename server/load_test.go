package server

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/huitian/huitian/client"
	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// loadRequest is request k of client i's cluster: a queue and time that
// vary with k, and a policy that varies with the cluster.
func loadRequest(cluster, k int) *pb.PlanRequest {
	r := planRequest(fmt.Sprintf("load-%d", cluster), 4+cluster)
	r.Now = timestamppb.New(t0.Add(time.Duration(k) * time.Minute))
	r.Queued = append(r.Queued, job(fmt.Sprintf("extra-%d", k), 1+k%3, time.Duration(10+k)*time.Minute, time.Duration(k)*time.Second))
	policies := []pb.Policy{pb.Policy_POLICY_EASY, pb.Policy_POLICY_CONSERVATIVE, pb.Policy_POLICY_EASY_SJBF, pb.Policy_POLICY_HYBRID_DEPTH}
	r.Options = &pb.PlanOptions{Policy: policies[cluster%len(policies)]}
	return r
}

// TestLoadConcurrentMatchesSequential runs 64 concurrent clients over 4
// clusters, each making a fixed number of Plan and ReportEvents calls, and
// checks that no call fails and every decision equals the one the same
// request gets when calls are made one at a time.
func TestLoadConcurrentMatchesSequential(t *testing.T) {
	const clients, clusters, perClient = 64, 4, 4
	ctx := context.Background()
	strip := func(r *pb.PlanResponse) *pb.PlanResponse {
		r = proto.CloneOf(r)
		r.Stats.SolveTime = nil
		return r
	}
	// Sequential answers, on a server of their own.
	seq := start(t, nil)
	want := map[[2]int]*pb.PlanResponse{}
	for c := range clusters {
		for k := range perClient {
			resp, err := seq.client().Plan(ctx, connect.NewRequest(loadRequest(c, k)))
			if err != nil {
				t.Fatalf("sequential cluster %d request %d: %v", c, k, err)
			}
			want[[2]int{c, k}] = strip(resp.Msg)
		}
	}

	ts := start(t, nil)
	var wg sync.WaitGroup
	errs := make(chan error, clients*perClient*2)
	for i := range clients {
		wg.Go(func() {
			c := i % clusters
			cl := ts.client(client.WithProtocol(client.Protocol(i % 3)))
			for k := range perClient {
				resp, err := cl.Plan(ctx, connect.NewRequest(loadRequest(c, k)))
				if err != nil {
					errs <- fmt.Errorf("client %d cluster %d request %d: %w", i, c, k, err)
					continue
				}
				if diff := cmp.Diff(want[[2]int{c, k}], strip(resp.Msg), protocmp.Transform()); diff != "" {
					errs <- fmt.Errorf("client %d cluster %d request %d: decision differs from the sequential one (-want +got):\n%s", i, c, k, diff)
				}
				id := fmt.Sprintf("c%d-k%d", i, k)
				_, err = cl.ReportEvents(ctx, connect.NewRequest(&pb.ReportEventsRequest{
					ClusterId: fmt.Sprintf("load-%d", c),
					Events:    []*pb.JobEvent{started(id, time.Duration(k)*time.Minute, k%2 == 0), finished(id, time.Duration(k)*time.Minute, time.Hour)},
				}))
				if err != nil {
					errs <- fmt.Errorf("client %d events %d: %w", i, k, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var total int64
	for c := range clusters {
		st, err := ts.client().GetStatus(ctx, connect.NewRequest(&pb.GetStatusRequest{ClusterId: fmt.Sprintf("load-%d", c)}))
		if err != nil {
			t.Fatal(err)
		}
		if st.Msg.Plans != clients/clusters*perClient {
			t.Errorf("cluster %d: %d plans, want %d", c, st.Msg.Plans, clients/clusters*perClient)
		}
		total += st.Msg.Events
	}
	if total != clients*perClient*2 {
		t.Errorf("stored %d events, want %d", total, clients*perClient*2)
	}
}
