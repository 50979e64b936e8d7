package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/proto"

	"github.com/huitian/huitian/internal/wire"
	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// RequestIDHeader carries a call's request id: the caller's when it sends
// one, else one the service makes. Logs and Internal errors name it.
const RequestIDHeader = "X-Request-Id"

type requestIDKey struct{}

// requestID returns the call's request id ("" outside a call).
func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// observe gives every call a request id, logs it, and counts its errors by
// code.
func (s *Server) observe() connect.Interceptor { return &observer{s: s} }

type observer struct{ s *Server }

func (o *observer) begin(ctx context.Context, h http.Header) (context.Context, string) {
	id := h.Get(RequestIDHeader)
	if id == "" || len(id) > 128 {
		id = newRequestID()
	}
	return context.WithValue(ctx, requestIDKey{}, id), id
}

func (o *observer) end(ctx context.Context, procedure, id string, start time.Time, err error) {
	if err == nil {
		o.s.log.LogAttrs(ctx, slog.LevelDebug, "rpc", slog.String("procedure", procedure),
			slog.String("request_id", id), slog.Duration("took", time.Since(start)))
		return
	}
	code := connect.CodeOf(err)
	o.s.met.rpcErrors.WithLabelValues(procedure, code.String()).Inc()
	level := slog.LevelInfo
	if code == connect.CodeInternal || code == connect.CodeUnknown || code == connect.CodeDataLoss {
		level = slog.LevelError
	}
	o.s.log.LogAttrs(ctx, level, "rpc failed", slog.String("procedure", procedure), slog.String("request_id", id),
		slog.String("code", code.String()), slog.String("error", err.Error()), slog.Duration("took", time.Since(start)))
	var cerr *connect.Error
	if errors.As(err, &cerr) {
		cerr.Meta().Set(RequestIDHeader, id)
	}
}

func (o *observer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		start := time.Now()
		ctx, id := o.begin(ctx, req.Header())
		resp, err := next(ctx, req)
		if resp != nil {
			resp.Header().Set(RequestIDHeader, id)
		}
		o.end(ctx, req.Spec().Procedure, id, start, err)
		return resp, err
	}
}

func (o *observer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (o *observer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		start := time.Now()
		ctx, id := o.begin(ctx, conn.RequestHeader())
		conn.ResponseHeader().Set(RequestIDHeader, id)
		err := next(ctx, conn)
		o.end(ctx, conn.Spec().Procedure, id, start, err)
		return err
	}
}

// recovered answers a panic that escaped a handler: Internal, logged with
// the request id and the stack. The process lives on.
func (s *Server) recovered(ctx context.Context, spec connect.Spec, _ http.Header, r any) error {
	id := requestID(ctx)
	s.met.panics.WithLabelValues(spec.Procedure).Inc()
	s.log.Error("panic in handler", "procedure", spec.Procedure, "request_id", id, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	return connect.NewError(connect.CodeInternal, fmt.Errorf("internal error (request id %s)", id))
}

// validate checks a request message against the service's limits, then
// against the contract's protovalidate rules. Every violation is an
// InvalidArgument error naming its field in a google.rpc.BadRequest detail.
func (s *Server) validate() connect.Interceptor { return &validator{s: s} }

type validator struct{ s *Server }

func (v *validator) check(ctx context.Context, msg any) error {
	m, ok := msg.(proto.Message)
	if !ok {
		return nil
	}
	if err := authorize(ctx, m); err != nil {
		return err
	}
	if probs := v.s.limits(m); len(probs) > 0 {
		return invalidArgument("request exceeds the service's limits", probs)
	}
	// Plan and ReportEvents convert through internal/wire, which runs these
	// same rules together with the model's cross-field rules: one pass.
	switch m.(type) {
	case *pb.PlanRequest, *pb.ReportEventsRequest:
		return nil
	}
	probs, err := wire.Problems(m)
	if err != nil {
		return connect.NewError(connect.CodeInternal, fmt.Errorf("validate: %w", err))
	}
	if len(probs) > 0 {
		return invalidArgument("invalid request", probs)
	}
	return nil
}

func (v *validator) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if err := v.check(ctx, req.Any()); err != nil {
			return nil, err
		}
		return next(ctx, req)
	}
}

func (v *validator) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (v *validator) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		return next(ctx, &validatingConn{StreamingHandlerConn: conn, v: v, ctx: ctx})
	}
}

type validatingConn struct {
	connect.StreamingHandlerConn
	v   *validator
	ctx context.Context
}

func (c *validatingConn) Receive(msg any) error {
	if err := c.StreamingHandlerConn.Receive(msg); err != nil {
		return err
	}
	return c.v.check(c.ctx, msg)
}

// limits checks a request against the configured caps, cheaply, before any
// validation or conversion.
func (s *Server) limits(m proto.Message) []model.Problem {
	var probs []model.Problem
	switch r := m.(type) {
	case *pb.PlanRequest:
		cards := 0
		for _, n := range r.GetCluster().GetNodes() {
			cards += len(n.GetCards())
		}
		if cards > s.cfg.MaxCards {
			probs = append(probs, model.Problem{Field: "cluster.nodes",
				Message: fmt.Sprintf("the cluster has %d cards; this service plans at most %d per request (--max-cards)", cards, s.cfg.MaxCards)})
		}
		if n := len(r.GetCluster().GetDomains()); n > s.cfg.MaxDomains {
			probs = append(probs, model.Problem{Field: "cluster.domains",
				Message: fmt.Sprintf("the cluster has %d domains; this service plans at most %d per request (--max-domains)", n, s.cfg.MaxDomains)})
		}
		if jobs := len(r.GetRunning()) + len(r.GetQueued()); jobs > s.cfg.MaxJobs {
			probs = append(probs, model.Problem{Field: "queued",
				Message: fmt.Sprintf("the request has %d running and queued jobs; this service plans at most %d per request (--max-jobs)", jobs, s.cfg.MaxJobs)})
		}
		if tb := r.GetOptions().GetTimeBudget(); tb != nil && tb.AsDuration() > s.cfg.MaxTimeBudget {
			probs = append(probs, model.Problem{Field: "options.time_budget",
				Message: fmt.Sprintf("%s is above this service's cap of %s (--max-time-budget)", tb.AsDuration(), s.cfg.MaxTimeBudget)})
		}
	case *pb.ReportEventsRequest:
		if n := len(r.GetEvents()); n > s.cfg.MaxEvents {
			probs = append(probs, model.Problem{Field: "events",
				Message: fmt.Sprintf("the request has %d events; this service takes at most %d per request (--max-events): send them in batches", n, s.cfg.MaxEvents)})
		}
	case *pb.WhatIfRequest:
		cards := 0
		for _, n := range r.GetClusterSpec().GetNodes() {
			cards += len(n.GetCards())
		}
		if sh := r.GetShape(); sh != nil {
			cards = int(sh.GetNodes()) * int(sh.GetCardsPerNode())
		}
		if n := len(r.GetClusterSpec().GetDomains()); n > s.cfg.MaxDomains {
			probs = append(probs, model.Problem{Field: "cluster_spec.domains",
				Message: fmt.Sprintf("the cluster has %d domains; this service simulates at most %d (--max-domains)", n, s.cfg.MaxDomains)})
		}
		if cards > s.cfg.MaxCards {
			probs = append(probs, model.Problem{Field: "cluster",
				Message: fmt.Sprintf("the cluster has %d cards; this service simulates at most %d (--max-cards)", cards, s.cfg.MaxCards)})
		}
	}
	return probs
}

// maxDetailProblems caps the violations one error carries.
const maxDetailProblems = 200

// invalidArgument is an InvalidArgument error whose message lists the
// problems and whose google.rpc.BadRequest detail names each field.
func invalidArgument(what string, probs []model.Problem) *connect.Error {
	var b strings.Builder
	b.WriteString(what)
	b.WriteString(": ")
	for i, p := range probs {
		if i == 20 {
			fmt.Fprintf(&b, "; and %d more (see the BadRequest detail)", len(probs)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	err := connect.NewError(connect.CodeInvalidArgument, errors.New(b.String()))
	br := &errdetails.BadRequest{}
	for i, p := range probs {
		if i == maxDetailProblems {
			break
		}
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: p.Field, Description: p.Message})
	}
	if d, derr := connect.NewErrorDetail(br); derr == nil {
		err.AddDetail(d)
	}
	return err
}

// fromModelError maps a conversion error: a *model.ValidationError becomes
// InvalidArgument with field paths; anything else is Internal.
func fromModelError(err error) error {
	var verr *model.ValidationError
	if errors.As(err, &verr) {
		return invalidArgument("invalid request", verr.Problems)
	}
	return connect.NewError(connect.CodeInternal, err)
}

// auth requires a bearer token from the token file, when there is one,
// and passes its scope on in the call's context (checked against the
// request's cluster by the validator). It answers RPCs in their own
// protocol (Connect, gRPC, gRPC-Web) and anything else with a plain 401.
func (s *Server) auth(next http.Handler) http.Handler { return s.authScoped(next, false) }

// authAll is auth for what spans every cluster (/metrics): only a token
// for all clusters may read it.
func (s *Server) authAll(next http.Handler) http.Handler { return s.authScoped(next, true) }

func (s *Server) authScoped(next http.Handler, needAll bool) http.Handler {
	if len(s.tokens) == 0 {
		return next
	}
	ew := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		var sc *tokenScope
		if ok {
			sc = s.match(got)
		}
		var err *connect.Error
		switch {
		case sc == nil:
			w.Header().Set("WWW-Authenticate", `Bearer realm="huitian"`)
			if r.ProtoMajor == 1 {
				// A client without the token has nothing more to say here.
				w.Header().Set("Connection", "close")
			}
			err = connect.NewError(connect.CodeUnauthenticated, errors.New("missing or wrong bearer token (Authorization: Bearer <token>)"))
		case needAll && !sc.all:
			err = connect.NewError(connect.CodePermissionDenied, errors.New("this token is scoped to some clusters; this path needs a token for all of them"))
		default:
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), scopeKey{}, sc)))
			return
		}
		s.met.rpcErrors.WithLabelValues(r.URL.Path, err.Code().String()).Inc()
		if ew.IsSupported(r) {
			_ = ew.Write(w, r, err)
			return
		}
		status := http.StatusUnauthorized
		if err.Code() == connect.CodePermissionDenied {
			status = http.StatusForbidden
		}
		http.Error(w, err.Message(), status)
	})
}
