package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"connectrpc.com/connect"

	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/proto/huitian/v1/huitianv1connect"
)

// Backoff says how long to wait between tries: Initial after the first
// failure, doubling up to Max, each wait drawn at random from its upper half
// so that many resource managers do not retry in step.
type Backoff struct {
	// Initial is the first wait (default 200ms).
	Initial time.Duration
	// Max caps every wait (default 30s).
	Max time.Duration
	// Attempts caps the tries; 0 tries until the context is done.
	Attempts int
}

// DefaultBackoff is 200ms doubling to 30s, until the context is done.
var DefaultBackoff = Backoff{Initial: 200 * time.Millisecond, Max: 30 * time.Second}

// wait is the pause before try n+1 (n ≥ 1).
func (b Backoff) wait(n int) time.Duration {
	d, limit := b.Initial, b.Max
	if d <= 0 {
		d = DefaultBackoff.Initial
	}
	if limit <= 0 {
		limit = DefaultBackoff.Max
	}
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	return d/2 + rand.N(d/2+1)
}

// Retryable reports whether an RPC error may go away by itself (the service
// down, restarting, overloaded or cut off). A request the service refused —
// invalid, unauthenticated, not permitted, unknown method — is never retried:
// the same request gets the same answer.
func Retryable(err error) bool {
	switch connect.CodeOf(err) {
	case connect.CodeInvalidArgument, connect.CodeUnauthenticated, connect.CodePermissionDenied,
		connect.CodeUnimplemented, connect.CodeFailedPrecondition, connect.CodeOutOfRange,
		connect.CodeNotFound, connect.CodeAlreadyExists:
		return false
	}
	return true
}

// ErrGaveUp wraps the last error when Backoff.Attempts ran out.
var ErrGaveUp = errors.New("client: gave up retrying")

// Retry calls f until it succeeds, f's error is not Retryable, the attempts
// run out (ErrGaveUp wrapping the last error) or ctx is done (ctx's error,
// wrapping the last RPC error). It waits per b between tries.
func Retry(ctx context.Context, b Backoff, f func(context.Context) error) error {
	for n := 1; ; n++ {
		err := f(ctx)
		if err == nil {
			return nil
		}
		if !Retryable(err) {
			return err
		}
		if b.Attempts > 0 && n >= b.Attempts {
			return fmt.Errorf("%w after %d tries: %w", ErrGaveUp, n, err)
		}
		t := time.NewTimer(b.wait(n))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last try: %w)", context.Cause(ctx), err)
		case <-t.C:
		}
	}
}

// ReportEvents sends req until the service acknowledges it (the README tells
// resource managers to retry until it answers: the answer comes only once
// the events are on disk, and a repeat counts as a duplicate, so resending
// is safe). It gives up on a refused request, when b's attempts run out, or
// when ctx is done.
func ReportEvents(ctx context.Context, c huitianv1connect.PlannerServiceClient, req *pb.ReportEventsRequest, b Backoff) (*pb.ReportEventsResponse, error) {
	var resp *connect.Response[pb.ReportEventsResponse]
	err := Retry(ctx, b, func(ctx context.Context) error {
		var err error
		resp, err = c.ReportEvents(ctx, connect.NewRequest(req))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("report %d events for cluster %q: %w", len(req.GetEvents()), req.GetClusterId(), err)
	}
	return resp.Msg, nil
}
