// Package client is a Go client for huitian's planning service: a thin
// wrapper over the generated Connect client that speaks Connect, gRPC or
// gRPC-Web, over HTTP/1.1, unencrypted HTTP/2 (h2c) or TLS, and carries a
// bearer token.
package client

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/huitian/huitian/proto/huitian/v1/huitianv1connect"
)

// Protocol is the RPC protocol the client speaks.
type Protocol int

const (
	// Connect is Connect's own protocol (the default).
	Connect Protocol = iota
	// GRPC is gRPC over HTTP/2.
	GRPC
	// GRPCWeb is gRPC-Web.
	GRPCWeb
)

type config struct {
	token    string
	protocol Protocol
	http     connect.HTTPClient
	tls      *tls.Config
	opts     []connect.ClientOption
}

// Option configures New.
type Option func(*config)

// WithToken sends `Authorization: Bearer token` with every call.
func WithToken(token string) Option { return func(c *config) { c.token = token } }

// WithProtocol picks Connect (default), gRPC or gRPC-Web.
func WithProtocol(p Protocol) Option { return func(c *config) { c.protocol = p } }

// WithHTTPClient replaces the HTTP client New builds.
func WithHTTPClient(h connect.HTTPClient) Option { return func(c *config) { c.http = h } }

// WithTLSConfig sets the TLS configuration for an https:// address.
func WithTLSConfig(t *tls.Config) Option { return func(c *config) { c.tls = t } }

// WithClientOptions adds Connect client options (interceptors,
// compression, read limits).
func WithClientOptions(o ...connect.ClientOption) Option {
	return func(c *config) { c.opts = append(c.opts, o...) }
}

// New returns a PlannerService client for baseURL ("http://127.0.0.1:7070"
// or "https://…"). Over http:// it speaks HTTP/2 without TLS (h2c), which
// gRPC needs; over https:// it negotiates HTTP/2 with TLS.
func New(baseURL string, opts ...Option) huitianv1connect.PlannerServiceClient {
	c := config{}
	for _, o := range opts {
		o(&c)
	}
	if c.http == nil {
		c.http = NewHTTPClient(strings.HasPrefix(baseURL, "https://"), c.tls)
	}
	copts := append([]connect.ClientOption(nil), c.opts...)
	switch c.protocol {
	case GRPC:
		copts = append(copts, connect.WithGRPC())
	case GRPCWeb:
		copts = append(copts, connect.WithGRPCWeb())
	}
	if c.token != "" {
		copts = append(copts, connect.WithInterceptors(bearer(c.token)))
	}
	return huitianv1connect.NewPlannerServiceClient(c.http, strings.TrimSuffix(baseURL, "/"), copts...)
}

// NewHTTPClient returns an HTTP client for the service: HTTP/2 over TLS when
// useTLS, else HTTP/2 without TLS (prior knowledge, h2c).
func NewHTTPClient(useTLS bool, tlsConfig *tls.Config) *http.Client {
	var p http.Protocols
	if useTLS {
		p.SetHTTP1(true)
		p.SetHTTP2(true)
	} else {
		p.SetUnencryptedHTTP2(true)
	}
	return &http.Client{Transport: &http.Transport{
		Protocols:           &p,
		TLSClientConfig:     tlsConfig,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
	}}
}

// bearer adds the token to every request.
type bearer string

func (b bearer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("Authorization", "Bearer "+string(b))
		return next(ctx, req)
	}
}

func (b bearer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		conn.RequestHeader().Set("Authorization", "Bearer "+string(b))
		return conn
	}
}

func (b bearer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
