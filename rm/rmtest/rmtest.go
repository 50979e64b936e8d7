// Package rmtest starts a real planning service on loopback for the tests of
// resource-manager drivers and clients: the same server `huitian serve`
// runs, reached over the real RPC path, never a fake in its place.
package rmtest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/huitian/huitian/client"
	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/proto/huitian/v1/huitianv1connect"
	"github.com/huitian/huitian/server"
)

// Server is a planning service serving on a loopback port until the test ends.
type Server struct {
	// URL is its base address, "http://127.0.0.1:PORT".
	URL string
}

// Start serves a new service with its store in a test folder on
// 127.0.0.1:0, EASY as the default policy. Call it outside any
// synctest bubble: the server's goroutines belong to the real world.
func Start(t testing.TB) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := serve(t, ln, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// StartAt serves a new service on addr, which must be free, with its store
// in dataDir; it is Start for a test that brings a service up late.
func StartAt(t testing.TB, addr, dataDir string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return serve(t, ln, dataDir)
}

func serve(t testing.TB, ln net.Listener, dataDir string) (*Server, error) {
	cfg := server.Defaults()
	cfg.DataDir = dataDir
	cfg.DefaultPolicy = model.PolicyEASY
	s, err := server.New(cfg, server.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("server.New: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, server.ServeOptions{}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &Server{URL: "http://" + ln.Addr().String()}, nil
}

// Client returns a client for the service whose connections close after
// every call. Inside a synctest bubble that matters: an idle keep-alive
// connection's reader is blocked on the network, which is never "durably
// blocked", so fake time would never advance.
func (s *Server) Client(opts ...client.Option) huitianv1connect.PlannerServiceClient {
	return NewClient(s.URL, opts...)
}

// NewClient is Server.Client for any address.
func NewClient(url string, opts ...client.Option) huitianv1connect.PlannerServiceClient {
	h := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	return client.New(url, append([]client.Option{client.WithHTTPClient(h)}, opts...)...)
}

// FreeAddr returns a loopback address nothing listens on (a port the kernel
// just handed out and took back).
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
