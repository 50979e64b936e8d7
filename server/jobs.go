package server

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"slices"
	"strconv"

	"connectrpc.com/connect"

	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// Page sizes of ListJobs: the contract caps page_size at maxPageSize.
const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

// ListJobs lists the jobs of the cluster's last plan in job id order, each
// composed as GetJobInsight composes it, one page at a time. Pages are
// keyed by the last id returned, so a new plan between two pages neither
// repeats a job nor shifts the ones after it.
func (s *Server) ListJobs(ctx context.Context, req *connect.Request[pb.ListJobsRequest]) (*connect.Response[pb.ListJobsResponse], error) {
	m := req.Msg
	// 1. The cluster (asking creates nothing) and where the page begins.
	c, err := s.known(m.GetClusterId())
	if err != nil {
		return nil, err
	}
	after, err := readPageToken(m.GetPageToken(), listFingerprint(m))
	if err != nil {
		return nil, invalidArgument("invalid request", []model.Problem{{Field: "page_token", Message: err.Error()}})
	}
	size := int(m.GetPageSize())
	if size == 0 {
		size = defaultPageSize
	}
	size = min(size, maxPageSize)
	out := &pb.ListJobsResponse{}
	lp := c.last.Load()
	if lp == nil {
		return connect.NewResponse(out), nil // events, but no plan yet
	}
	out.PlanTime = lp.header.GetLastPlanTime()
	ids := lp.sortedIDs()
	i := 0
	if after != "" {
		var found bool
		i, found = slices.BinarySearchFunc(ids, after, model.CompareIDs)
		if found {
			i++
		}
	}

	// 2. Compose each job from one plan, filter, and stop one match past
	// the page: that match says there is a next page.
	for ; i < len(ids); i++ {
		if err := ctx.Err(); err != nil {
			return nil, connect.NewError(connect.CodeCanceled, err)
		}
		p := lp.jobs[ids[i]]
		// User and class come from the plan; events do not change them.
		if m.GetUser() != "" && p.GetUser() != m.GetUser() || m.GetJobClass() != "" && p.GetJobClass() != m.GetJobClass() {
			continue
		}
		in, err := s.compose(c.id, lp, ids[i])
		if err != nil {
			return nil, err
		}
		if len(m.GetStates()) > 0 && !slices.Contains(m.GetStates(), in.GetState()) ||
			m.GetKind() != pb.AllocationKind_ALLOCATION_KIND_UNSPECIFIED && in.GetKind() != m.GetKind() {
			continue
		}
		if len(out.Jobs) == size {
			out.NextPageToken = pageToken(out.Jobs[size-1].GetJobId(), listFingerprint(m))
			break
		}
		out.Jobs = append(out.Jobs, in)
	}
	return connect.NewResponse(out), nil
}

// pageTokenVersion is the first byte of every page token.
const pageTokenVersion = 1

// listFingerprint hashes what a page token is valid for: the cluster and
// the filters (not the page size, which may change from page to page).
func listFingerprint(m *pb.ListJobsRequest) uint64 {
	h := fnv.New64a()
	field := func(s string) {
		h.Write([]byte(strconv.Itoa(len(s)) + ":" + s))
	}
	field(m.GetClusterId())
	field(m.GetUser())
	field(m.GetJobClass())
	field(m.GetKind().String())
	for _, st := range m.GetStates() {
		field(st.String())
	}
	return h.Sum64()
}

// pageToken is an opaque token for the page after job id last: a version
// byte, the query's fingerprint, then the id.
func pageToken(last string, fingerprint uint64) string {
	b := make([]byte, 0, 9+len(last))
	b = append(b, pageTokenVersion)
	b = binary.BigEndian.AppendUint64(b, fingerprint)
	b = append(b, last...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// readPageToken returns the last job id of the page a token follows ("" for
// no token).
func readPageToken(tok string, fingerprint uint64) (string, error) {
	if tok == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) < 10 || b[0] != pageTokenVersion {
		return "", errors.New("not a page token of this service: pass next_page_token as it came")
	}
	if binary.BigEndian.Uint64(b[1:9]) != fingerprint {
		return "", errors.New("the token belongs to another query: keep the cluster and filters of the call that returned it")
	}
	return string(b[9:]), nil
}
