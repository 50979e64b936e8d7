package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"connectrpc.com/connect"

	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/rm/rmtest"
)

// TestRunTicksOnSimulatedTime drives a real service for 40 ticks of fake
// time: a plan at start and one per tick, each Step of simulated time
// later, and the service learns of starts, progress and finishes.
func TestRunTicksOnSimulatedTime(t *testing.T) {
	srv := rmtest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
		cluster := &pb.Cluster{Id: "demo", Domains: []*pb.Domain{{Id: "leaf", Kind: pb.DomainKind_DOMAIN_KIND_SWITCH}}}
		for n := range 4 {
			node := &pb.Node{Name: fmt.Sprintf("n%d", n), Domains: []string{"leaf"}}
			for i := range 8 {
				node.Cards = append(node.Cards, &pb.Card{Index: int32(i), Model: "H100", NumaNode: -1, NvlinkIsland: fmt.Sprintf("nvl%d", i/4)})
			}
			cluster.Nodes = append(cluster.Nodes, node)
		}
		c := srv.Client()
		d := New(c, cluster, start, Options{Tick: time.Second, Step: 5 * time.Minute,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- d.Run(ctx) }()
		time.Sleep(40*time.Second + time.Millisecond) // fake time inside the bubble
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		if want := start.Add(40 * 5 * time.Minute); !d.Now().Equal(want) {
			t.Errorf("simulated clock at %s after 40 ticks, want %s", d.Now(), want)
		}
		st, err := c.GetStatus(t.Context(), connect.NewRequest(&pb.GetStatusRequest{ClusterId: "demo"}))
		if err != nil {
			t.Fatalf("GetStatus: %v", err)
		}
		if st.Msg.GetPlans() != 41 {
			t.Errorf("%d plans in 40 ticks, want 41 (one at start, one per tick)", st.Msg.GetPlans())
		}
		if got, want := st.Msg.GetLastPlanTime().AsTime(), start.Add(40*5*time.Minute); !got.Equal(want) {
			t.Errorf("last plan at %s, want %s", got, want)
		}
		states := map[pb.JobState]int{}
		d.mu.Lock()
		submitted := d.next
		d.mu.Unlock()
		for i := 1; i <= submitted; i++ {
			in, err := c.GetJobInsight(t.Context(), connect.NewRequest(&pb.GetJobInsightRequest{ClusterId: "demo", JobId: JobID(i)}))
			if err != nil {
				t.Fatalf("GetJobInsight: %v", err)
			}
			states[in.Msg.GetInsight().GetState()]++
		}
		if states[pb.JobState_JOB_STATE_FINISHED] == 0 || states[pb.JobState_JOB_STATE_RUNNING] == 0 {
			t.Errorf("job states %v: want some finished and some running", states)
		}
		if running, queued := d.Counts(); running+queued == 0 {
			t.Errorf("nothing running or queued after 40 ticks")
		}
	})
}
