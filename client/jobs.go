package client

import (
	"context"
	"fmt"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/proto/huitian/v1/huitianv1connect"
)

// maxJobPages bounds AllJobs: the service plans at most 100,000 jobs per
// cluster by default, 100 pages of 1000.
const maxJobPages = 10_000

// AllJobs pages through ListJobs with req's filters, from req's page token
// on, 1000 jobs a page unless req sets a page size, and returns every job
// in one response (next_page_token empty, plan_time the last page's).
func AllJobs(ctx context.Context, c huitianv1connect.PlannerServiceClient, req *pb.ListJobsRequest) (*pb.ListJobsResponse, error) {
	q := proto.CloneOf(req)
	if q.PageSize == 0 {
		q.PageSize = 1000
	}
	out := &pb.ListJobsResponse{}
	for range maxJobPages {
		resp, err := c.ListJobs(ctx, connect.NewRequest(q))
		if err != nil {
			return nil, err
		}
		out.Jobs = append(out.Jobs, resp.Msg.GetJobs()...)
		out.PlanTime = resp.Msg.GetPlanTime()
		if q.PageToken = resp.Msg.GetNextPageToken(); q.PageToken == "" {
			return out, nil
		}
	}
	return nil, fmt.Errorf("list jobs: more than %d pages", maxJobPages)
}
