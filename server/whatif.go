package server

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// WhatIf will replay a trace under several policies. The simulator (package
// sim) has no entry point yet, so the call is refused, after validation,
// with Unimplemented; the messages are final.
func (s *Server) WhatIf(ctx context.Context, req *connect.Request[pb.WhatIfRequest], stream *connect.ServerStream[pb.WhatIfResponse]) error {
	return connect.NewError(connect.CodeUnimplemented,
		errors.New("WhatIf is not available yet: the simulator (package sim) has no entry point to run it; use `huitian whatif` once it exists"))
}
