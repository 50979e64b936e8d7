package server

import (
	"context"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"connectrpc.com/connect"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// TestWebStatusCards: GetStatus lists every card with its idle class only
// when asked, and waiting jobs carry their queue position.
func TestWebStatusCards(t *testing.T) {
	ts := start(t, nil)
	ctx := context.Background()
	c := ts.client()
	req := planRequest("web", 4)
	req.Options = &pb.PlanOptions{Policy: pb.Policy_POLICY_HUITIAN}
	if _, err := c.Plan(ctx, connect.NewRequest(req)); err != nil {
		t.Fatal(err)
	}
	plain, err := c.GetStatus(ctx, connect.NewRequest(&pb.GetStatusRequest{ClusterId: "web"}))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(plain.Msg.GetCards()); n != 0 {
		t.Errorf("GetStatus without include_cards: %d cards, want none", n)
	}
	st, err := c.GetStatus(ctx, connect.NewRequest(&pb.GetStatusRequest{ClusterId: "web", IncludeCards: true}))
	if err != nil {
		t.Fatal(err)
	}
	cs := st.Msg.GetCards()
	if len(cs) != 32 {
		t.Fatalf("GetStatus with include_cards: %d cards, want 32", len(cs))
	}
	if got := cs[9].GetCard(); got.GetNode() != "n001" || got.GetIndex() != 1 {
		t.Errorf("cards[9] = %v, want n001/1 (the request's order)", got)
	}
	resp, err := c.Plan(ctx, connect.NewRequest(req)) // the same request again: the same plan
	if err != nil {
		t.Fatal(err)
	}
	started := map[string]bool{}
	for _, st := range resp.Msg.GetStarts() {
		for _, cd := range st.GetCards() {
			started[cd.GetNode()+"/"+strconv.Itoa(int(cd.GetIndex()))] = true
		}
	}
	labelled := map[pb.FragmentClass]int32{}
	for _, cd := range cs {
		// run-000 and run-001 hold n000 and n001.
		busy := strings.Compare(cd.GetCard().GetNode(), "n002") < 0
		if cl := cd.GetIdle(); cl != pb.FragmentClass_FRAGMENT_CLASS_UNSPECIFIED {
			labelled[cl]++
			if busy {
				t.Errorf("%v is busy but idle as %v", cd.GetCard(), cl)
			}
		}
		if !cd.GetUsable() {
			t.Errorf("%v: not usable", cd.GetCard())
		}
	}
	// The inventory counts the labelled cards, plus (as temporal) busy
	// cards released before a reservation claims them, such as those of a
	// job started by EASY's backfill before the planner classified.
	total := int32(0)
	for _, f := range st.Msg.GetFragments() {
		if n := labelled[f.GetFragment()]; n > f.GetCards() {
			t.Errorf("%d cards labelled %v, more than the inventory's %d", n, f.GetFragment(), f.GetCards())
		}
		total += labelled[f.GetFragment()]
	}
	if total == 0 || total > 16-int32(len(started)) {
		t.Errorf("%d cards labelled idle, want some of the %d free after the plan's starts", total, 16-len(started))
	}
	jobs, err := c.ListJobs(ctx, connect.NewRequest(&pb.ListJobsRequest{ClusterId: "web"}))
	if err != nil {
		t.Fatal(err)
	}
	pos := map[int32]string{}
	for _, j := range jobs.Msg.GetJobs() {
		waiting := j.GetState() == pb.JobState_JOB_STATE_PENDING || j.GetState() == pb.JobState_JOB_STATE_RESERVED
		if waiting != (j.GetQueuePosition() > 0) {
			t.Errorf("%s (%v): queue position %d", j.GetJobId(), j.GetState(), j.GetQueuePosition())
		}
		if p := j.GetQueuePosition(); p > 0 {
			if other, dup := pos[p]; dup {
				t.Errorf("%s and %s share queue position %d", other, j.GetJobId(), p)
			}
			pos[p] = j.GetJobId()
		}
	}
	if pos[1] != "big" {
		t.Errorf("queue position 1 is %q, want big (the earliest submitted)", pos[1])
	}
}

// TestWebRoutes: the web page answers at / and /jobs/<id> without a token
// (it asks for one), the API still needs one, and unknown paths are 404.
func TestWebRoutes(t *testing.T) {
	tokFile := t.TempDir() + "/tokens"
	if err := os.WriteFile(tokFile, []byte("sekrit\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := start(t, func(c *Config) { c.TokenFile = tokFile })
	for _, tc := range []struct {
		path string
		code int
		has  string
	}{
		{"/", http.StatusOK, "<title>huitian"},
		{"/jobs/demo-0001", http.StatusOK, "<title>huitian"},
		{"/ui/app.js", http.StatusOK, "GetJobInsight"},
		{"/no-such-page", http.StatusNotFound, ""},
		{"/metrics", http.StatusUnauthorized, ""},
	} {
		resp, err := http.Get(ts.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.has) {
			t.Errorf("GET %s: %d, want %d with %q", tc.path, resp.StatusCode, tc.code, tc.has)
		}
	}
	resp, err := http.Post(ts.URL+"/huitian.v1.PlannerService/GetStatus", "application/json", strings.NewReader(`{"clusterId":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GetStatus without a token: %d, want 401", resp.StatusCode)
	}
}
