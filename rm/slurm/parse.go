package slurm

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrParse is wrapped by every error about Slurm's output.
var ErrParse = errors.New("slurm: cannot parse")

// Field is one Key=Value of `scontrol show … -o` output.
type Field struct{ Key, Value string }

// ParseShow splits one line of `scontrol show … -o` into its fields, in
// order. A value may hold spaces (OS=Linux 6.1 #1 SMP, Reason=maintenance
// [root@…]): a word that does not start a Key= belongs to the value before
// it. Keys may repeat (Nodes= and GRES= once per node of a job).
func ParseShow(line string) []Field {
	var out []Field
	for w := range strings.FieldsSeq(line) {
		if k, v, ok := strings.Cut(w, "="); ok && isKey(k) {
			out = append(out, Field{Key: k, Value: v})
			continue
		}
		if len(out) == 0 {
			continue
		}
		out[len(out)-1].Value += " " + w
	}
	return out
}

// isKey reports whether s looks like a key of scontrol's output
// (NodeName, CPU_IDs, AllocNode:Sid, CPUs/Task, ReqB:S:C:T).
func isKey(s string) bool {
	if s == "" || !(s[0] >= 'A' && s[0] <= 'Z' || s[0] >= 'a' && s[0] <= 'z') {
		return false
	}
	for _, r := range s {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == ':' || r == '/') {
			return false
		}
	}
	return true
}

func get(fs []Field, key string) (string, bool) {
	for _, f := range fs {
		if f.Key == key {
			return f.Value, true
		}
	}
	return "", false
}

// Gres is one entry of a GRES list: gpu:a100:4(S:0-1) or gpu:2(IDX:0-1).
type Gres struct {
	Name  string // gpu
	Type  string // a100; "" when untyped
	Count int
	Idx   []int // the indices in (IDX:…); nil when absent or N/A
}

// ParseGres reads a GRES list as scontrol prints it: "gpu:8",
// "gpu:a100:4(S:0),gpu:a100:4(S:1)", "gpu:c0:1(IDX:0),gpu:c1:0(IDX:)",
// "(null)" or "N/A" (none). A "gres:" prefix (TresPerNode) is dropped.
func ParseGres(s string) ([]Gres, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "(null)" || s == "N/A" {
		return nil, nil
	}
	var out []Gres
	for _, part := range splitOutside(s, '(', ')') {
		part = strings.TrimPrefix(part, "gres:")
		paren := ""
		if i := strings.IndexByte(part, '('); i >= 0 {
			if !strings.HasSuffix(part, ")") {
				return nil, fmt.Errorf("%w: gres %q: unclosed (", ErrParse, part)
			}
			part, paren = part[:i], part[i+1:len(part)-1]
		}
		bits := strings.Split(part, ":")
		g := Gres{Name: bits[0], Count: 1}
		switch len(bits) {
		case 1:
		case 2, 3:
			last := bits[len(bits)-1]
			n, err := strconv.Atoi(last)
			switch {
			case err == nil && n >= 0:
				g.Count = n
				if len(bits) == 3 {
					g.Type = bits[1]
				}
			case len(bits) == 2:
				g.Type = last // gpu:a100 means one
			default:
				return nil, fmt.Errorf("%w: gres %q: count %q is not a number ≥ 0", ErrParse, part, last)
			}
		default:
			return nil, fmt.Errorf("%w: gres %q: want name[:type][:count]", ErrParse, part)
		}
		if g.Name == "" {
			return nil, fmt.Errorf("%w: gres %q: no name", ErrParse, part)
		}
		// (IDX:0,4-5) lists indices with commas of its own: IDX comes last.
		if i := strings.Index(paren, "IDX:"); i >= 0 {
			idx, err := ParseIdx(paren[i+len("IDX:"):])
			if err != nil {
				return nil, fmt.Errorf("gres %q: %w", part, err)
			}
			g.Idx = idx
		}
		out = append(out, g)
	}
	return out, nil
}

// splitOutside splits s on the commas outside opening…closing pairs:
// splitOutside("gpu:2(S:0,1),gpu:1", '(', ')') is ["gpu:2(S:0,1)", "gpu:1"].
func splitOutside(s string, opening, closing byte) []string {
	var out []string
	depth, from := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case opening:
			depth++
		case closing:
			depth = max(depth-1, 0)
		case ',':
			if depth == 0 {
				out = append(out, s[from:i])
				from = i + 1
			}
		}
	}
	return append(out, s[from:])
}

// maxIndex bounds GPU indices and host ranges: no node has more.
const maxIndex = 1 << 16

// ParseIdx reads an index list: "0-2,4", "" or "N/A" (none).
func ParseIdx(s string) ([]int, error) {
	if s == "" || s == "N/A" {
		return nil, nil
	}
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a > maxIndex {
			return nil, fmt.Errorf("%w: index list %q: %q is not an index", ErrParse, s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b > maxIndex {
				return nil, fmt.Errorf("%w: index list %q: bad range %q", ErrParse, s, part)
			}
		}
		if len(out)+b-a+1 > maxIndex {
			return nil, fmt.Errorf("%w: index list %q: too many indices", ErrParse, s)
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}

// ExpandHostlist expands a Slurm host list: "n[1-3,5],gpu07,a[01-02]b"
// keeps zero padding. "" and "(null)" are empty.
func ExpandHostlist(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "(null)" || s == "None assigned" {
		return nil, nil
	}
	var out []string
	for _, part := range splitOutside(s, '[', ']') {
		if part == "" {
			return nil, fmt.Errorf("%w: host list %q: empty name", ErrParse, s)
		}
		names := []string{""}
		rest := part
		for rest != "" {
			i := strings.IndexByte(rest, '[')
			if i < 0 {
				if strings.ContainsRune(rest, ']') {
					return nil, fmt.Errorf("%w: host list %q: stray ]", ErrParse, s)
				}
				names = appendAll(names, []string{rest})
				break
			}
			j := strings.IndexByte(rest[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("%w: host list %q: unclosed [", ErrParse, s)
			}
			names = appendAll(names, []string{rest[:i]})
			var alts []string
			for r := range strings.SplitSeq(rest[i+1:i+j], ",") {
				lo, hi, isRange := strings.Cut(r, "-")
				a, err := strconv.Atoi(lo)
				if err != nil || a < 0 {
					return nil, fmt.Errorf("%w: host list %q: bad number %q", ErrParse, s, lo)
				}
				b := a
				if isRange {
					if b, err = strconv.Atoi(hi); err != nil || b < a {
						return nil, fmt.Errorf("%w: host list %q: bad range %q", ErrParse, s, r)
					}
				}
				if b-a > maxIndex || len(alts)+b-a > maxIndex {
					return nil, fmt.Errorf("%w: host list %q: range too large", ErrParse, s)
				}
				for k := a; k <= b; k++ {
					alts = append(alts, fmt.Sprintf("%0*d", len(lo), k))
				}
			}
			if len(names)*len(alts) > maxIndex {
				return nil, fmt.Errorf("%w: host list %q: too many hosts", ErrParse, s)
			}
			names = appendAll(names, alts)
			rest = rest[i+j+1:]
		}
		out = append(out, names...)
		if len(out) > maxIndex {
			return nil, fmt.Errorf("%w: host list %q: too many hosts", ErrParse, s)
		}
	}
	return out, nil
}

func appendAll(prefixes, suffixes []string) []string {
	out := make([]string, 0, len(prefixes)*len(suffixes))
	for _, p := range prefixes {
		for _, s := range suffixes {
			out = append(out, p+s)
		}
	}
	return out
}

// Node is a node as `scontrol show node -o` describes it.
type Node struct {
	Name       string
	State      string // IDLE, MIXED+DRAIN, DOWN*, …
	Partitions []string
	GPUs       []Gres // the gpu entries of Gres=, in order
	Reason     string
}

// GPUCount is how many GPUs the node has.
func (n *Node) GPUCount() int {
	c := 0
	for _, g := range n.GPUs {
		c += g.Count
	}
	return c
}

// Unavailable reports whether Slurm gives the node no new work: down,
// drained or draining, failing, not responding, powered down, in
// maintenance or rebooting.
func (n *Node) Unavailable() bool {
	s := strings.ToUpper(n.State)
	if strings.HasSuffix(s, "*") || strings.HasSuffix(s, "~") || strings.HasSuffix(s, "#") || strings.HasSuffix(s, "!") {
		return true
	}
	for part := range strings.SplitSeq(s, "+") {
		switch part {
		case "DOWN", "DRAIN", "DRAINING", "DRAINED", "FAIL", "FAILING", "FUTURE", "NOT_RESPONDING", "MAINT", "REBOOT_ISSUED",
			"REBOOT_REQUESTED", "POWERED_DOWN", "POWERING_DOWN", "POWERING_UP", "POWER_DOWN", "UNKNOWN", "INVALID_REG":
			return true
		}
	}
	return false
}

// ParseNodes reads `scontrol show node -o` (one node a line).
func ParseNodes(out []byte) ([]Node, error) {
	var nodes []Node
	var errs []error
	for i, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "No nodes") {
			continue
		}
		fs := ParseShow(line)
		n := Node{}
		name, ok := get(fs, "NodeName")
		if !ok || name == "" {
			errs = append(errs, fmt.Errorf("%w: node line %d: no NodeName", ErrParse, i+1))
			continue
		}
		n.Name = name
		n.State, _ = get(fs, "State")
		n.Reason, _ = get(fs, "Reason")
		if p, ok := get(fs, "Partitions"); ok && p != "(null)" {
			n.Partitions = strings.Split(p, ",")
		}
		g, _ := get(fs, "Gres")
		all, err := ParseGres(g)
		if err != nil {
			errs = append(errs, fmt.Errorf("node %s: Gres: %w", name, err))
			continue
		}
		for _, e := range all {
			if e.Name == "gpu" {
				n.GPUs = append(n.GPUs, e)
			}
		}
		if n.GPUCount() > maxIndex {
			errs = append(errs, fmt.Errorf("%w: node %s: %d GPUs", ErrParse, name, n.GPUCount()))
			continue
		}
		nodes = append(nodes, n)
	}
	return nodes, errors.Join(errs...)
}

// Alloc is the GPUs a job holds on one node.
type Alloc struct {
	Node string
	GPUs []int
}

// ParseJobDetail reads the per-node GPU indices from one line of `scontrol
// show job -d -o` of the job named name: the Nodes=… GRES=gpu…(IDX:…) pairs
// of its detail block, which follows JOB_GRES= and ends at MinCPUsNode=.
// The line must start "JobId=… JobName=<name> ": the name (from squeue
// --json) is skipped whole, so that a name holding "Nodes=…" cannot forge a
// block; the fields the user controls after the block (Comment, WorkDir, …)
// are never read.
func ParseJobDetail(line, name string) (state string, allocs []Alloc, err error) {
	id, rest, ok := strings.Cut(line, " JobName=")
	if !ok || !strings.HasPrefix(id, "JobId=") {
		return "", nil, fmt.Errorf("%w: job detail: want JobId=… JobName=… first", ErrParse)
	}
	rest, ok = strings.CutPrefix(rest, name+" ")
	if !ok {
		return "", nil, fmt.Errorf("%w: job detail of %s: its JobName is not %q", ErrParse, id, name)
	}
	fs := ParseShow(rest)
	state, _ = get(fs, "JobState")
	in := false
	var cur *Alloc
	for _, f := range fs {
		switch {
		case f.Key == "JOB_GRES":
			in = true
		case !in:
		case f.Key == "MinCPUsNode":
			in = false
		case f.Key == "Nodes":
			hosts, err := ExpandHostlist(f.Value)
			if err != nil {
				return "", nil, err
			}
			if len(hosts) != 1 {
				// Several nodes with the same layout share a line: n[1-2].
				for _, h := range hosts {
					allocs = append(allocs, Alloc{Node: h})
				}
				cur = nil
				continue
			}
			allocs = append(allocs, Alloc{Node: hosts[0]})
			cur = &allocs[len(allocs)-1]
		case f.Key == "GRES":
			gs, err := ParseGres(f.Value)
			if err != nil {
				return "", nil, err
			}
			var idx []int
			for _, g := range gs {
				if g.Name == "gpu" {
					idx = append(idx, g.Idx...)
				}
			}
			slices.Sort(idx)
			if cur != nil {
				cur.GPUs = idx
				continue
			}
			// A shared line: every node of the last Nodes= got these.
			for i := len(allocs) - 1; i >= 0 && allocs[i].GPUs == nil; i-- {
				allocs[i].GPUs = slices.Clone(idx)
			}
		}
	}
	return state, allocs, nil
}

// Job is a job as `squeue --json` describes it (the fields the driver
// reads; openapi v0.0.38, Slurm 22.05).
type Job struct {
	ID           int64    `json:"job_id"`
	Name         string   `json:"name"`
	User         string   `json:"user_name"`
	Partition    string   `json:"partition"`
	State        string   `json:"job_state"`
	Reason       string   `json:"state_reason"`
	Priority     int64    `json:"priority"`
	Nodes        string   `json:"nodes"`
	NodeCount    int      `json:"node_count"`
	TimeLimit    *int64   `json:"time_limit"` // minutes; absent or huge: none
	SubmitTime   int64    `json:"submit_time"`
	StartTime    int64    `json:"start_time"`
	EndTime      int64    `json:"end_time"`
	Restarts     int      `json:"restart_cnt"`
	TresPerNode  string   `json:"tres_per_node"`
	TresPerJob   string   `json:"tres_per_job"`
	GresDetail   []string `json:"gres_detail"`
	Comment      string   `json:"comment"`
	AdminComment string   `json:"admin_comment"`
	BatchFlag    bool     `json:"batch_flag"`
}

// ParseQueue reads `squeue --json`.
func ParseQueue(out []byte) ([]Job, error) {
	var doc struct {
		Errors []json.RawMessage `json:"errors"`
		Jobs   *[]Job            `json:"jobs"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("%w: squeue --json: %w", ErrParse, err)
	}
	if len(doc.Errors) > 0 {
		return nil, fmt.Errorf("%w: squeue --json reports errors: %s", ErrParse, doc.Errors[0])
	}
	if doc.Jobs == nil {
		return nil, fmt.Errorf("%w: squeue --json: no \"jobs\"", ErrParse)
	}
	return *doc.Jobs, nil
}

// Allocs are the GPUs a running job holds, from gres_detail (one entry per
// node of Nodes, in host list order).
func (j *Job) Allocs() ([]Alloc, error) {
	hosts, err := ExpandHostlist(j.Nodes)
	if err != nil {
		return nil, fmt.Errorf("job %d nodes: %w", j.ID, err)
	}
	if len(j.GresDetail) != len(hosts) {
		return nil, fmt.Errorf("%w: job %d: %d gres_detail entries for %d nodes", ErrParse, j.ID, len(j.GresDetail), len(hosts))
	}
	out := make([]Alloc, 0, len(hosts))
	for i, h := range hosts {
		gs, err := ParseGres(j.GresDetail[i])
		if err != nil {
			return nil, fmt.Errorf("job %d gres_detail: %w", j.ID, err)
		}
		a := Alloc{Node: h}
		for _, g := range gs {
			if g.Name == "gpu" {
				a.GPUs = append(a.GPUs, g.Idx...)
			}
		}
		slices.Sort(a.GPUs)
		out = append(out, a)
	}
	return out, nil
}

// JobState is one job as the driver's watch lists it: its id (an array's
// pending tasks share one line, "12_[3-9]") and its state.
type JobState struct{ ID, State string }

// ParseJobStates reads `squeue --noheader --format="%i %T"`: one job a line,
// its id and its state (PENDING, RUNNING, COMPLETING, REQUEUE_HOLD, …),
// upper-cased, without "+" flags. Blank lines are skipped; any other line
// that is not an id (it starts with a digit: a header is refused) and a
// state is an error.
func ParseJobStates(out []byte) ([]JobState, error) {
	var jobs []JobState
	for i, line := range strings.Split(string(out), "\n") {
		fs := strings.Fields(line)
		if len(fs) == 0 {
			continue
		}
		if len(fs) != 2 || fs[0][0] < '0' || fs[0][0] > '9' {
			return nil, fmt.Errorf("%w: squeue line %d: want a job id and a state, got %q", ErrParse, i+1, line)
		}
		st := baseState(fs[1])
		if st == "" || strings.IndexFunc(st, func(r rune) bool { return !(r >= 'A' && r <= 'Z' || r == '_') }) >= 0 {
			return nil, fmt.Errorf("%w: squeue line %d: %q is not a job state", ErrParse, i+1, fs[1])
		}
		jobs = append(jobs, JobState{ID: fs[0], State: st})
	}
	return jobs, nil
}
