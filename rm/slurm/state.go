package slurm

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// state is what the driver remembers of a job, kept in its AdminComment
// after the words for its users: "huitian: … {hx k=B c=n1:0,1 …}". Only
// Slurm's administrators (the driver among them) can set AdminComment.
type state struct {
	Kind      string      // k: R (regular) or B (backfill); set from the start on
	Planned   []Alloc     // c: the GPUs the plan named
	Got       []Alloc     // g: the GPUs Slurm gave, read back once it runs
	StartedAt int64       // t: when the driver released it (unix seconds)
	Protected int64       // p: protected until (unix), 0: none
	Submit    int64       // s: the first submit time (a requeue resets Slurm's)
	Restarts  int         // r: Slurm's restart count when it was released
	Notice    int64       // n: a SUSPEND notice runs out then (unix)
	Yield     *yield      // y: a preemption carried out, until acknowledged
	Estimate  int64       // e: the estimated start last told (unix)
	Waiting   string      // w: the waiting reason last told (a short code)
	Extra     [][2]string // keys this version does not know, kept
}

// yield is a preemption the driver carried out.
type yield struct {
	Action string // S (suspend) or Q (requeue)
	Time   int64
	Start  int64
	Kind   string
}

const stateOpen, stateClose = "{hx", "}"

// splitAdmin returns the words and the state of an AdminComment.
func splitAdmin(s string) (words string, st state, err error) {
	i := strings.LastIndex(s, stateOpen)
	if i < 0 {
		return strings.TrimSpace(s), state{}, nil
	}
	rest := s[i+len(stateOpen):]
	j := strings.LastIndex(rest, stateClose)
	if j < 0 {
		return strings.TrimSpace(s), state{}, fmt.Errorf("%w: admin comment state: no closing }", ErrParse)
	}
	st, err = parseState(rest[:j])
	return strings.TrimSpace(s[:i]), st, err
}

// parseState reads "k=B c=n1:0,1;n2:3 t=… …".
func parseState(s string) (state, error) {
	var st state
	var errs []error
	num := func(k, v string) int64 {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("%w: state %s=%q: want a number ≥ 0", ErrParse, k, v))
		}
		return n
	}
	for w := range strings.FieldsSeq(s) {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("%w: state word %q: want key=value", ErrParse, w))
			continue
		}
		switch k {
		case "k":
			if v != "R" && v != "B" {
				errs = append(errs, fmt.Errorf("%w: state k=%q: want R or B", ErrParse, v))
			}
			st.Kind = v
		case "c", "g":
			a, err := decodeAllocs(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("state %s: %w", k, err))
			}
			if k == "c" {
				st.Planned = a
			} else {
				st.Got = a
			}
		case "t":
			st.StartedAt = num(k, v)
		case "p":
			st.Protected = num(k, v)
		case "s":
			st.Submit = num(k, v)
		case "r":
			st.Restarts = int(min(num(k, v), 1<<30))
		case "n":
			st.Notice = num(k, v)
		case "e":
			st.Estimate = num(k, v)
		case "w":
			st.Waiting = v
		case "y":
			p := strings.Split(v, ",")
			if len(p) != 4 || (p[0] != "S" && p[0] != "Q") || (p[3] != "R" && p[3] != "B") {
				errs = append(errs, fmt.Errorf("%w: state y=%q: want action,time,start,kind", ErrParse, v))
				continue
			}
			st.Yield = &yield{Action: p[0], Time: num(k, p[1]), Start: num(k, p[2]), Kind: p[3]}
		default:
			st.Extra = append(st.Extra, [2]string{k, v})
		}
	}
	return st, errors.Join(errs...)
}

func (st *state) encode() string {
	var b strings.Builder
	b.WriteString(stateOpen)
	add := func(k, v string) {
		if v != "" && v != "0" {
			b.WriteString(" " + k + "=" + v)
		}
	}
	n := func(x int64) string { return strconv.FormatInt(x, 10) }
	add("k", st.Kind)
	add("c", encodeAllocs(st.Planned))
	add("g", encodeAllocs(st.Got))
	add("t", n(st.StartedAt))
	add("p", n(st.Protected))
	add("s", n(st.Submit))
	add("r", strconv.Itoa(st.Restarts))
	add("n", n(st.Notice))
	add("e", n(st.Estimate))
	add("w", st.Waiting)
	if y := st.Yield; y != nil {
		add("y", fmt.Sprintf("%s,%d,%d,%s", y.Action, y.Time, y.Start, y.Kind))
	}
	for _, kv := range st.Extra {
		add(kv[0], kv[1])
	}
	b.WriteString(" " + stateClose)
	return b.String()
}

// adminComment is the AdminComment for words and st. Slurm keeps a
// comment to one line: newlines and braces in the words are replaced.
func adminComment(words string, st state) string {
	words = strings.Map(func(r rune) rune {
		switch r {
		case '\n', '\r', '\t':
			return ' '
		case '{', '}':
			return '-'
		}
		return r
	}, words)
	if enc := st.encode(); enc != stateOpen+" "+stateClose {
		return strings.TrimSpace(words) + " " + enc
	}
	return strings.TrimSpace(words)
}

// encodeAllocs writes "n1:0,1;n2:3" (nodes and indices sorted).
func encodeAllocs(as []Alloc) string {
	as = slices.Clone(as)
	slices.SortFunc(as, func(a, b Alloc) int { return strings.Compare(a.Node, b.Node) })
	var parts []string
	for _, a := range as {
		idx := slices.Clone(a.GPUs)
		slices.Sort(idx)
		s := make([]string, len(idx))
		for i, x := range idx {
			s[i] = strconv.Itoa(x)
		}
		parts = append(parts, a.Node+":"+strings.Join(s, ","))
	}
	return strings.Join(parts, ";")
}

// decodeAllocs reads what encodeAllocs wrote.
func decodeAllocs(s string) ([]Alloc, error) {
	var out []Alloc
	for part := range strings.SplitSeq(s, ";") {
		node, list, ok := strings.Cut(part, ":")
		if !ok || node == "" {
			return nil, fmt.Errorf("%w: GPUs %q: want node:i,j;node2:k", ErrParse, s)
		}
		a := Alloc{Node: node}
		if list != "" {
			for x := range strings.SplitSeq(list, ",") {
				i, err := strconv.Atoi(x)
				if err != nil || i < 0 || i > maxIndex {
					return nil, fmt.Errorf("%w: GPUs %q: bad index %q", ErrParse, s, x)
				}
				a.GPUs = append(a.GPUs, i)
			}
		}
		out = append(out, a)
	}
	return out, nil
}

func allocsOf(cards []*pb.CardRef) []Alloc {
	by := map[string][]int{}
	var nodes []string
	for _, c := range cards {
		if _, ok := by[c.GetNode()]; !ok {
			nodes = append(nodes, c.GetNode())
		}
		by[c.GetNode()] = append(by[c.GetNode()], int(c.GetIndex()))
	}
	slices.Sort(nodes)
	out := make([]Alloc, 0, len(nodes))
	for _, n := range nodes {
		idx := by[n]
		slices.Sort(idx)
		out = append(out, Alloc{Node: n, GPUs: idx})
	}
	return out
}

func cardsOf(as []Alloc) []*pb.CardRef {
	var out []*pb.CardRef
	for _, a := range as {
		for _, i := range a.GPUs {
			out = append(out, &pb.CardRef{Node: a.Node, Index: int32(i)})
		}
	}
	return out
}

// Options are huitian's options of a job, from its comment: "huitian:
// class=training checkpointable=true checkpoint-cost=2m backfill=low-risk
// max-preemption-probability=0.1 topology=same-node comm=high priority=5
// user=alice model=H100". Words before "huitian:" are the user's own.
const commentPrefix = "huitian:"

// jobSpec turns a job in the managed partition into huitian's JobSpec,
// naming the field of every problem.
func jobSpec(j *Job, st *state) (*pb.JobSpec, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	submit := j.SubmitTime
	if st.Submit > 0 {
		submit = st.Submit
	}
	s := &pb.JobSpec{
		Id: strconv.FormatInt(j.ID, 10), User: j.User, JobClass: "batch",
		SubmitTime: timestamppb.New(time.Unix(submit, 0)), Topology: pb.Topology_TOPOLOGY_ANY,
		Backfill: pb.BackfillPreference_BACKFILL_PREFERENCE_ALLOW, RequeueCount: int32(min(j.Restarts, 1<<20)),
	}
	// The limit: --time, whole minutes.
	if j.TimeLimit == nil || *j.TimeLimit <= 0 || *j.TimeLimit >= 1<<31-1 {
		bad("--time: required, it is the job's limit (a job without one cannot be planned)")
	} else {
		s.TimeLimit = durationpb.New(time.Duration(*j.TimeLimit) * time.Minute)
	}
	// The GPUs: --nodes and --gres=gpu:K per node.
	if strings.Contains(j.TresPerJob, "gpu") {
		bad("--gpus: give GPUs per node with --gres=gpu:K and --nodes, not --gpus (%s)", j.TresPerJob)
	}
	gs, err := ParseGres(j.TresPerNode)
	if err != nil {
		bad("--gres: %v", err)
	}
	per := 0
	for _, g := range gs {
		if g.Name == "gpu" {
			per += g.Count
		}
	}
	nodes := max(j.NodeCount, 1)
	switch {
	case err != nil:
	case per <= 0:
		bad("--gres: want gpu:K with K ≥ 1 (got %q)", j.TresPerNode)
	case per*nodes > 1<<20:
		bad("--gres: %d GPUs on %d nodes is too many", per, nodes)
	}
	s.Cards = int32(per * nodes)
	if nodes == 1 {
		s.Topology = pb.Topology_TOPOLOGY_SAME_NODE
	} else {
		s.CardsPerNode = int32(per)
	}
	// huitian's options.
	_, opts, _ := strings.Cut(j.Comment, commentPrefix)
	for w := range strings.FieldsSeq(strings.ReplaceAll(opts, ",", " ")) {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			bad("--comment: huitian option %q: want key=value", w)
			continue
		}
		switch k {
		case "class":
			s.JobClass = v
		case "user":
			s.User = v
		case "model":
			s.CardModel = v
		case "checkpointable":
			b, err := strconv.ParseBool(v)
			if err != nil {
				bad("--comment: huitian option checkpointable: want true or false, got %q", v)
			}
			s.Checkpointable = b
		case "checkpoint-cost":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 || d > 24*time.Hour {
				bad("--comment: huitian option checkpoint-cost: want a duration such as 2m, got %q", v)
			}
			s.CheckpointCost = durationpb.New(d)
		case "backfill":
			p, ok := map[string]pb.BackfillPreference{"allow": pb.BackfillPreference_BACKFILL_PREFERENCE_ALLOW,
				"opt-out": pb.BackfillPreference_BACKFILL_PREFERENCE_OPT_OUT, "low-risk": pb.BackfillPreference_BACKFILL_PREFERENCE_LOW_RISK_ONLY}[v]
			if !ok {
				bad("--comment: huitian option backfill: want allow, opt-out or low-risk, got %q", v)
			}
			s.Backfill = p
		case "max-preemption-probability":
			p, err := strconv.ParseFloat(v, 64)
			if err != nil || !(p >= 0 && p <= 1) {
				bad("--comment: huitian option max-preemption-probability: want a number in [0, 1], got %q", v)
				p = 0
			}
			s.MaxPreemptionProbability = p
		case "topology":
			t, ok := map[string]pb.Topology{"any": pb.Topology_TOPOLOGY_ANY, "same-node": pb.Topology_TOPOLOGY_SAME_NODE,
				"same-nvlink-island": pb.Topology_TOPOLOGY_SAME_NVLINK_ISLAND, "same-switch": pb.Topology_TOPOLOGY_SAME_SWITCH}[v]
			if !ok {
				bad("--comment: huitian option topology: want any, same-node, same-nvlink-island or same-switch, got %q", v)
			}
			if nodes > 1 && (t == pb.Topology_TOPOLOGY_SAME_NODE || t == pb.Topology_TOPOLOGY_SAME_NVLINK_ISLAND) {
				bad("--comment: huitian option topology: %s cannot hold a job on %d nodes", v, nodes)
			}
			if nodes == 1 && (t == pb.Topology_TOPOLOGY_SAME_NVLINK_ISLAND) {
				s.Topology = t
			} else if nodes > 1 {
				s.Topology = t
			}
		case "comm":
			c, ok := map[string]pb.Comm{"none": pb.Comm_COMM_NONE, "low": pb.Comm_COMM_LOW, "high": pb.Comm_COMM_HIGH}[v]
			if !ok {
				bad("--comment: huitian option comm: want none, low or high, got %q", v)
			}
			s.Comm = c
		case "priority":
			p, err := strconv.ParseInt(v, 10, 32)
			if err != nil {
				bad("--comment: huitian option priority: want an integer, got %q", v)
			}
			s.Priority = int32(p)
		default:
			bad("--comment: unknown huitian option %q (want class, user, model, checkpointable, checkpoint-cost, backfill, max-preemption-probability, topology, comm or priority)", k)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: job %d: %w", ErrInvalidJob, j.ID, err)
	}
	return s, nil
}

// ErrInvalidJob is wrapped by every reason a job cannot be planned.
var ErrInvalidJob = errors.New("slurm: job cannot be planned")
