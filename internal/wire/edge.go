package wire

import (
	"fmt"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// The edge's rules on ids, times and durations (the contract states them in
// the proto's comments). protovalidate cannot say them all: a timestamp's
// range, a duration's sign consistency, an id's character set.
const (
	// MaxIDBytes caps an id (cluster, job, node, domain): ids are store
	// keys, cache keys and metric labels.
	MaxIDBytes = 256
	// MaxLabelBytes caps a free-text label (user, job class, card model,
	// UUID, PCI bus id, NVLink island).
	MaxLabelBytes = 256
	// MaxDuration caps every duration in a request: ten years is more than
	// any job's time limit, and keeps now+limit far inside what timestamps
	// and time.Duration hold.
	MaxDuration = 10 * 365 * 24 * time.Hour
)

// MinTime and MaxTime bound every timestamp in a request: [1970-01-01,
// 2200-01-01). Later times cannot be planned with (the planner measures in
// time.Duration from now), and a plan from a time near year 9999 could not
// be encoded.
var (
	MinTime = time.Unix(0, 0).UTC()
	MaxTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// ValidID says why id is not an acceptable id, or "": 1 to MaxIDBytes bytes
// of printable characters (letters, digits, marks, punctuation, symbols),
// no spaces and no control characters.
func ValidID(id string) string {
	switch {
	case id == "":
		return "must not be empty"
	case len(id) > MaxIDBytes:
		return fmt.Sprintf("is %d bytes long; ids are at most %d bytes", len(id), MaxIDBytes)
	}
	for i, r := range id {
		if r == utf8.RuneError || !unicode.IsPrint(r) || r == ' ' {
			return fmt.Sprintf("has %q at byte %d; ids are printable characters without spaces", r, i)
		}
	}
	return ""
}

// edge collects the edge rules' problems of one message. A field's path
// is a function, called only for a problem: a valid request of 65,536
// cards names no field, and building every path cost more than the rules.
type edge struct {
	probs []model.Problem
}

// at is a field path, built when a problem needs it.
type at func() string

// fixed is the path of a top-level field.
func fixed(field string) at { return func() string { return field } }

// field is the path of field f of p.
func (p at) field(f string) at { return func() string { return p() + "." + f } }

// index is the path of element i of p.
func (p at) index(i int) at { return func() string { return p() + "[" + strconv.Itoa(i) + "]" } }

func (e *edge) add(field at, msg string) {
	e.probs = append(e.probs, model.Problem{Field: field(), Message: msg})
}

func (e *edge) id(field at, id string) {
	if id == "" {
		return // protovalidate's min_len says so, where the contract requires one
	}
	if why := ValidID(id); why != "" {
		e.add(field, why)
	}
}

func (e *edge) label(field at, s string) {
	if len(s) > MaxLabelBytes {
		e.add(field, fmt.Sprintf("is %d bytes long; at most %d", len(s), MaxLabelBytes))
	}
}

func (e *edge) ts(field at, t *timestamppb.Timestamp) {
	if t == nil {
		return
	}
	if err := t.CheckValid(); err != nil {
		e.add(field, fmt.Sprintf("invalid timestamp (seconds %d, nanos %d): must be in [%s, %s) with nanos in [0, 1e9)",
			t.GetSeconds(), t.GetNanos(), MinTime.Format(time.RFC3339), MaxTime.Format(time.RFC3339)))
		return
	}
	if at := t.AsTime(); at.Before(MinTime) || !at.Before(MaxTime) {
		e.add(field, fmt.Sprintf("%s is out of range: timestamps must be in [%s, %s)",
			at.Format(time.RFC3339Nano), MinTime.Format(time.RFC3339), MaxTime.Format(time.RFC3339)))
	}
}

func (e *edge) dur(field at, d *durationpb.Duration) {
	if d == nil {
		return
	}
	if err := d.CheckValid(); err != nil {
		e.add(field, fmt.Sprintf("invalid duration (seconds %d, nanos %d): nanos must be in (-1e9, 1e9) with the sign of seconds",
			d.GetSeconds(), d.GetNanos()))
		return
	}
	if v := d.AsDuration(); v > MaxDuration || v < -MaxDuration {
		e.add(field, fmt.Sprintf("%s is out of range: durations are at most %s", v, MaxDuration))
	}
}

func (e *edge) job(p at, j *pb.JobSpec) {
	if j == nil {
		return
	}
	e.id(p.field("id"), j.GetId())
	e.label(p.field("user"), j.GetUser())
	e.label(p.field("job_class"), j.GetJobClass())
	e.label(p.field("card_model"), j.GetCardModel())
	e.dur(p.field("time_limit"), j.GetTimeLimit())
	e.dur(p.field("checkpoint_cost"), j.GetCheckpointCost())
	e.ts(p.field("submit_time"), j.GetSubmitTime())
}

func (e *edge) cluster(p at, c *pb.Cluster) {
	if c == nil {
		return
	}
	e.id(p.field("id"), c.GetId())
	for i, d := range c.GetDomains() {
		dp := p.field("domains").index(i)
		e.id(dp.field("id"), d.GetId())
		e.id(dp.field("parent"), d.GetParent())
	}
	for i, n := range c.GetNodes() {
		np := p.field("nodes").index(i)
		e.id(np.field("name"), n.GetName())
		for j, d := range n.GetDomains() {
			e.id(np.field("domains").index(j), d)
		}
		for j, cd := range n.GetCards() {
			cp := np.field("cards").index(j)
			e.label(cp.field("uuid"), cd.GetUuid())
			e.label(cp.field("model"), cd.GetModel())
			e.label(cp.field("pci_bus_id"), cd.GetPciBusId())
			e.label(cp.field("nvlink_island"), cd.GetNvlinkIsland())
		}
	}
}

func (e *edge) options(p at, o *pb.PlanOptions) {
	if o == nil {
		return
	}
	e.dur(p.field("time_budget"), o.GetTimeBudget())
	e.dur(p.field("overrun_grace"), o.GetOverrunGrace())
}

// Edge returns the problems the edge's rules find in a request: ids,
// labels, timestamps and durations (see ValidID, MinTime, MaxDuration).
// Messages it does not know have none.
func Edge(m proto.Message) []model.Problem {
	var e edge
	switch r := m.(type) {
	case *pb.PlanRequest:
		e.ts(fixed("now"), r.GetNow())
		e.cluster(fixed("cluster"), r.GetCluster())
		for i, rj := range r.GetRunning() {
			p := fixed("running").index(i)
			e.job(p.field("spec"), rj.GetSpec())
			e.ts(p.field("start_time"), rj.GetStartTime())
			e.ts(p.field("protected_until"), rj.GetProtectedUntil())
			for k, c := range rj.GetCards() {
				e.id(p.field("cards").index(k).field("node"), c.GetNode())
			}
		}
		for i, j := range r.GetQueued() {
			e.job(fixed("queued").index(i), j)
		}
		e.options(fixed("options"), r.GetOptions())
	case *pb.ReportEventsRequest:
		e.id(fixed("cluster_id"), r.GetClusterId())
		for i, ev := range r.GetEvents() {
			p := fixed("events").index(i)
			e.id(p.field("job_id"), ev.GetJobId())
			e.ts(p.field("time"), ev.GetTime())
			e.ts(p.field("start_time"), ev.GetStartTime())
			e.job(p.field("spec"), ev.GetSpec())
		}
	case *pb.GetJobInsightRequest:
		e.id(fixed("cluster_id"), r.GetClusterId())
		e.id(fixed("job_id"), r.GetJobId())
	case *pb.ListJobsRequest:
		e.id(fixed("cluster_id"), r.GetClusterId())
		e.label(fixed("user"), r.GetUser())
		e.label(fixed("job_class"), r.GetJobClass())
	case *pb.GetStatusRequest:
		e.id(fixed("cluster_id"), r.GetClusterId())
	case *pb.WhatIfRequest:
		e.cluster(fixed("cluster_spec"), r.GetClusterSpec())
		e.options(fixed("options"), r.GetOptions())
	}
	return e.probs
}

// CheckResponse reports the first timestamp or duration of a PlanResponse
// that cannot be encoded (outside what google.protobuf.Timestamp and
// Duration hold): a planner's arithmetic gone past the year 9999 would
// otherwise fail only when the answer is written, unlogged.
func CheckResponse(r *pb.PlanResponse) error {
	check := func(field string, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
		return nil
	}
	checkTS := func(field string, t *timestamppb.Timestamp) error {
		if t == nil {
			return nil
		}
		return check(field, t.CheckValid())
	}
	checkDur := func(field string, d *durationpb.Duration) error {
		if d == nil {
			return nil
		}
		return check(field, d.CheckValid())
	}
	if err := checkTS("replan_by", r.GetReplanBy()); err != nil {
		return err
	}
	for i, s := range r.GetStarts() {
		p := "starts[" + strconv.Itoa(i) + "]"
		if err := checkDur(p+".expected_retention", s.GetExpectedRetention()); err != nil {
			return err
		}
		if err := checkTS(p+".protected_until", s.GetProtectedUntil()); err != nil {
			return err
		}
	}
	for i, v := range r.GetReservations() {
		if err := checkTS("reservations["+strconv.Itoa(i)+"].start_time", v.GetStartTime()); err != nil {
			return err
		}
	}
	for i, v := range r.GetPreemptions() {
		if err := checkDur("preemptions["+strconv.Itoa(i)+"].notice", v.GetNotice()); err != nil {
			return err
		}
	}
	for i, v := range r.GetPending() {
		if err := checkTS("pending["+strconv.Itoa(i)+"].estimated_start", v.GetEstimatedStart()); err != nil {
			return err
		}
	}
	return checkDur("stats.solve_time", r.GetStats().GetSolveTime())
}
