package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/huitian/huitian/client"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/proto/huitian/v1/huitianv1connect"
)

// userFlags are what huitian jobs and huitian job need to reach the
// service. The environment gives their defaults, so that a user sets them
// once.
type userFlags struct {
	server, cluster, tokenFile, tz string
	json                           bool
}

func (f *userFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.server, "server", envOr("HUITIAN_SERVER", "http://127.0.0.1:7070"), "the service's address (env HUITIAN_SERVER)")
	fs.StringVar(&f.cluster, "cluster", os.Getenv("HUITIAN_CLUSTER"), "the cluster id (env HUITIAN_CLUSTER)")
	fs.StringVar(&f.tokenFile, "token-file", os.Getenv("HUITIAN_TOKEN_FILE"), "file whose first token is sent as the bearer token (env HUITIAN_TOKEN_FILE)")
	fs.StringVar(&f.tz, "tz", "Local", "time zone of the times shown (an IANA name such as Europe/Berlin, or UTC)")
	fs.BoolVar(&f.json, "json", false, "print the service's answer as JSON")
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// dial checks the flags and returns a client and the time zone.
func (f *userFlags) dial() (huitianv1connect.PlannerServiceClient, *time.Location, error) {
	if f.cluster == "" {
		return nil, nil, exitWith(2, errors.New("--cluster: which cluster? (or set HUITIAN_CLUSTER)"))
	}
	loc, err := time.LoadLocation(f.tz)
	if err != nil {
		return nil, nil, exitWith(2, fmt.Errorf("--tz: %w", err))
	}
	var opts []client.Option
	if f.tokenFile != "" {
		tok, err := firstToken(f.tokenFile)
		if err != nil {
			return nil, nil, exitWith(2, fmt.Errorf("--token-file: %w", err))
		}
		opts = append(opts, client.WithToken(tok))
	}
	return client.New(f.server, opts...), loc, nil
}

// firstToken reads the first token of a token file as the service reads
// the file (lines: token [cluster ids]; blank lines and '#' comments
// skipped).
func firstToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
			return f[0], nil
		}
	}
	return "", fmt.Errorf("%s: no token in it", path)
}

// stateWords are the words --state takes: the states, and the groups users
// mean by running and queued.
var stateWords = map[string][]pb.JobState{
	"running":   {pb.JobState_JOB_STATE_STARTING, pb.JobState_JOB_STATE_RUNNING},
	"queued":    {pb.JobState_JOB_STATE_PENDING, pb.JobState_JOB_STATE_RESERVED, pb.JobState_JOB_STATE_SUSPENDED, pb.JobState_JOB_STATE_REQUEUED},
	"pending":   {pb.JobState_JOB_STATE_PENDING},
	"reserved":  {pb.JobState_JOB_STATE_RESERVED},
	"starting":  {pb.JobState_JOB_STATE_STARTING},
	"suspended": {pb.JobState_JOB_STATE_SUSPENDED},
	"requeued":  {pb.JobState_JOB_STATE_REQUEUED},
	"finished":  {pb.JobState_JOB_STATE_FINISHED},
}

// parseStates turns --state words into the states ListJobs filters by, in
// enum order without repeats.
func parseStates(words []string) ([]pb.JobState, error) {
	var out []pb.JobState
	for _, w := range words {
		for w := range strings.SplitSeq(w, ",") {
			sts, ok := stateWords[strings.ToLower(strings.TrimSpace(w))]
			if !ok {
				names := make([]string, 0, len(stateWords))
				for n := range stateWords {
					names = append(names, n)
				}
				slices.Sort(names)
				return nil, fmt.Errorf("--state: unknown state %q (want %s)", w, strings.Join(names, ", "))
			}
			out = append(out, sts...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func newJobsCmd() *cobra.Command {
	var (
		f               userFlags
		user, class, kd string
		states          []string
	)
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List a cluster's jobs: state, regular or backfill, cards, retention, preemption risk, why they wait",
		Long: `Jobs lists the jobs of the cluster's last plan, updated by the events
reported since, as squeue --start does: what runs (regular or backfill, on
which cards, since when, protected until when, how long it is expected to
keep its cards and how likely it is to be preempted) and what waits (its
reservation and the confidence in it, or why it waits, and when it is
estimated to start). huitian job ID says all of it for one job.

Times are the plan's: durations count from the plan's time, shown in the
header. --state takes running (starting or running), queued (pending,
reserved, suspended or requeued), pending, reserved, starting, suspended,
requeued or finished, comma-separated or repeated.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sts, err := parseStates(states)
			if err != nil {
				return exitWith(2, err)
			}
			req := &pb.ListJobsRequest{ClusterId: f.cluster, States: sts, User: user, JobClass: class}
			switch strings.ToLower(kd) {
			case "":
			case "regular":
				req.Kind = pb.AllocationKind_ALLOCATION_KIND_REGULAR
			case "backfill":
				req.Kind = pb.AllocationKind_ALLOCATION_KIND_BACKFILL
			default:
				return exitWith(2, fmt.Errorf("--kind: want regular or backfill, got %q", kd))
			}
			c, loc, err := f.dial()
			if err != nil {
				return err
			}
			all, err := client.AllJobs(cmd.Context(), c, req)
			if err != nil {
				return fmt.Errorf("cluster %q: %w", f.cluster, err)
			}
			if f.json {
				return writeJSON(cmd.OutOrStdout(), all)
			}
			return writeJobs(cmd.OutOrStdout(), f.cluster, all, loc)
		},
	}
	f.register(cmd)
	fs := cmd.Flags()
	fs.StringVar(&user, "user", "", "only this user's jobs")
	fs.StringVar(&class, "class", "", "only jobs of this class (training, evaluation, …)")
	fs.StringVar(&kd, "kind", "", "only regular or only backfill jobs")
	fs.StringSliceVar(&states, "state", nil, "only jobs in these states: running, queued, pending, reserved, starting, suspended, requeued, finished")
	return cmd
}

func newJobCmd() *cobra.Command {
	var f userFlags
	cmd := &cobra.Command{
		Use:   "job ID",
		Short: "Say everything the service knows of one job, in words",
		Long: `Job says what the service knows of one job: a sentence with its terms
(regular or backfill, which cards since when, protected until when, how
long it is expected to keep its cards, its chance of preemption and the
reservation that would take its cards), then every field of its insight.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, loc, err := f.dial()
			if err != nil {
				return err
			}
			in, err := insight(cmd.Context(), c, f.cluster, args[0])
			if err != nil {
				return err
			}
			if f.json {
				return writeJSON(cmd.OutOrStdout(), in)
			}
			var claimer *pb.JobInsight
			if id := in.GetClaimedBy(); id != "" {
				// Best effort: the sentence names the job without it.
				claimer, _ = insight(cmd.Context(), c, f.cluster, id)
			}
			return writeJob(cmd.OutOrStdout(), in, claimer, loc)
		},
	}
	f.register(cmd)
	return cmd
}

func insight(ctx context.Context, c huitianv1connect.PlannerServiceClient, cluster, job string) (*pb.JobInsight, error) {
	resp, err := c.GetJobInsight(ctx, connect.NewRequest(&pb.GetJobInsightRequest{ClusterId: cluster, JobId: job}))
	if err != nil {
		return nil, fmt.Errorf("cluster %q, job %q: %w", cluster, job, err)
	}
	return resp.Msg.GetInsight(), nil
}

// writeJSON writes m as indented protojson. protojson varies its spacing
// on purpose; re-indenting makes the output stable.
func writeJSON(w io.Writer, m proto.Message) error {
	raw, err := protojson.Marshal(m)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return err
	}
	b.WriteByte('\n')
	_, err = w.Write(b.Bytes())
	return err
}

// writeJobs prints the jobs as a table, one row each.
func writeJobs(w io.Writer, cluster string, r *pb.ListJobsResponse, loc *time.Location) error {
	ref := r.GetPlanTime()
	switch {
	case ref == nil:
		fmt.Fprintf(w, "cluster %s: no plan yet\n", cluster)
	default:
		fmt.Fprintf(w, "cluster %s, plan of %s: %s\n", cluster, ref.AsTime().In(loc).Format("Mon 2 Jan 2006 15:04 MST"), plural(len(r.GetJobs()), "job"))
	}
	if len(r.GetJobs()) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOBID\tUSER\tCLASS\tSTATE\tKIND\tCARDS\tWHERE\tSTART\tPROTECTED\tRETENTION\tPREEMPT\tREASON")
	for _, in := range r.GetJobs() {
		at := func(t *timestamppb.Timestamp) string { return clock(t, in.GetPlanTime(), loc) }
		start := "-"
		switch {
		case in.GetState() == pb.JobState_JOB_STATE_STARTING:
			start = "now"
		case in.GetStartTime() != nil && in.GetState() == pb.JobState_JOB_STATE_RUNNING:
			start = at(in.GetStartTime())
		case in.GetEstimatedStart() != nil && waiting(in.GetState()):
			start = "~" + at(in.GetEstimatedStart())
		}
		protected, retention, preempt := "-", "-", "-"
		if in.GetProtectedUntil() != nil {
			protected = at(in.GetProtectedUntil())
		}
		if holds(in) && in.GetKind() == pb.AllocationKind_ALLOCATION_KIND_BACKFILL {
			retention = "until done"
			if d := in.GetExpectedRetention(); d != nil && !in.GetRetentionUnbounded() {
				retention = shortDuration(d.AsDuration())
			}
			preempt = percent(in.GetPreemptionProbability())
		}
		where := cardList(in.GetCards())
		if parts := strings.Fields(where); len(parts) > 2 {
			where = strings.Join(parts[:2], " ") + fmt.Sprintf(" +%d", len(parts)-2)
		}
		if where == "" {
			where = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", in.GetJobId(), orDash(in.GetUser()), orDash(in.GetJobClass()),
			stateName(in.GetState()), kindWord(in), cardsAsked(in), where, start, protected, retention, preempt, reasonCell(in))
	}
	return tw.Flush()
}

// writeJob prints one job: a sentence, then every field set.
func writeJob(w io.Writer, in, claimer *pb.JobInsight, loc *time.Location) error {
	ref := in.GetPlanTime()
	at := func(t *timestamppb.Timestamp) string { return clock(t, ref, loc) }
	fmt.Fprintf(w, "%s: %s\n\n", in.GetJobId(), sentence(in, claimer, at))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	line := func(k, v string) { fmt.Fprintf(tw, "  %s\t%s\n", k, v) }
	line("job", in.GetJobId())
	if in.GetUser() != "" {
		line("user", in.GetUser())
	}
	if in.GetJobClass() != "" {
		line("class", in.GetJobClass())
	}
	if n := in.GetRequestedCards(); n > 0 {
		line("asks for", plural(int(n), "card"))
	}
	line("state", stateName(in.GetState()))
	if k := kindWord(in); k != "-" {
		line("terms", k)
	}
	if len(in.GetCards()) > 0 {
		what := "cards"
		if in.GetState() == pb.JobState_JOB_STATE_RESERVED {
			what = "reserved cards"
		}
		line(what, cardWords(in.GetCards()))
	}
	if t := in.GetStartTime(); t != nil {
		line("started", at(t))
	}
	if t := in.GetProtectedUntil(); t != nil {
		line("protected until", at(t))
	}
	switch {
	case in.GetRetentionUnbounded():
		line("retention", "keeps its cards until it ends: no reservation claims them")
	case in.GetExpectedRetention() != nil:
		v := durationWords(in.GetExpectedRetention().AsDuration())
		if id := in.GetClaimedBy(); id != "" {
			v += " (until the reservation of " + id + ")"
		}
		line("retention", v)
	}
	if in.GetKind() == pb.AllocationKind_ALLOCATION_KIND_BACKFILL && holds(in) || in.GetPreemptionProbability() > 0 {
		line("preemption", percent(in.GetPreemptionProbability())+" chance before it ends")
	}
	if fr := in.GetFragment(); fr != pb.FragmentClass_FRAGMENT_CLASS_UNSPECIFIED {
		line("idle class", fragmentWords(fr))
	}
	if r := in.GetPendingReason(); r != pb.PendingReason_PENDING_REASON_UNSPECIFIED {
		line("waits", pendingWords(r))
	}
	if t := in.GetEstimatedStart(); t != nil && waiting(in.GetState()) {
		line("estimated start", at(t))
	}
	if c := in.GetReservationConfidence(); in.GetState() == pb.JobState_JOB_STATE_RESERVED {
		line("confidence", percent(c)+" that its cards are free by then")
	}
	if p := in.GetProgress(); p > 0 {
		line("progress", percent(p))
	}
	if e := in.GetEstimate(); e != nil {
		v := fmt.Sprintf("the %s percentile of %s like it (%s)", quantileWords(e.GetQuantile()), plural(int(e.GetHistorySize()), "finished job"), orDash(e.GetSource()))
		switch {
		case e.GetUnreliable():
			v = fmt.Sprintf("its time limit: estimates erred too often for jobs like it (%s)", plural(int(e.GetHistorySize()), "finished job"))
		case e.GetSource() == "limit":
			v = "its time limit: no history of jobs like it yet"
		}
		line("runtime estimate", v)
	}
	if x := in.GetExit(); x != pb.ExitState_EXIT_STATE_UNSPECIFIED {
		line("exit", enumWord(x.String(), "EXIT_STATE_"))
	}
	if m := in.GetMessage(); m != "" {
		line("why", m)
	}
	if t := in.GetPlanTime(); t != nil {
		line("plan", t.AsTime().In(loc).Format("Mon 2 Jan 2006 15:04:05 MST"))
	}
	if t := in.GetEventTime(); t != nil {
		line("last event", at(t))
	}
	return tw.Flush()
}

// sentence is a job's terms in one line, as a user asks them: on what
// terms, where, since when, for how long, at what risk.
func sentence(in, claimer *pb.JobInsight, at func(*timestamppb.Timestamp) string) string {
	var parts []string
	add := func(format string, a ...any) { parts = append(parts, fmt.Sprintf(format, a...)) }
	switch in.GetState() {
	case pb.JobState_JOB_STATE_RUNNING, pb.JobState_JOB_STATE_STARTING:
		head := kindWord(in) + " on " + cardWords(in.GetCards())
		if in.GetState() == pb.JobState_JOB_STATE_STARTING {
			head = "starting now as " + head
		} else if t := in.GetStartTime(); t != nil {
			head += " since " + at(t)
		}
		parts = append(parts, head)
		if t := in.GetProtectedUntil(); t != nil {
			add("protected until %s", at(t))
		}
		if in.GetKind() != pb.AllocationKind_ALLOCATION_KIND_BACKFILL {
			add("not preempted for reservations")
			break
		}
		switch {
		case in.GetRetentionUnbounded():
			add("keeps its cards until it ends")
		case in.GetExpectedRetention() != nil:
			add("expected to keep its cards %s", durationWords(in.GetExpectedRetention().AsDuration()))
		}
		risk := percent(in.GetPreemptionProbability()) + " chance of preemption"
		if id := in.GetClaimedBy(); id != "" {
			switch {
			case claimer != nil && claimer.GetRequestedCards() > 0 && claimer.GetEstimatedStart() != nil:
				risk += fmt.Sprintf(" (a %d-card job, %s, is reserved from %s)", claimer.GetRequestedCards(), id, at(claimer.GetEstimatedStart()))
			default:
				risk += fmt.Sprintf(" (%s holds a reservation on its cards)", id)
			}
		}
		parts = append(parts, risk)
	case pb.JobState_JOB_STATE_RESERVED:
		v := "reserved " + cardWords(in.GetCards())
		if t := in.GetEstimatedStart(); t != nil {
			v += " from " + at(t)
		}
		parts = append(parts, v)
		add("%s confidence that they are free by then", percent(in.GetReservationConfidence()))
	case pb.JobState_JOB_STATE_PENDING:
		v := "waiting"
		if r := in.GetPendingReason(); r != pb.PendingReason_PENDING_REASON_UNSPECIFIED {
			v += ": " + pendingWords(r)
		}
		parts = append(parts, v)
		if t := in.GetEstimatedStart(); t != nil {
			add("estimated to start at %s", at(t))
		} else {
			add("no start estimated")
		}
	case pb.JobState_JOB_STATE_SUSPENDED:
		add("suspended (checkpointed) at %s; waits to resume", at(in.GetEventTime()))
	case pb.JobState_JOB_STATE_REQUEUED:
		add("preempted and requeued at %s; it starts over", at(in.GetEventTime()))
	case pb.JobState_JOB_STATE_FINISHED:
		add("finished (%s) at %s", enumWord(in.GetExit().String(), "EXIT_STATE_"), at(in.GetEventTime()))
	default:
		add("state unknown")
	}
	return strings.Join(parts, "; ")
}

// holds says whether the job holds, or is starting on, its cards.
func holds(in *pb.JobInsight) bool {
	return in.GetState() == pb.JobState_JOB_STATE_RUNNING || in.GetState() == pb.JobState_JOB_STATE_STARTING
}

// waiting says whether the job waits in the queue.
func waiting(s pb.JobState) bool {
	return s == pb.JobState_JOB_STATE_PENDING || s == pb.JobState_JOB_STATE_RESERVED
}

func stateName(s pb.JobState) string { return enumWord(s.String(), "JOB_STATE_") }

// kindWord is regular or backfill for a job with cards, "-" otherwise.
func kindWord(in *pb.JobInsight) string {
	switch in.GetKind() {
	case pb.AllocationKind_ALLOCATION_KIND_BACKFILL:
		return "backfill"
	case pb.AllocationKind_ALLOCATION_KIND_REGULAR:
		return "regular"
	}
	return "-"
}

func cardsAsked(in *pb.JobInsight) int {
	if n := in.GetRequestedCards(); n > 0 {
		return int(n)
	}
	return len(in.GetCards())
}

// reasonCell is the table's last column: why a job waits, what its
// reservation is worth, or whose reservation a backfill job yields to.
func reasonCell(in *pb.JobInsight) string {
	switch in.GetState() {
	case pb.JobState_JOB_STATE_RESERVED:
		return "reserved, " + percent(in.GetReservationConfidence()) + " sure"
	case pb.JobState_JOB_STATE_PENDING:
		return enumWord(in.GetPendingReason().String(), "PENDING_REASON_")
	case pb.JobState_JOB_STATE_FINISHED:
		return enumWord(in.GetExit().String(), "EXIT_STATE_")
	}
	if id := in.GetClaimedBy(); id != "" && holds(in) {
		return "yields to " + id
	}
	return "-"
}

// enumWord turns PENDING_REASON_NEVER_FITS into never-fits.
func enumWord(name, prefix string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(name, prefix)), "_", "-")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// clock writes t as 15:04 when it falls on the day of ref (in loc), with
// the date otherwise.
func clock(t, ref *timestamppb.Timestamp, loc *time.Location) string {
	if t == nil {
		return "an unknown time"
	}
	v := t.AsTime().In(loc)
	if ref != nil {
		r := ref.AsTime().In(loc)
		if v.Year() == r.Year() && v.YearDay() == r.YearDay() {
			return v.Format("15:04")
		}
	}
	return v.Format("Mon 2 Jan 15:04")
}

// durationWords writes 2 h 10 min, 45 min, 3 d 4 h, 30 s: minutes under a
// day, hours from a day on, each rounded to the unit shown last.
func durationWords(d time.Duration) string {
	if d < time.Minute-time.Second/2 {
		return fmt.Sprintf("%d s", d.Round(time.Second)/time.Second)
	}
	if m := d.Round(time.Minute); m < 24*time.Hour {
		h, min := m/time.Hour, m%time.Hour/time.Minute
		switch {
		case h == 0:
			return fmt.Sprintf("%d min", min)
		case min == 0:
			return fmt.Sprintf("%d h", h)
		}
		return fmt.Sprintf("%d h %d min", h, min)
	}
	h := d.Round(time.Hour)
	days, hours := h/(24*time.Hour), h%(24*time.Hour)/time.Hour
	if hours == 0 {
		return fmt.Sprintf("%d d", days)
	}
	return fmt.Sprintf("%d d %d h", days, hours)
}

// shortDuration is durationWords without spaces, for the table: 2h10min.
func shortDuration(d time.Duration) string {
	return strings.ReplaceAll(durationWords(d), " ", "")
}

// percent writes a probability: 4%, 0.5%, 100%.
func percent(p float64) string {
	v := p * 100
	if v >= 10 || v == math.Trunc(v) {
		return fmt.Sprintf("%.0f%%", v)
	}
	s := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.1f", v), "0"), ".")
	if s == "0" {
		return "<0.1%"
	}
	return s + "%"
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// quantileWords writes a quantile as a percentile: 0.9 as 90th.
func quantileWords(q float64) string {
	v := int(math.Round(q * 100))
	suffix := "th"
	switch {
	case v%100 >= 11 && v%100 <= 13:
	case v%10 == 1:
		suffix = "st"
	case v%10 == 2:
		suffix = "nd"
	case v%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", v, suffix)
}

// cardWords writes cards as a user reads them: gpu-b cards 2–3 + gpu-c card 0.
func cardWords(cs []*pb.CardRef) string {
	var parts []string
	for i := 0; i < len(cs); {
		node := cs[i].GetNode()
		var runs []string
		n := 0
		for i < len(cs) && cs[i].GetNode() == node {
			j := i
			for j+1 < len(cs) && cs[j+1].GetNode() == node && cs[j+1].GetIndex() == cs[j].GetIndex()+1 {
				j++
			}
			if j == i {
				runs = append(runs, fmt.Sprint(cs[i].GetIndex()))
			} else {
				runs = append(runs, fmt.Sprintf("%d–%d", cs[i].GetIndex(), cs[j].GetIndex()))
			}
			n += j - i + 1
			i = j + 1
		}
		word := "cards"
		if n == 1 {
			word = "card"
		}
		parts = append(parts, node+" "+word+" "+strings.Join(runs, ", "))
	}
	if len(parts) == 0 {
		return "no cards"
	}
	return strings.Join(parts, " + ")
}

var pendingText = map[pb.PendingReason]string{
	pb.PendingReason_PENDING_REASON_RESOURCES:   "not enough free cards now",
	pb.PendingReason_PENDING_REASON_RESERVED:    "it holds a reservation",
	pb.PendingReason_PENDING_REASON_PRIORITY:    "starting it would delay an earlier job's reservation",
	pb.PendingReason_PENDING_REASON_TOPOLOGY:    "enough cards are free, but not in the topology it needs",
	pb.PendingReason_PENDING_REASON_NEVER_FITS:  "it can never fit this cluster as asked",
	pb.PendingReason_PENDING_REASON_OPT_OUT:     "it opted out of backfill and only backfill capacity is free",
	pb.PendingReason_PENDING_REASON_RISK:        "its preemption risk would be above its limit",
	pb.PendingReason_PENDING_REASON_RUNTIME_CAP: "it runs longer than backfill allows",
	pb.PendingReason_PENDING_REASON_POLICY:      "the policy does not backfill",
}

func pendingWords(r pb.PendingReason) string {
	if s, ok := pendingText[r]; ok {
		return s
	}
	return enumWord(r.String(), "PENDING_REASON_")
}

var fragmentText = map[pb.FragmentClass]string{
	pb.FragmentClass_FRAGMENT_CLASS_FREE:       "free: plain free cards, no reservation in the way",
	pb.FragmentClass_FRAGMENT_CLASS_INTRA_NODE: "intra-node: free cards on a node another job partly uses",
	pb.FragmentClass_FRAGMENT_CLASS_CROSS_NODE: "cross-node: single free cards spread over nodes",
	pb.FragmentClass_FRAGMENT_CLASS_TEMPORAL:   "temporal: cards free until a reservation claims them",
}

func fragmentWords(f pb.FragmentClass) string {
	if s, ok := fragmentText[f]; ok {
		return s
	}
	return enumWord(f.String(), "FRAGMENT_CLASS_")
}
