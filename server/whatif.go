package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/huitian/huitian/internal/wire"
	"github.com/huitian/huitian/internal/wire/whatif"
	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/proto/huitian/v1/huitianv1connect"
	"github.com/huitian/huitian/sim"
	"github.com/huitian/huitian/sim/trace"
	"github.com/huitian/huitian/solver"
)

// TracesDir is the folder under Config.DataDir that WhatIf's trace_path is
// relative to. WhatIf reads nothing outside it: no absolute paths, no "..",
// no symbolic links that lead out.
const TracesDir = "traces"

// traceReaders are the readers trace.Open uses for each file format.
var traceReaders = map[string]func(io.Reader, trace.Options) (*trace.Trace, error){
	"swf":    trace.ReadSWF,
	"philly": trace.ReadPhilly,
	"openb":  trace.ReadOpenB,
	"helios": trace.ReadHelios,
	"acme":   trace.ReadAcme,
}

// whatIfProgressEvery is the longest a policy's replay goes without a
// progress message while it plans.
const whatIfProgressEvery = time.Second

// whatIfProgressSteps is about how many progress messages a policy's
// replay sends for its finished jobs (plus one a second, and a last one).
const whatIfProgressSteps = 50

// whatIf is a validated what-if request: the trace, a way to build a fresh
// cluster for each policy, the policies with their planners, and the
// policy the others are compared with.
type whatIf struct {
	field      string // the request's trace field, for errors
	tr         *trace.Trace
	newCluster func() (*model.Cluster, error)
	runs       []whatIfRun
	reference  pb.Policy
}

// errWhatIfCluster marks a cluster that could not be built for a replay
// after the request's cluster was checked: the service's fault.
var errWhatIfCluster = errors.New("server: what-if cluster")

// whatIfRun is one policy to replay, with its own planner.
type whatIfRun struct {
	policy pb.Policy
	opts   model.Options
	pl     solver.Planner
}

// WhatIf replays a trace on a cluster under each requested policy, the way
// `huitian whatif` does (same trace readers and options, same cluster
// specs, same planners, sim.Sweep with the same configuration), in
// parallel up to GOMAXPROCS, each policy with its own planner and its own
// cluster. It streams progress while the replays run, then the comparison,
// with each policy's size classes compared with the reference policy's
// (request.reference, EASY when unset) on the same jobs.
// Cancelling the call stops every replay.
func (s *Server) WhatIf(ctx context.Context, req *connect.Request[pb.WhatIfRequest], stream *connect.ServerStream[pb.WhatIfResponse]) error {
	return s.whatIf(ctx, req.Msg, stream.Send)
}

// whatIf serves one WhatIf call; send writes one stream message. It
// returns only after every replay goroutine it started has ended.
func (s *Server) whatIf(ctx context.Context, req *pb.WhatIfRequest, send func(*pb.WhatIfResponse) error) error {
	start := time.Now()
	w, err := s.prepareWhatIf(req)
	if err != nil {
		return err
	}
	results, ref, err := s.replayAll(ctx, w, send)
	if err != nil {
		return err
	}
	s.log.Info("what-if replayed", "request_id", requestID(ctx), "jobs", len(w.tr.Jobs),
		"policies", len(w.runs), "took", time.Since(start))
	return send(&pb.WhatIfResponse{Result: &pb.WhatIfResponse_Comparison{Comparison: &pb.WhatIfComparison{Results: results, Reference: ref}}})
}

// prepareWhatIf checks what the contract's rules cannot (policies the
// solver builds, the trace, the cluster, the limits), reads the trace and
// builds the planners. Every problem is InvalidArgument naming its field.
func (s *Server) prepareWhatIf(req *pb.WhatIfRequest) (*whatIf, error) {
	w := &whatIf{}
	runs, err := s.whatIfRuns(req)
	if err != nil {
		return nil, err
	}
	w.runs = runs
	w.reference = req.GetReference()
	if w.reference == pb.Policy_POLICY_UNSPECIFIED {
		w.reference = pb.Policy_POLICY_EASY
	}
	if err := s.readWhatIfTrace(req, w); err != nil {
		return nil, err
	}
	if err := s.whatIfCluster(req, w); err != nil {
		return nil, err
	}
	return w, nil
}

// whatIfRuns resolves the policies and options and builds one planner per
// policy, as solver.New (or the server's planner factory) makes them.
func (s *Server) whatIfRuns(req *pb.WhatIfRequest) ([]whatIfRun, error) {
	var probs []model.Problem
	bad := func(field, format string, args ...any) {
		probs = append(probs, model.Problem{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	opts := wire.Options(req.GetOptions())
	if opts.Policy != model.PolicyDefault {
		bad("options.policy", "must be unset: give the policies to compare in policies; options apply to each of them")
	}
	if opts.TimeBudget > s.cfg.MaxTimeBudget {
		bad("options.time_budget", "%s is above this service's cap of %s (--max-time-budget)", opts.TimeBudget, s.cfg.MaxTimeBudget)
	}
	if len(req.GetPolicies()) == 0 {
		bad("policies", "give at least one policy to replay")
	}
	var runs []whatIfRun
	seen := map[model.Policy]int{}
	for i, p := range req.GetPolicies() {
		field := fmt.Sprintf("policies[%d]", i)
		mp := wire.Policy(p)
		if mp == model.PolicyDefault {
			bad(field, "unknown policy %s: want a concrete policy (%s)", p, policyList())
			continue
		}
		if j, dup := seen[mp]; dup {
			bad(field, "%s is also policies[%d]", p, j)
			continue
		}
		seen[mp] = i
		pl, err := s.newPlanner(mp, opts.ReservationDepth)
		if err != nil {
			if errors.Is(err, solver.ErrUnimplemented) {
				return nil, connect.NewError(connect.CodeUnimplemented, fmt.Errorf("%s: %w; no other policy is replayed in its place", field, err))
			}
			bad(field, "%s: %v", p, err)
			continue
		}
		ro := opts
		ro.Policy = mp
		runs = append(runs, whatIfRun{policy: p, opts: ro, pl: pl})
	}
	if len(probs) > 0 {
		return nil, invalidArgument("invalid what-if", probs)
	}
	return runs, nil
}

// policyList names the concrete policies of the contract.
func policyList() string {
	var names []string
	for v := range pb.Policy_name {
		if p := pb.Policy(v); wire.Policy(p) != model.PolicyDefault {
			names = append(names, p.String())
		}
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// readWhatIfTrace reads the trace from the uploaded bytes, the trace folder
// or the synth spec, with the options `huitian whatif` uses by default
// (no filter, limits by the readers' default rule), keeps the first
// max_jobs jobs and checks the job cap (--max-jobs).
func (s *Server) readWhatIfTrace(req *pb.WhatIfRequest, w *whatIf) error {
	invalid := func(field, format string, args ...any) error {
		return invalidArgument("invalid what-if", []model.Problem{{Field: field, Message: fmt.Sprintf(format, args...)}})
	}
	format, ok := whatif.TraceFormat(req.GetFormat())
	if !ok {
		return invalid("format", "unknown trace format %s", req.GetFormat())
	}
	var (
		tr   *trace.Trace
		err  error
		opts trace.Options // `huitian whatif`'s: no --filter, the default estimate rule
	)
	switch src := req.GetTrace().(type) {
	case *pb.WhatIfRequest_TraceData:
		w.field = "trace_data"
		if format == "synth" {
			return invalid("format", "TRACE_FORMAT_SYNTH takes synth_spec, not trace_data")
		}
		tr, err = s.readUploaded(src.TraceData, format, opts)
	case *pb.WhatIfRequest_TracePath:
		w.field = "trace_path"
		if format == "synth" {
			return invalid("format", "TRACE_FORMAT_SYNTH takes synth_spec, not trace_path")
		}
		tr, err = s.readTraceFile(src.TracePath, format, opts)
	case *pb.WhatIfRequest_SynthSpec:
		w.field = "synth_spec"
		if format != "synth" {
			return invalid("format", "synth_spec needs TRACE_FORMAT_SYNTH, not %s", req.GetFormat())
		}
		var so trace.SynthOptions
		so, err = trace.ParseSynthSpec(src.SynthSpec)
		if err == nil && so.Jobs > s.cfg.MaxJobs {
			return invalid(w.field, "the spec asks for %d jobs; this service replays at most %d per request (--max-jobs)", so.Jobs, s.cfg.MaxJobs)
		}
		if err == nil {
			tr, err = trace.Synth(so)
		}
	default:
		return invalid("trace", "give the trace as trace_data, trace_path or synth_spec")
	}
	if err != nil {
		var ce *connect.Error
		if errors.As(err, &ce) {
			return ce
		}
		return invalid(w.field, "%v", err)
	}
	if n := int(req.GetMaxJobs()); n > 0 && n < len(tr.Jobs) {
		tr.Jobs = tr.Jobs[:n]
	}
	if len(tr.Jobs) == 0 {
		return invalid(w.field, "no jobs left to replay: %d records read, dropped: %s", tr.Records, trace.DroppedSummary(tr.Dropped))
	}
	if len(tr.Jobs) > s.cfg.MaxJobs {
		return invalid(w.field, "the trace has %d jobs; this service replays at most %d per request (--max-jobs): set max_jobs to replay the first ones", len(tr.Jobs), s.cfg.MaxJobs)
	}
	w.tr = tr
	return nil
}

// errTraceTooLarge is returned by a capped reader past its cap.
var errTraceTooLarge = errors.New("trace too large")

// cappedReader fails with errTraceTooLarge when r has more than n bytes.
type cappedReader struct {
	r io.Reader
	n int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if int64(len(p)) > c.n+1 {
		p = p[:c.n+1] // one byte more than allowed tells "n bytes" from "more"
	}
	k, err := c.r.Read(p)
	if int64(k) > c.n {
		k, c.n = int(c.n), 0
		return k, errTraceTooLarge
	}
	c.n -= int64(k)
	return k, err
}

// readUploaded reads uploaded trace bytes. Gzip-compressed bytes are
// decompressed here, capped at --max-request-bytes like any request, and
// the reader then sees the same bytes it would read from the file.
func (s *Server) readUploaded(data []byte, format string, opts trace.Options) (*trace.Trace, error) {
	var r io.Reader = bytes.NewReader(data)
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		r = &cappedReader{r: zr, n: int64(s.cfg.MaxRequestBytes)}
	}
	tr, err := traceReaders[format](r, opts)
	if errors.Is(err, errTraceTooLarge) {
		return nil, fmt.Errorf("decompresses to more than %d bytes, this service's cap on a request (--max-request-bytes): upload less, or put the file in the service's trace folder and give trace_path", s.cfg.MaxRequestBytes)
	}
	return tr, err
}

// readTraceFile reads a trace from the service's trace folder. The path
// must stay inside it, symbolic links included (os.Root enforces that).
func (s *Server) readTraceFile(rel, format string, opts trace.Options) (*trace.Trace, error) {
	if !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("%q is not a path inside the service's trace folder (%s/ under its --data folder): absolute paths and .. are refused", rel, TracesDir)
	}
	root, err := os.OpenRoot(filepath.Join(s.cfg.DataDir, TracesDir))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("the service has no trace folder (%s/ under its --data folder)", TracesDir)
		}
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("trace folder: %w", err))
	}
	defer root.Close()
	fi, err := root.Stat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%q: no such file in the service's trace folder", rel)
	case err != nil:
		return nil, fmt.Errorf("%q cannot be read inside the service's trace folder: %w", rel, unwrapPath(err))
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%q is not a regular file", rel)
	}
	f, err := root.Open(rel)
	if err != nil {
		return nil, fmt.Errorf("%q cannot be read inside the service's trace folder: %w", rel, unwrapPath(err))
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%q is not a regular file", rel)
	}
	tr, err := traceReaders[format](f, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	return tr, nil
}

// unwrapPath drops a *fs.PathError's operation and path (they may name the
// service's own folders), keeping the reason.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// whatIfCluster resolves the cluster, checks it once (and its size against
// --max-cards) and sets how each policy gets a fresh copy: sim.Run seals
// the cluster it is given, so runs in parallel must not share one.
func (s *Server) whatIfCluster(req *pb.WhatIfRequest, w *whatIf) error {
	invalid := func(field, format string, args ...any) error {
		return invalidArgument("invalid what-if", []model.Problem{{Field: field, Message: fmt.Sprintf(format, args...)}})
	}
	field := ""
	switch c := req.GetCluster().(type) {
	case *pb.WhatIfRequest_ClusterPreset:
		field = "cluster_preset"
		spec := c.ClusterPreset
		cards, err := presetCards(spec, w.tr.MaxCards)
		if err != nil {
			return invalid(field, "%v", err)
		}
		if cards > s.cfg.MaxCards {
			return invalid(field, "%q has more cards than this service simulates: at most %d (--max-cards)", spec, s.cfg.MaxCards)
		}
		maxCards := w.tr.MaxCards
		w.newCluster = func() (*model.Cluster, error) { return sim.ParseCluster(spec, maxCards) }
	case *pb.WhatIfRequest_ClusterSpec:
		field = "cluster_spec"
		msg := c.ClusterSpec
		w.newCluster = func() (*model.Cluster, error) {
			mc := wire.Cluster(msg)
			if err := mc.Seal(); err != nil {
				return nil, err
			}
			return mc, nil
		}
	case *pb.WhatIfRequest_Shape:
		field = "shape"
		sh := c.Shape
		if n, per := int64(sh.GetNodes()), int64(sh.GetCardsPerNode()); n < 1 || per < 1 || n*per > int64(s.cfg.MaxCards) {
			return invalid(field, "%d nodes × %d cards: want at least one of each and at most %d cards (--max-cards)", n, per, s.cfg.MaxCards)
		}
		w.newCluster = func() (*model.Cluster, error) { return whatif.Shape(sh) }
	default:
		return invalid("cluster", "give the cluster as cluster_spec, shape or cluster_preset")
	}
	probe, err := w.newCluster()
	if err != nil {
		var verr *model.ValidationError
		if errors.As(err, &verr) {
			probs := make([]model.Problem, len(verr.Problems))
			for i, p := range verr.Problems {
				probs[i] = model.Problem{Field: field + strings.TrimPrefix(p.Field, "cluster"), Message: p.Message}
			}
			return invalidArgument("invalid what-if", probs)
		}
		return invalid(field, "%v", err)
	}
	if len(probe.Layout().Cards) > s.cfg.MaxCards {
		return invalid(field, "the cluster has %d cards; this service simulates at most %d (--max-cards)", len(probe.Layout().Cards), s.cfg.MaxCards)
	}
	return nil
}

// presetCards is the size of a preset cluster, before building it: only
// flat, flat:N and hgx:N are served (no cluster files).
func presetCards(spec string, traceCards int) (int, error) {
	kind, arg, hasArg := strings.Cut(spec, ":")
	switch {
	case kind == "flat" && !hasArg:
		return traceCards, nil // ParseCluster explains a trace without a size
	case kind == "flat" || kind == "hgx":
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 {
			return 0, nil // ParseCluster explains it
		}
		if kind == "hgx" {
			if n > math.MaxInt32 {
				return math.MaxInt, nil
			}
			return n * 8, nil
		}
		return n, nil
	}
	return 0, fmt.Errorf("%q: want flat, flat:N or hgx:N (cluster files are not read; give cluster_spec)", spec)
}

// replayAll runs every policy's replay through sim.Sweep (at most
// GOMAXPROCS at once) and forwards their progress to send. It returns the
// results in request order, compared with the reference policy on the same
// jobs, or the first error; either way only after every replay ended.
func (s *Server) replayAll(ctx context.Context, w *whatIf, send func(*pb.WhatIfResponse) error) ([]*pb.PolicyResult, pb.Policy, error) {
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	progress := make(chan *pb.WhatIfProgress, 64)
	recs := make([]*recorder, len(w.runs))
	wi := sim.WhatIf{
		Jobs: w.tr.Jobs,
		NewCluster: func() (*model.Cluster, error) {
			c, err := w.newCluster()
			if err != nil {
				return nil, fmt.Errorf("%w: %w", errWhatIfCluster, err)
			}
			return c, nil
		},
	}
	for i, run := range w.runs {
		rec := newRecorder(run, int64(len(w.tr.Jobs)), func(p *pb.WhatIfProgress, last bool) {
			if last {
				select {
				case progress <- p:
				case <-rctx.Done():
				}
				return
			}
			select { // a slow reader misses intermediate progress, never stalls the replay
			case progress <- p:
			default:
			}
		})
		recs[i] = rec
		wi.Policies = append(wi.Policies, sim.Policy{
			Name:       run.policy.String(),
			NewPlanner: func() (sim.Planner, error) { return rec, nil },
			Options:    run.opts,
		})
	}
	var (
		results []*sim.Result
		runErr  error
	)
	go func() {
		var swept [][]*sim.Result
		swept, runErr = sim.Sweep(rctx, []sim.WhatIf{wi}, sim.SweepOptions{Done: func(_, p int, _ *sim.Result) { recs[p].emit(true) }})
		if runErr == nil {
			results = swept[0]
		}
		close(progress)
	}()
	var sendErr error
	for p := range progress {
		if sendErr != nil {
			continue // drain: the replays are stopping
		}
		if err := send(&pb.WhatIfResponse{Result: &pb.WhatIfResponse_Progress{Progress: p}}); err != nil {
			sendErr = err
			cancel(err)
		}
	}
	// Every replay has ended: progress is closed only after RunAll returned.
	if err := ctx.Err(); err != nil {
		code := connect.CodeCanceled
		if errors.Is(err, context.DeadlineExceeded) {
			code = connect.CodeDeadlineExceeded
		}
		return nil, 0, connect.NewError(code, fmt.Errorf("what-if stopped: %w", err))
	}
	if sendErr != nil {
		return nil, 0, sendErr
	}
	if runErr != nil {
		return nil, 0, s.replayError(ctx, w, recs, runErr)
	}
	return whatIfResults(w, &wi, recs, results)
}

// replayError maps a failed replay to the contract's errors. A panic in
// the planner or the simulator is Internal, logged with its stack, and
// does not take the process down.
func (s *Server) replayError(ctx context.Context, w *whatIf, recs []*recorder, err error) error {
	var re *sim.ReplayError
	if !errors.As(err, &re) {
		return connect.NewError(connect.CodeInternal, fmt.Errorf("what-if: %w", err))
	}
	run, rec := w.runs[re.Index], recs[re.Index]
	switch {
	case re.Panic != nil:
		s.met.panics.WithLabelValues(huitianv1connect.PlannerServiceWhatIfProcedure).Inc()
		s.log.Error("panic in what-if replay", "policy", run.policy.String(), "request_id", requestID(ctx),
			"panic", fmt.Sprint(re.Panic), "stack", string(re.Stack))
		return connect.NewError(connect.CodeInternal, fmt.Errorf("internal error replaying %s (request id %s)", run.policy, requestID(ctx)))
	case rec.planErr != nil:
		return connect.NewError(connect.CodeInternal, fmt.Errorf("the %s planner failed: %w", run.policy, re.Err))
	case errors.Is(re.Err, sim.ErrBadDecision):
		s.log.Error("what-if: the planner made a decision the simulator cannot execute", "policy", run.policy.String(),
			"request_id", requestID(ctx), "error", re.Err.Error())
		return connect.NewError(connect.CodeInternal, fmt.Errorf("the %s planner made a decision the simulator cannot execute (request id %s): %w", run.policy, requestID(ctx), re.Err))
	case errors.Is(re.Err, sim.ErrClusterSpec):
		return connect.NewError(connect.CodeInternal, fmt.Errorf("cluster for %s: %w", run.policy, re.Err))
	}
	return invalidArgument("invalid what-if", []model.Problem{{Field: w.field, Message: fmt.Sprintf("the trace cannot be replayed under %s: %v", run.policy, re.Err)}})
}

// whatIfResults maps the runs' results to the contract, each compared per
// size class with the reference policy's run on the same jobs when the
// reference was replayed, and returns the reference (0 when it was not).
func whatIfResults(w *whatIf, wi *sim.WhatIf, recs []*recorder, results []*sim.Result) ([]*pb.PolicyResult, pb.Policy, error) {
	ref := slices.IndexFunc(w.runs, func(r whatIfRun) bool { return r.policy == w.reference })
	cmp, err := wi.Compare(results, ref)
	if err != nil {
		return nil, 0, connect.NewError(connect.CodeInternal, fmt.Errorf("what-if: %w", err))
	}
	out := make([]*pb.PolicyResult, len(results))
	for i, r := range results {
		out[i] = whatif.Result(w.runs[i].policy, r.Summary, cmp.Same[i], recs[i].counts())
	}
	if ref < 0 {
		return out, 0, nil
	}
	return out, w.reference, nil
}

// recorder wraps a policy's planner for sim.Run: it passes every call
// through unchanged and watches the replay go by (the simulated clock,
// finished jobs, preemptions by action, planning time) to report progress.
// It is always a sim.Learner, so that it sees job events; it forwards
// them only to a planner that is a Learner itself, so the replay is the
// one sim.Run makes with the bare planner.
type recorder struct {
	run     whatIfRun
	learner sim.Learner // run.pl as a Learner, or nil
	total   int64
	send    func(p *pb.WhatIfProgress, last bool)

	now                   time.Time // the simulated clock
	done                  int64     // jobs finished
	suspensions, requeues int64
	cycles                int64
	planTime              time.Duration
	planErr               error

	sent     bool
	lastDone int64
	lastSent time.Time // wall clock
	step     int64
}

func newRecorder(run whatIfRun, total int64, send func(*pb.WhatIfProgress, bool)) *recorder {
	r := &recorder{run: run, total: total, send: send, step: max(1, total/whatIfProgressSteps)}
	r.learner, _ = run.pl.(sim.Learner)
	return r
}

func (r *recorder) tick(t time.Time) {
	if t.After(r.now) {
		r.now = t
	}
}

// Plan plans with the wrapped planner, timing it, and sends progress: at
// the first cycle, every step of finished jobs and at least every second.
// Once ctx is done it plans no more: sim.Run then stops at this cycle
// rather than at its own next check.
func (r *recorder) Plan(ctx context.Context, snap *model.Snapshot) (*model.Decision, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.tick(snap.Now)
	t := time.Now()
	d, err := r.run.pl.Plan(ctx, snap)
	r.planTime += time.Since(t)
	r.cycles++
	if err != nil {
		r.planErr = err
	}
	if !r.sent || r.done-r.lastDone >= r.step || time.Since(r.lastSent) >= whatIfProgressEvery {
		r.emit(false)
	}
	return d, err
}

// Observe counts finished and preempted jobs and passes the event on.
func (r *recorder) Observe(e model.Event) {
	r.tick(e.Time)
	switch e.Kind {
	case model.EventFinished:
		r.done++
	case model.EventPreempted:
		switch e.Action {
		case model.PreemptSuspend:
			r.suspensions++
		case model.PreemptRequeue:
			r.requeues++
		}
	}
	if r.learner != nil {
		r.learner.Observe(e)
	}
}

// Decided passes the decision on.
func (r *recorder) Decided(s *model.Snapshot, d *model.Decision) {
	if r.learner != nil {
		r.learner.Decided(s, d)
	}
}

// counts are the run's preemptions by action and its mean planning time.
func (r *recorder) counts() whatif.Counts {
	c := whatif.Counts{Suspensions: r.suspensions, Requeues: r.requeues}
	if r.cycles > 0 {
		c.MeanCycleTime = r.planTime / time.Duration(r.cycles)
	}
	return c
}

func (r *recorder) emit(last bool) {
	p := whatif.Progress(r.run.policy, r.done, r.total, r.now)
	r.sent, r.lastDone, r.lastSent = true, r.done, time.Now()
	r.send(p, last)
}
