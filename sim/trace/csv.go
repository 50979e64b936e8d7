package trace

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Columns maps CSV header names (matched case-insensitively) to job fields, so that a
// new CSV trace needs no code. Empty names are absent columns. Submit and Cards are
// required, and Runtime or both Start and End.
type Columns struct {
	ID        string // job id; absent: "L<line>"
	User      string
	Class     string // lower-cased into Spec.Class
	Submit    string // time (see TimeLayout)
	Start     string // time; with End, the runtime where Runtime is absent or empty
	End       string // time
	Runtime   string // seconds
	Limit     string // the user's estimate: seconds, "[D-]HH:MM:SS", "MM:SS" or "4h30m"
	Cards     string // GPUs; a value in (0,1) is a shared GPU (Options.Fractional)
	Nodes     string // node count; infers cards per node
	CardModel string // into Spec.CardModel

	// DefaultClass is the class of a job whose Class column is absent or empty.
	DefaultClass string
	// TimeLayout parses non-numeric times (time.Parse layout). Numeric times are
	// seconds (unix or relative). "" tries "2006-01-02 15:04:05" with an optional
	// zone ("+08:00"), and RFC 3339; times without a zone are UTC.
	TimeLayout string
}

// Preset returns the column mapping of a known CSV trace: "philly" (ElasticFlow's
// Philly vc files), "helios" (HeliosData cluster_log.csv), "acme" (AcmeTrace
// trace_seren.csv / trace_kalos.csv).
func Preset(name string) (Columns, bool) {
	switch name {
	case "philly":
		// job_id,submit_time,...,num_gpu,real_duration,duration,...; all DNN training.
		return Columns{ID: "job_id", Submit: "submit_time", Cards: "num_gpu", Runtime: "duration", DefaultClass: "training"}, true
	case "helios":
		// job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue
		return Columns{ID: "job_id", User: "user", Cards: "gpu_num", Nodes: "node_num",
			Submit: "submit_time", Start: "start_time", End: "end_time", Runtime: "duration"}, true
	case "acme":
		// job_id,user,node_num,gpu_num,cpu_num,[mem…,]type,state,submit_time,start_time,end_time,…,duration,queue,gpu_time
		return Columns{ID: "job_id", User: "user", Class: "type", Cards: "gpu_num", Nodes: "node_num",
			Submit: "submit_time", Start: "start_time", End: "end_time", Runtime: "duration"}, true
	}
	return Columns{}, false
}

// ReadPhilly reads a Philly job CSV as prepared by ElasticFlow (job_id, submit_time,
// num_gpu, duration in seconds). Philly has no users and no user estimates: Limit is
// set by opts.Estimate (by default Runtime × 1.5 rounded up to a round request, see
// DefaultLimitFactor) and a note says so. Every job is class "training"; a 2–8 GPU job
// must share a node (Philly's 8-GPU servers).
func ReadPhilly(r io.Reader, opts Options) (*Trace, error) { return readPreset(r, "philly", opts) }

// ReadHelios reads a Helios cluster_log.csv (SenseTime, SC'21). CPU-only jobs (gpu_num
// 0) are dropped as DropNoCards. There is no user estimate: see ReadPhilly.
func ReadHelios(r io.Reader, opts Options) (*Trace, error) { return readPreset(r, "helios", opts) }

// ReadAcme reads an AcmeTrace job CSV (Shanghai AI Lab, NSDI'24); the type column
// (pretrain, sft, eval, …) becomes the class. As ReadHelios otherwise.
func ReadAcme(r io.Reader, opts Options) (*Trace, error) { return readPreset(r, "acme", opts) }

func readPreset(r io.Reader, name string, opts Options) (*Trace, error) {
	if opts.Columns == nil {
		c, _ := Preset(name)
		opts.Columns = &c
	}
	t, err := readCSVTrace(r, opts)
	if err != nil {
		return nil, fmt.Errorf("trace: %s: %w", name, err)
	}
	return t, nil
}

// ReadCSV reads a job CSV whose header opts.Columns maps. Times are shifted so that the
// earliest kept submit is 0 (a note gives the epoch). Rows without cards, submit time
// or a positive runtime are dropped by reason; a missing limit is set by opts.Estimate.
func ReadCSV(r io.Reader, opts Options) (*Trace, error) {
	if opts.Columns == nil {
		return nil, errors.New("trace: csv: options: Columns is required")
	}
	t, err := readCSVTrace(r, opts)
	if err != nil {
		return nil, fmt.Errorf("trace: csv: %w", err)
	}
	return t, nil
}

// csvTable is a CSV input with its header read.
type csvTable struct {
	cr     *csv.Reader
	index  map[string]int // lower-case header name → column
	header []string
}

func openCSV(r io.Reader) (*csvTable, error) {
	in, err := decompress(r)
	if err != nil {
		return nil, err
	}
	cr := csv.NewReader(in)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err == io.EOF {
		return nil, parseErr(1, "header", "", errors.New("empty input"))
	}
	if err != nil {
		return nil, csvErr(err)
	}
	t := &csvTable{cr: cr, index: map[string]int{}, header: slices.Clone(head)}
	for i, h := range head {
		if i == 0 {
			h = strings.TrimPrefix(h, "\ufeff")
		}
		h = strings.ToLower(strings.TrimSpace(h))
		if _, dup := t.index[h]; !dup && h != "" {
			t.index[h] = i
		}
	}
	return t, nil
}

// col is the index of a named column; -1 for an empty name; an error for a name not
// in the header.
func (t *csvTable) col(name, role string) (int, error) {
	if name == "" {
		return -1, nil
	}
	i, ok := t.index[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return -1, parseErr(1, "header", name, fmt.Errorf("no such column (wanted for %s)", role))
	}
	return i, nil
}

// next returns the next record and its line; io.EOF at the end.
func (t *csvTable) next() ([]string, int, error) {
	rec, err := t.cr.Read()
	if err != nil {
		if err == io.EOF {
			return nil, 0, err
		}
		return nil, 0, csvErr(err)
	}
	line, _ := t.cr.FieldPos(0)
	return rec, line, nil
}

func csvErr(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return parseErr(pe.Line, fmt.Sprintf("csv syntax at byte %d", pe.Column), "", pe.Err)
	}
	return err
}

// get returns column i of rec, trimmed, and whether it holds a value ("", NaN, NA,
// null and None are missing).
func get(rec []string, i int) (string, bool) {
	if i < 0 || i >= len(rec) {
		return "", false
	}
	s := strings.TrimSpace(rec[i])
	switch strings.ToLower(s) {
	case "", "nan", "na", "n/a", "null", "none", "-":
		return "", false
	}
	return s, true
}

// csvCols are the resolved column indexes of a Columns.
type csvCols struct {
	id, user, class, submit, start, end, runtime, limit, cards, nodes, model int
}

func resolve(t *csvTable, c *Columns) (csvCols, error) {
	var (
		k    csvCols
		errs []error
	)
	for _, m := range []struct {
		dst        *int
		name, role string
	}{
		{&k.id, c.ID, "id"}, {&k.user, c.User, "user"}, {&k.class, c.Class, "class"},
		{&k.submit, c.Submit, "submit"}, {&k.start, c.Start, "start"}, {&k.end, c.End, "end"},
		{&k.runtime, c.Runtime, "runtime"}, {&k.limit, c.Limit, "limit"}, {&k.cards, c.Cards, "cards"},
		{&k.nodes, c.Nodes, "nodes"}, {&k.model, c.CardModel, "card model"},
	} {
		i, err := t.col(m.name, m.role)
		errs = append(errs, err)
		*m.dst = i
	}
	if c.Submit == "" {
		errs = append(errs, errors.New("columns: submit is required"))
	}
	if c.Cards == "" {
		errs = append(errs, errors.New("columns: cards is required"))
	}
	if c.Runtime == "" && (c.Start == "" || c.End == "") {
		errs = append(errs, errors.New("columns: runtime, or start and end, is required"))
	}
	return k, errors.Join(errs...)
}

func readCSVTrace(r io.Reader, opts Options) (*Trace, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	c := opts.Columns
	tab, err := openCSV(r)
	if err != nil {
		return nil, err
	}
	k, err := resolve(tab, c)
	if err != nil {
		return nil, err
	}
	tr := newTrace()
	perNode := opts.cardsPerNode()
	var noLimit, fractional, malformed int
	for {
		rec, line, err := tab.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		j, reason, err := csvJob(rec, line, &k, c, opts, perNode)
		if err != nil {
			if opts.SkipMalformed {
				malformed++
				tr.drop(DropMalformed)
				continue
			}
			return nil, err
		}
		switch reason {
		case "":
		case reasonFractionalCard:
			fractional++
		default:
			tr.drop(reason)
			continue
		}
		if j.Limit <= 0 {
			noLimit++
			j.Limit = LimitFor(j.Runtime, opts)
		}
		tr.keep(j)
	}
	if malformed > 0 {
		tr.notef("%d malformed rows dropped", malformed)
	}
	if fractional > 0 {
		tr.notef("%d jobs asked for a fraction of a GPU: each counted as one card", fractional)
	}
	if noLimit > 0 {
		tr.Notes = append(tr.Notes, estimateNote(noLimit, "user estimate", opts))
	}
	shiftToZero(tr)
	SortBySubmit(tr.Jobs)
	return tr, nil
}

// reasonFractionalCard marks a kept job whose shared GPU became one card.
const reasonFractionalCard = "\x00fractional-card"

// csvJob converts one row; reason is a drop reason, "" or reasonFractionalCard.
func csvJob(rec []string, line int, k *csvCols, c *Columns, opts Options, perNode int) (j Job, reason string, err error) {
	colErr := func(i int, err error) error {
		name := "?"
		if i >= 0 && i < len(rec) {
			name = rec[i]
		}
		return parseErr(line, "column "+columnName(c, k, i), name, err)
	}
	// 1. Cards.
	cs, ok := get(rec, k.cards)
	if !ok {
		return j, DropNoCards, nil
	}
	cf, err := strconv.ParseFloat(cs, 64)
	if err != nil || math.IsNaN(cf) || math.IsInf(cf, 0) || cf > maxCards {
		if err == nil {
			err = errRange
		}
		return j, "", colErr(k.cards, unwrapNum(err))
	}
	switch {
	case cf <= 0:
		return j, DropNoCards, nil
	case cf < 1 && opts.Fractional == FractionalSkip:
		return j, DropFractional, nil
	case cf < 1:
		reason = reasonFractionalCard
	}
	cards := int(math.Ceil(cf))

	// 2. Submit, runtime, limit.
	ss, ok := get(rec, k.submit)
	if !ok {
		return j, DropSubmit, nil
	}
	if j.Submit, err = parseTime(ss, c.TimeLayout); err != nil {
		return j, "", colErr(k.submit, err)
	}
	if rs, ok := get(rec, k.runtime); ok {
		if j.Runtime, err = parseNum(rs); err != nil {
			return j, "", colErr(k.runtime, err)
		}
	} else if k.start >= 0 && k.end >= 0 {
		st, ok := get(rec, k.start)
		if !ok {
			return j, DropNotStarted, nil
		}
		en, ok := get(rec, k.end)
		if !ok {
			return j, DropNotEnded, nil
		}
		s, err := parseTime(st, c.TimeLayout)
		if err != nil {
			return j, "", colErr(k.start, err)
		}
		e, err := parseTime(en, c.TimeLayout)
		if err != nil {
			return j, "", colErr(k.end, err)
		}
		if e < s {
			return j, DropBadTime, nil
		}
		j.Runtime = e - s
	} else {
		return j, DropRuntime, nil
	}
	if j.Runtime <= 0 {
		return j, DropRuntime, nil
	}
	if ls, ok := get(rec, k.limit); ok {
		if j.Limit, err = parseLimit(ls); err != nil {
			return j, "", colErr(k.limit, err)
		}
	}

	// 3. Placement and the rest of the spec.
	nodes := 0
	if ns, ok := get(rec, k.nodes); ok {
		n, err := parseNum(ns)
		if err == nil && (n < 0 || n > maxCards) {
			err = errRange
		}
		if err != nil {
			return j, "", colErr(k.nodes, err)
		}
		nodes = int(n)
	}
	j.Spec.Cards = cards
	j.Spec.CardsPerNode, j.Spec.Topology, j.Spec.Comm = shape(cards, nodes, perNode)
	if id, ok := get(rec, k.id); ok {
		j.ID = id
	} else {
		j.ID = "L" + strconv.Itoa(line)
	}
	j.Spec.User, _ = get(rec, k.user)
	if cl, ok := get(rec, k.class); ok {
		j.Spec.Class = strings.ToLower(cl)
	} else {
		j.Spec.Class = c.DefaultClass
	}
	if m, ok := get(rec, k.model); ok {
		j.Spec.CardModel = normalizeModels(m)
	}
	return j, reason, nil
}

// columnName is the header name configured for column index i.
func columnName(c *Columns, k *csvCols, i int) string {
	for _, p := range []struct {
		i    int
		name string
	}{{k.cards, c.Cards}, {k.submit, c.Submit}, {k.runtime, c.Runtime}, {k.start, c.Start},
		{k.end, c.End}, {k.limit, c.Limit}, {k.nodes, c.Nodes}} {
		if p.i == i {
			return p.name
		}
	}
	return strconv.Itoa(i + 1)
}

// timeLayouts are tried, in order, for a non-numeric time without a TimeLayout.
var timeLayouts = [...]string{
	"2006-01-02 15:04:05Z07:00", // Acme: 2023-03-01 00:18:22+08:00
	"2006-01-02 15:04:05",       // Helios: 2020-06-09 18:41:01 (UTC)
	time.RFC3339,
	"2006-01-02T15:04:05",
}

var errTime = errors.New("not seconds nor a date-time")

// parseTime reads seconds (integer or decimal) or a date-time into unix seconds.
func parseTime(s, layout string) (int64, error) {
	if v, err := parseNum(s); err == nil {
		return v, nil
	} else if errors.Is(err, errRange) || errors.Is(err, errNotFinit) {
		return 0, err
	}
	if layout != "" {
		tm, err := time.Parse(layout, s)
		if err != nil {
			return 0, errTime
		}
		return tm.Unix(), nil
	}
	for _, l := range timeLayouts {
		if tm, err := time.Parse(l, s); err == nil {
			return tm.Unix(), nil
		}
	}
	return 0, errTime
}

var errLimit = errors.New("not seconds, [D-]HH:MM:SS nor a Go duration")

// parseLimit reads a time limit: seconds, Slurm's "[D-]HH:MM:SS" or "MM:SS", or a Go
// duration ("4h30m"). "UNLIMITED" and the like are missing (0).
func parseLimit(s string) (int64, error) {
	if v, err := parseNum(s); err == nil {
		return v, nil
	}
	switch strings.ToLower(s) {
	case "unlimited", "infinite", "partition_limit":
		return 0, nil
	}
	if strings.ContainsAny(s, ":-") {
		return parseClock(s)
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, errLimit
	}
	return int64(math.Ceil(d.Seconds())), nil
}

// parseClock reads Slurm's time formats other than plain minutes: "MM:SS",
// "HH:MM:SS", "D-HH", "D-HH:MM" and "D-HH:MM:SS".
func parseClock(s string) (int64, error) {
	num := func(p string) (int64, bool) {
		v, err := strconv.ParseInt(p, 10, 64)
		return v, err == nil && v >= 0 && v <= 1e9
	}
	var days int64
	rest := s
	if d, r, ok := strings.Cut(s, "-"); ok {
		v, ok := num(d)
		if !ok {
			return 0, errLimit
		}
		days, rest = v, r
	}
	parts := strings.Split(rest, ":")
	if len(parts) > 3 || (days == 0 && !strings.Contains(s, "-") && len(parts) < 2) {
		return 0, errLimit
	}
	var v [3]int64
	for i, p := range parts {
		n, ok := num(p)
		if !ok {
			return 0, errLimit
		}
		v[i] = n
	}
	var secs int64
	switch {
	case strings.Contains(s, "-"): // D-HH[:MM[:SS]]
		secs = v[0]*3600 + v[1]*60 + v[2]
	case len(parts) == 2: // MM:SS
		secs = v[0]*60 + v[1]
	default: // HH:MM:SS
		secs = v[0]*3600 + v[1]*60 + v[2]
	}
	return days*86400 + secs, nil
}

// normalizeModels keeps a "|"-separated list of allowed card models in order, once each.
func normalizeModels(s string) string {
	if !strings.Contains(s, "|") {
		return s
	}
	var out []string
	for _, m := range strings.Split(s, "|") {
		m = strings.TrimSpace(m)
		if m == "" || slices.Contains(out, m) {
			continue
		}
		out = append(out, m)
	}
	return strings.Join(out, "|")
}

// shiftToZero moves submit times so that the earliest is 0.
func shiftToZero(t *Trace) {
	if len(t.Jobs) == 0 {
		return
	}
	first := t.Jobs[0].Submit
	for _, j := range t.Jobs {
		first = min(first, j.Submit)
	}
	if first == 0 {
		return
	}
	for i := range t.Jobs {
		t.Jobs[i].Submit -= first
	}
	if first > 86400*365*10 { // looks like unix time
		t.notef("submit times shifted by -%d s: epoch (submit 0) is %s", first, time.Unix(first, 0).UTC().Format(time.RFC3339))
	} else {
		t.notef("submit times shifted by %d s so that the first is 0", -first)
	}
}
