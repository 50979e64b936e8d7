package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"
	"github.com/dgraph-io/ristretto/v2"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/netutil"

	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/proto/huitian/v1/huitianv1connect"
	"github.com/huitian/huitian/server/web"
	"github.com/huitian/huitian/solver"
)

// PlannerFactory makes the planner for a policy and reservation depth;
// solver.New by default. It returns an error wrapping
// solver.ErrUnimplemented for a policy that is not built yet.
type PlannerFactory func(p model.Policy, depth int) (solver.Planner, error)

// Option changes how New builds a Server.
type Option func(*Server)

// WithLogger sets the logger (slog.Default by default).
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// WithPlannerFactory replaces solver.New, for tests and for planners built
// outside package solver.
func WithPlannerFactory(f PlannerFactory) Option { return func(s *Server) { s.newPlanner = f } }

// Server is the planning service. Make one with New, serve its Handler (or
// call Serve), and Close it.
type Server struct {
	cfg        Config
	log        *slog.Logger
	newPlanner PlannerFactory
	store      store
	met        *metrics
	cache      *ristretto.Cache[string, *pb.JobInsight]
	health     *grpchealth.StaticChecker
	tokens     []*tokenScope // from Config.TokenFile; none: no auth
	closeOnce  sync.Once
	closeErr   error
	closed     atomic.Bool
	onDrain    func()            // for tests: called when a drain begins
	wrapStore  func(store) store // for tests: wraps the opened store

	mu       sync.Mutex // guards clusters; taken before any cluster.mu
	clusters map[string]*cluster
}

// New opens the store under cfg.DataDir, loads every cluster's last plan,
// and returns a Server ready to serve.
func New(cfg Config, opts ...Option) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("server config: %w", err)
	}
	s := &Server{cfg: cfg, log: slog.Default(), newPlanner: solver.New, clusters: map[string]*cluster{}}
	for _, o := range opts {
		o(s)
	}
	if cfg.TokenFile != "" {
		toks, err := readTokens(cfg.TokenFile)
		if err != nil {
			return nil, err
		}
		s.tokens = toks
	}
	cache, err := ristretto.NewCache(&ristretto.Config[string, *pb.JobInsight]{
		NumCounters: 10 * cfg.InsightCacheEntries,
		MaxCost:     cfg.InsightCacheEntries,
		BufferItems: 64,
		Metrics:     true,
	})
	if err != nil {
		return nil, fmt.Errorf("insight cache: %w", err)
	}
	s.cache = cache
	st, err := openBolt(cfg.DataDir, cfg.Retention)
	if err != nil {
		cache.Close()
		return nil, err
	}
	s.store = st
	if s.wrapStore != nil {
		s.store = s.wrapStore(st)
	}
	s.met = newMetrics(func() float64 { return cache.Metrics.Ratio() }, cfg.MaxClusterLabels)
	if err := s.loadPlans(); err != nil {
		s.Close()
		return nil, err
	}
	s.health = grpchealth.NewStaticChecker(huitianv1connect.PlannerServiceName)
	return s, nil
}

// Close flushes and closes the store. It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.saveAllMemory()
		s.closed.Store(true)
		s.cache.Close()
		s.closeErr = s.store.Close()
	})
	return s.closeErr
}

// Handler serves PlannerService (Connect, gRPC, gRPC-Web), gRPC health,
// gRPC reflection, /metrics and the web page (package web). With a token,
// everything but health and the page's static files needs
// `Authorization: Bearer <token>`.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	path, h := huitianv1connect.NewPlannerServiceHandler(s,
		connect.WithInterceptors(s.observe(), s.validate()),
		connect.WithRecover(s.recovered),
		connect.WithReadMaxBytes(s.cfg.MaxRequestBytes),
		connect.WithCompressMinBytes(1024),
		connect.WithCodec(jsonCodecs[0]),
		connect.WithCodec(jsonCodecs[1]),
	)
	mux.Handle(path, s.auth(h))
	// Health and reflection read small messages: a frame declaring more is
	// ResourceExhausted before anything is allocated for it (health is open
	// even with a token, so its limit is the tightest).
	mux.Handle(grpchealth.NewHandler(s.health, connect.WithReadMaxBytes(maxHealthBytes)))
	reflector := grpcreflect.NewStaticReflector(huitianv1connect.PlannerServiceName)
	rp, rh := grpcreflect.NewHandlerV1(reflector, connect.WithReadMaxBytes(maxReflectionBytes))
	mux.Handle(rp, s.auth(rh))
	rpa, rha := grpcreflect.NewHandlerV1Alpha(reflector, connect.WithReadMaxBytes(maxReflectionBytes))
	mux.Handle(rpa, s.auth(rha))
	mux.Handle("/metrics", s.authAll(promhttp.HandlerFor(s.met.reg, promhttp.HandlerOpts{Registry: s.met.reg})))
	web.Mount(mux) // the page at / and /jobs/<id>; it calls the API above with the user's token
	return s.bodyDeadline(mux)
}

// Read limits of the health and reflection services.
const (
	maxHealthBytes     = 4 << 10
	maxReflectionBytes = 64 << 10
)

// bodyDeadline bounds reading each request's body to Config.BodyTimeout
// from the call's start, per call (per stream on HTTP/2), and lifts the
// bound once the body has been read: a server-streaming answer may take
// longer than its request took to arrive.
func (s *Server) bodyDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout)); err == nil && r.Body != nil {
			r.Body = &deadlineBody{ReadCloser: r.Body, lift: func() { _ = rc.SetReadDeadline(time.Time{}) }}
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the read deadline when the body has been read.
type deadlineBody struct {
	io.ReadCloser
	lift   func()
	lifted bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.lifted {
		b.lifted = true
		b.lift()
	}
	return n, err
}

// ServeOptions say how Serve listens.
type ServeOptions struct {
	// TLSCertFile and TLSKeyFile, both set, serve TLS (HTTP/1.1 and HTTP/2);
	// otherwise the port speaks HTTP/1.1 and unencrypted HTTP/2 (h2c).
	TLSCertFile, TLSKeyFile string
}

// Serve serves on ln until ctx is done, then drains: health turns
// NOT_SERVING, new connections are refused, in-flight calls get up to
// Config.ShutdownTimeout to finish, and the store is flushed and closed.
// It returns nil after a clean drain.
func (s *Server) Serve(ctx context.Context, ln net.Listener, o ServeOptions) error {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	protocols.SetUnencryptedHTTP2(o.TLSCertFile == "")
	srv := &http.Server{
		Handler:           s.Handler(),
		Protocols:         &protocols,
		ReadHeaderTimeout: s.cfg.HeaderTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: s.cfg.MaxStreams},
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		// In-flight calls keep running through a drain: their context is
		// not the one that asks for the stop.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	if o.TLSCertFile != "" {
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	ln = netutil.LimitListener(ln, s.cfg.MaxConnections)
	errc := make(chan error, 1)
	go func() {
		if o.TLSCertFile != "" {
			errc <- srv.ServeTLS(ln, o.TLSCertFile, o.TLSKeyFile)
			return
		}
		errc <- srv.Serve(ln)
	}()
	select {
	case err := <-errc:
		s.Close()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("draining: refusing new calls, waiting for in-flight ones", "timeout", s.cfg.ShutdownTimeout)
	s.health.SetStatus(huitianv1connect.PlannerServiceName, grpchealth.StatusNotServing)
	s.health.SetStatus("", grpchealth.StatusNotServing)
	if s.onDrain != nil {
		s.onDrain()
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	var drainErr error
	if err := srv.Shutdown(sctx); err != nil {
		drainErr = fmt.Errorf("drain: %w", err)
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		drainErr = errors.Join(drainErr, err)
	}
	if err := s.Close(); err != nil {
		return errors.Join(drainErr, fmt.Errorf("close store: %w", err))
	}
	s.log.Info("stopped; store flushed")
	return drainErr
}
