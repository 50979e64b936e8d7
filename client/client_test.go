package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"

	"github.com/huitian/huitian/client"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/proto/huitian/v1/huitianv1connect"
)

type statusOnly struct {
	huitianv1connect.UnimplementedPlannerServiceHandler
}

func (statusOnly) GetStatus(_ context.Context, req *connect.Request[pb.GetStatusRequest]) (*connect.Response[pb.GetStatusResponse], error) {
	resp := connect.NewResponse(&pb.GetStatusResponse{ClusterId: req.Msg.GetClusterId()})
	resp.Header().Set("X-Saw-Authorization", req.Header().Get("Authorization"))
	return resp, nil
}

func TestClientSendsTheTokenOverEveryProtocol(t *testing.T) {
	path, h := huitianv1connect.NewPlannerServiceHandler(statusOnly{})
	mux := http.NewServeMux()
	mux.Handle(path, h)
	srv := httptest.NewUnstartedServer(mux)
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = &p
	srv.Start()
	defer srv.Close()
	for _, proto := range []client.Protocol{client.Connect, client.GRPC, client.GRPCWeb} {
		c := client.New(srv.URL, client.WithProtocol(proto), client.WithToken("tok"))
		resp, err := c.GetStatus(context.Background(), connect.NewRequest(&pb.GetStatusRequest{ClusterId: "c1"}))
		if err != nil {
			t.Fatalf("protocol %d: %v", proto, err)
		}
		if got := resp.Header().Get("X-Saw-Authorization"); got != "Bearer tok" {
			t.Errorf("protocol %d: server saw Authorization %q, want %q", proto, got, "Bearer tok")
		}
		if resp.Msg.GetClusterId() != "c1" {
			t.Errorf("protocol %d: cluster %q", proto, resp.Msg.GetClusterId())
		}
	}
}
