package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"buf.build/go/protovalidate"
	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/huitian/huitian/client"
	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/proto/huitian/v1/huitianv1connect"
)

// listRequest is planRequest with a longer queue of several users and
// classes, with ids of digits among them (they sort first, by value).
func listRequest(cluster string, queued int) *pb.PlanRequest {
	req := planRequest(cluster, 4)
	users := []string{"alice", "bob", "carol"}
	classes := []string{"training", "evaluation"}
	for i := range queued {
		id := fmt.Sprintf("q-%03d", i)
		if i%10 == 0 {
			id = fmt.Sprint(i) // "0", "10", "20", …: numbers, not strings
		}
		j := job(id, 1+i%3, time.Duration(1+i%4)*30*time.Minute, time.Duration(queued-i)*time.Minute)
		j.User, j.JobClass = users[i%len(users)], classes[i%len(classes)]
		req.Queued = append(req.Queued, j)
	}
	return req
}

// listPages pages through ListJobs with q's filters, page_size at a time,
// from q's page token on, and returns every row and the number of pages.
func listPages(t *testing.T, c huitianv1connect.PlannerServiceClient, q *pb.ListJobsRequest, size int32) ([]*pb.JobInsight, int) {
	t.Helper()
	var rows []*pb.JobInsight
	pages := 0
	for tok := q.GetPageToken(); ; {
		r := proto.CloneOf(q)
		r.PageSize, r.PageToken = size, tok
		resp, err := c.ListJobs(context.Background(), connect.NewRequest(r))
		if err != nil {
			t.Fatalf("ListJobs(%v): %v", r, err)
		}
		if err := protovalidate.Validate(resp.Msg); err != nil {
			t.Fatalf("ListJobs answer breaks the contract: %v", err)
		}
		pages++
		if size > 0 && len(resp.Msg.GetJobs()) > int(size) {
			t.Fatalf("page of %d rows for page_size %d", len(resp.Msg.GetJobs()), size)
		}
		rows = append(rows, resp.Msg.GetJobs()...)
		if tok = resp.Msg.GetNextPageToken(); tok == "" {
			return rows, pages
		}
		if pages > 10000 {
			t.Fatalf("more than 10000 pages")
		}
	}
}

func ids(rows []*pb.JobInsight) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.GetJobId())
	}
	return out
}

// TestListJobsPagesEveryJobOnceInIDOrder: whatever the page size, paging
// returns every job of the plan exactly once, in id order (numbers by
// value first), each row equal to what GetJobInsight answers for the job;
// page_size 0 gives pages of 100.
func TestListJobsPagesEveryJobOnceInIDOrder(t *testing.T) {
	ts := start(t, nil)
	ctx := context.Background()
	req := listRequest("c1", 140)
	if _, err := ts.client().Plan(ctx, connect.NewRequest(req)); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range req.GetRunning() {
		want = append(want, r.GetSpec().GetId())
	}
	for _, j := range req.GetQueued() {
		want = append(want, j.GetId())
	}
	slices.SortFunc(want, model.CompareIDs)
	if want[0] != "0" || want[1] != "10" || want[13] != "130" || want[14] != "big" {
		t.Fatalf("fixture: ids sort as %v…, want 0, 10, …, 130, big", want[:16])
	}
	c := ts.client()
	q := &pb.ListJobsRequest{ClusterId: "c1"}
	for _, size := range []int32{1, 7, 100, 1000} {
		rows, pages := listPages(t, c, q, size)
		if diff := cmp.Diff(want, ids(rows)); diff != "" {
			t.Errorf("page size %d: ids (-want +got):\n%s", size, diff)
		}
		if wantPages := (len(want) + int(size) - 1) / int(size); pages != wantPages {
			t.Errorf("page size %d: %d pages, want %d", size, pages, wantPages)
		}
	}
	rows, pages := listPages(t, c, q, 0)
	if len(rows) != len(want) || pages != 2 {
		t.Errorf("page size 0: %d rows in %d pages, want %d in 2 (100 a page)", len(rows), pages, len(want))
	}
	// Each row is GetJobInsight's answer.
	for _, r := range rows {
		if diff := cmp.Diff(insightOf(t, ts, "c1", r.GetJobId()), r, protocmp.Transform()); diff != "" {
			t.Errorf("row %s differs from GetJobInsight (-insight +row):\n%s", r.GetJobId(), diff)
		}
	}
}

// TestListJobsRowsCarryTheContract: a row says what the user asked for
// (user, class, cards), the reserved job's reservation and its confidence,
// a running job's start, and events move the row as they move
// GetJobInsight.
func TestListJobsRowsCarryTheContract(t *testing.T) {
	ts := start(t, nil)
	ctx := context.Background()
	resp, err := ts.client().Plan(ctx, connect.NewRequest(listRequest("c1", 6)))
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := listPages(t, ts.client(), &pb.ListJobsRequest{ClusterId: "c1"}, 0)
	byID := map[string]*pb.JobInsight{}
	for _, r := range rows {
		byID[r.GetJobId()] = r
	}
	big := byID["big"]
	if big.GetState() != pb.JobState_JOB_STATE_RESERVED || big.GetRequestedCards() != 32 || big.GetUser() != "alice" ||
		big.GetJobClass() != "training" || big.GetEstimatedStart() == nil || big.GetReservationConfidence() <= 0 {
		t.Errorf("big: %v, want RESERVED, 32 cards of alice's training, a reservation with its confidence", big)
	}
	run := byID["run-000"]
	if run.GetState() != pb.JobState_JOB_STATE_RUNNING || !run.GetStartTime().AsTime().Equal(t0.Add(-time.Hour)) || run.GetRequestedCards() != 8 {
		t.Errorf("run-000: %v, want RUNNING since %s on 8 cards", run, t0.Add(-time.Hour))
	}
	st := resp.Msg.GetStarts()[0]
	if got := byID[st.GetJobId()]; got.GetState() != pb.JobState_JOB_STATE_STARTING || got.GetStartTime() != nil {
		t.Errorf("%s: %v, want STARTING without a start time", st.GetJobId(), got)
	}
	report(t, ts, "c1", started(st.GetJobId(), 0, st.GetKind() == pb.AllocationKind_ALLOCATION_KIND_BACKFILL))
	running, _ := listPages(t, ts.client(), &pb.ListJobsRequest{ClusterId: "c1", States: []pb.JobState{pb.JobState_JOB_STATE_RUNNING}}, 0)
	i := slices.IndexFunc(running, func(r *pb.JobInsight) bool { return r.GetJobId() == st.GetJobId() })
	if i < 0 || !running[i].GetStartTime().AsTime().Equal(t0) {
		t.Errorf("after its STARTED event, %s is not listed RUNNING since %s: %v", st.GetJobId(), t0, ids(running))
	}
}

// TestListJobsFilters: each filter, and their conjunction, keeps exactly
// the rows of the unfiltered list that match it.
func TestListJobsFilters(t *testing.T) {
	ts := start(t, nil)
	ctx := context.Background()
	if _, err := ts.client().Plan(ctx, connect.NewRequest(listRequest("c1", 30))); err != nil {
		t.Fatal(err)
	}
	c := ts.client()
	all, _ := listPages(t, c, &pb.ListJobsRequest{ClusterId: "c1"}, 0)
	kinds := map[pb.AllocationKind]int{}
	for _, r := range all {
		kinds[r.GetKind()]++
	}
	if kinds[pb.AllocationKind_ALLOCATION_KIND_BACKFILL] == 0 || kinds[pb.AllocationKind_ALLOCATION_KIND_REGULAR] == 0 {
		t.Fatalf("fixture: want regular and backfill jobs, got %v", kinds)
	}
	queued := []pb.JobState{pb.JobState_JOB_STATE_PENDING, pb.JobState_JOB_STATE_RESERVED}
	for _, tc := range []struct {
		name  string
		q     *pb.ListJobsRequest
		match func(*pb.JobInsight) bool
	}{
		{"reserved", &pb.ListJobsRequest{States: []pb.JobState{pb.JobState_JOB_STATE_RESERVED}},
			func(r *pb.JobInsight) bool { return r.GetState() == pb.JobState_JOB_STATE_RESERVED }},
		{"queued: pending or reserved", &pb.ListJobsRequest{States: queued},
			func(r *pb.JobInsight) bool { return slices.Contains(queued, r.GetState()) }},
		{"backfill", &pb.ListJobsRequest{Kind: pb.AllocationKind_ALLOCATION_KIND_BACKFILL},
			func(r *pb.JobInsight) bool { return r.GetKind() == pb.AllocationKind_ALLOCATION_KIND_BACKFILL }},
		{"regular", &pb.ListJobsRequest{Kind: pb.AllocationKind_ALLOCATION_KIND_REGULAR},
			func(r *pb.JobInsight) bool { return r.GetKind() == pb.AllocationKind_ALLOCATION_KIND_REGULAR }},
		{"user bob", &pb.ListJobsRequest{User: "bob"}, func(r *pb.JobInsight) bool { return r.GetUser() == "bob" }},
		{"class evaluation", &pb.ListJobsRequest{JobClass: "evaluation"}, func(r *pb.JobInsight) bool { return r.GetJobClass() == "evaluation" }},
		{"carol's pending training", &pb.ListJobsRequest{User: "carol", JobClass: "training", States: []pb.JobState{pb.JobState_JOB_STATE_PENDING}},
			func(r *pb.JobInsight) bool {
				return r.GetUser() == "carol" && r.GetJobClass() == "training" && r.GetState() == pb.JobState_JOB_STATE_PENDING
			}},
		{"nobody", &pb.ListJobsRequest{User: "mallory"}, func(*pb.JobInsight) bool { return false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []string
			for _, r := range all {
				if tc.match(r) {
					want = append(want, r.GetJobId())
				}
			}
			q := proto.CloneOf(tc.q)
			q.ClusterId = "c1"
			for _, size := range []int32{2, 0} {
				got, _ := listPages(t, c, q, size)
				if diff := cmp.Diff(want, ids(got)); diff != "" {
					t.Errorf("page size %d (-want +got):\n%s", size, diff)
				}
			}
		})
	}
}

// TestListJobsRejectsWhatItCannotServe: page sizes over 1000, state
// UNSPECIFIED, long labels, bad ids and foreign or garbled page tokens are
// InvalidArgument naming the field; an unknown cluster is NotFound and
// leaves no state behind.
func TestListJobsRejectsWhatItCannotServe(t *testing.T) {
	ts := start(t, nil)
	ctx := context.Background()
	if _, err := ts.client().Plan(ctx, connect.NewRequest(listRequest("c1", 10))); err != nil {
		t.Fatal(err)
	}
	c := ts.client()
	first, err := c.ListJobs(ctx, connect.NewRequest(&pb.ListJobsRequest{ClusterId: "c1", PageSize: 2, User: "bob"}))
	if err != nil || first.Msg.GetNextPageToken() == "" {
		t.Fatalf("first page: %v, %v; want a next page", first, err)
	}
	tok := first.Msg.GetNextPageToken()
	for _, tc := range []struct {
		name  string
		q     *pb.ListJobsRequest
		field string
	}{
		{"page size 1001", &pb.ListJobsRequest{ClusterId: "c1", PageSize: 1001}, "page_size"},
		{"negative page size", &pb.ListJobsRequest{ClusterId: "c1", PageSize: -1}, "page_size"},
		{"state unspecified", &pb.ListJobsRequest{ClusterId: "c1", States: []pb.JobState{0}}, "states"},
		{"state twice", &pb.ListJobsRequest{ClusterId: "c1", States: []pb.JobState{1, 1}}, "states"},
		{"user too long", &pb.ListJobsRequest{ClusterId: "c1", User: strings.Repeat("u", 257)}, "user"},
		{"class too long", &pb.ListJobsRequest{ClusterId: "c1", JobClass: strings.Repeat("c", 257)}, "job_class"},
		{"cluster id with a space", &pb.ListJobsRequest{ClusterId: "c 1"}, "cluster_id"},
		{"no cluster id", &pb.ListJobsRequest{}, "cluster_id"},
		{"garbled token", &pb.ListJobsRequest{ClusterId: "c1", PageToken: "not a token"}, "page_token"},
		{"token of another filter", &pb.ListJobsRequest{ClusterId: "c1", PageToken: tok, User: "alice"}, "page_token"},
		{"token too long", &pb.ListJobsRequest{ClusterId: "c1", PageToken: strings.Repeat("A", 513)}, "page_token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.ListJobs(ctx, connect.NewRequest(tc.q))
			if connect.CodeOf(err) != connect.CodeInvalidArgument {
				t.Fatalf("got %v, want InvalidArgument", err)
			}
			if f := fieldViolations(t, err); !slices.ContainsFunc(f, func(s string) bool { return strings.HasPrefix(s, tc.field) }) {
				t.Errorf("violations name %v, want %s", f, tc.field)
			}
		})
	}
	// The same filters with another page size keep the token.
	if _, err := c.ListJobs(ctx, connect.NewRequest(&pb.ListJobsRequest{ClusterId: "c1", PageSize: 5, User: "bob", PageToken: tok})); err != nil {
		t.Errorf("the token with another page size: %v", err)
	}
	_, err = c.ListJobs(ctx, connect.NewRequest(&pb.ListJobsRequest{ClusterId: "nowhere"}))
	if connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("unknown cluster: %v, want NotFound", err)
	}
	if _, ok := ts.lookup("nowhere"); ok {
		t.Errorf("ListJobs on an unknown cluster made state for it")
	}
	// A cluster with events but no plan lists nothing.
	report(t, ts, "ev-only", started("j", 0, false))
	resp, err := c.ListJobs(ctx, connect.NewRequest(&pb.ListJobsRequest{ClusterId: "ev-only"}))
	if err != nil || len(resp.Msg.GetJobs()) != 0 || resp.Msg.GetPlanTime() != nil {
		t.Errorf("cluster with events only: %v, %v; want an empty page without a plan time", resp, err)
	}
}

// TestListJobsIsScopedByToken: a token scoped to some clusters lists
// theirs and gets PermissionDenied for any other; no token is
// Unauthenticated.
func TestListJobsIsScopedByToken(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte("all-token\nteam-a-token a1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := start(t, func(c *Config) { c.TokenFile = tokenFile })
	ctx := context.Background()
	all := ts.client(client.WithToken("all-token"))
	for _, id := range []string{"a1", "b1"} {
		if _, err := all.Plan(ctx, connect.NewRequest(listRequest(id, 3))); err != nil {
			t.Fatal(err)
		}
	}
	teamA := ts.client(client.WithToken("team-a-token"))
	if resp, err := teamA.ListJobs(ctx, connect.NewRequest(&pb.ListJobsRequest{ClusterId: "a1"})); err != nil || len(resp.Msg.GetJobs()) == 0 {
		t.Errorf("team a's token on a1: %v, %v; want its jobs", resp, err)
	}
	if _, err := teamA.ListJobs(ctx, connect.NewRequest(&pb.ListJobsRequest{ClusterId: "b1"})); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("team a's token on b1: %v, want PermissionDenied", err)
	}
	if _, err := teamA.ListJobs(ctx, connect.NewRequest(&pb.ListJobsRequest{ClusterId: "nowhere"})); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("team a's token on an unknown cluster: %v, want PermissionDenied (not a NotFound that tells it exists or not)", err)
	}
	if _, err := ts.client().ListJobs(ctx, connect.NewRequest(&pb.ListJobsRequest{ClusterId: "a1"})); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("no token: %v, want Unauthenticated", err)
	}
}

// TestListJobsAcrossANewPlan: a plan that arrives between two pages
// neither repeats a job nor skips one that both plans hold.
func TestListJobsAcrossANewPlan(t *testing.T) {
	ts := start(t, nil)
	ctx := context.Background()
	c := ts.client()
	req := listRequest("c1", 20)
	if _, err := c.Plan(ctx, connect.NewRequest(req)); err != nil {
		t.Fatal(err)
	}
	first, err := c.ListJobs(ctx, connect.NewRequest(&pb.ListJobsRequest{ClusterId: "c1", PageSize: 10}))
	if err != nil {
		t.Fatal(err)
	}
	// The next cycle: a new job whose id sorts first, one gone from the
	// first page and one gone from the rest.
	req2 := listRequest("c1", 20)
	req2.Queued = slices.DeleteFunc(req2.Queued, func(j *pb.JobSpec) bool { return j.GetId() == "0" || j.GetId() == "q-019" })
	req2.Queued = append(req2.Queued, job("1", 1, time.Hour, 0))
	if _, err := c.Plan(ctx, connect.NewRequest(req2)); err != nil {
		t.Fatal(err)
	}
	rest, _ := listPages(t, c, &pb.ListJobsRequest{ClusterId: "c1", PageToken: first.Msg.GetNextPageToken()}, 10)
	got := append(ids(first.Msg.GetJobs()), ids(rest)...)
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			t.Errorf("job %s listed twice", id)
		}
		seen[id] = true
	}
	for _, j := range req2.GetQueued() {
		if id := j.GetId(); id != "1" && !seen[id] {
			t.Errorf("job %s, in both plans, was skipped", id)
		}
	}
	if seen["q-019"] {
		t.Errorf("q-019, gone from the second plan, was listed after it")
	}
}
