package trace

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/huitian/huitian/model"
)

// Job is one trace record, with times in integer seconds relative to the trace's own
// epoch.
type Job struct {
	// ID is the trace's own id (SWF field 1, a CSV's job_id, a pod's name).
	ID string
	// Submit is seconds from the epoch, ≥ 0; Trace.Jobs is sorted by it, ties in input
	// order.
	Submit int64
	// Runtime is the actual runtime in seconds, > 0.
	Runtime int64
	// Limit is the requested time (the user's estimate) in seconds. It is > 0 except
	// under Options.Estimate "none" for a trace without estimates, where it is 0.
	Limit int64
	// Spec is the job as submitted: user, class, cards, cards per node, topology,
	// communication, checkpointing, backfill preference, card model. Its ID equals ID;
	// Spec.Submit and Spec.TimeLimit are left zero (the simulator fills them).
	Spec model.Job
}

// Trace is a workload read from a file or generated.
type Trace struct {
	// Jobs is sorted by Submit; equal submits keep their input order.
	Jobs []Job
	// MaxCards is the machine size the trace states (SWF MaxProcs, else MaxNodes), or
	// the synthetic cluster size; 0 where the trace does not say.
	MaxCards int
	// MaxNodes is the node count the trace states (SWF MaxNodes); 0 where it does not
	// say.
	MaxNodes int
	// Records counts the job records read: len(Jobs) plus everything in Dropped.
	Records int
	// Dropped counts dropped records by reason (the Drop* constants). Never nil.
	Dropped map[string]int
	// Notes say, in sentences, what the reader assumed or changed (synthesised limits,
	// clipped runtimes, ignored fields, time shifts).
	Notes []string
}

// Drop reasons, the keys of Trace.Dropped.
const (
	DropMalformed  = "malformed"             // did not parse (only with Options.SkipMalformed)
	DropNoCards    = "no cards"              // no processors / GPUs requested or allocated
	DropFractional = "fractional gpu"        // a shared GPU under Fractional "skip"
	DropRuntime    = "runtime <= 0"          // actual runtime missing, zero or negative
	DropLimit      = "requested time <= 0"   // SWF strong filter: no user estimate
	DropTooLarge   = "cards > machine"       // more cards than the trace's machine has
	DropSubmit     = "submit missing or < 0" // no usable submit time
	DropNotStarted = "never started"         // no start time (pending at trace end)
	DropNotEnded   = "no end time"           // a start but neither an end nor a duration
	DropBadTime    = "end before start"      // end or deletion time before start
)

// Estimate rules, the values of Options.Estimate.
const (
	// EstimateBucket sets Limit to the smallest value in LimitBuckets that is at least
	// LimitFactor × runtime: a round request, as users make (the default).
	EstimateBucket = "bucket"
	// EstimateExact sets Limit to the runtime: perfect estimates (RLScheduler's choice
	// for SWF traces without requested time).
	EstimateExact = "exact"
	// EstimateNone leaves Limit 0 and lets the simulator decide.
	EstimateNone = "none"
)

// FilterStrong is the SWF filter of predictsim/pyss (Gaussier et al., SC'15).
const FilterStrong = "strong"

// Fractional GPU rules, the values of Options.Fractional.
const (
	// FractionalCard treats a shared GPU (milli-GPU < 1000) as one whole card (the
	// default).
	FractionalCard = "card"
	// FractionalSkip drops shared-GPU pods with reason DropFractional.
	FractionalSkip = "skip"
)

// DefaultLimitFactor is LimitFactor's default. With LimitBuckets it gives
// mean(runtime/limit) of 0.48 on KTH-SP2's runtimes (its real field-9 estimates give
// 0.479; HPC2N's 0.46), 0.53 on openb and 0.58 on Philly vc103959: users' typical
// twofold overestimate, never an underestimate.
const DefaultLimitFactor = 1.5

// DefaultCardsPerNode is the node size assumed where a trace gives none: 8 GPUs, as in
// Philly (Helios's QSSF simulator's --num_gpus_per_node) and most GPU servers.
const DefaultCardsPerNode = 8

// Options configure the readers. The zero value is usable.
type Options struct {
	// Filter selects the SWF record filter: "" keeps every usable record,
	// FilterStrong applies predictsim's strong filter.
	Filter string
	// Estimate is the rule for Limit where a record has no user estimate: "" or
	// EstimateBucket, EstimateExact, EstimateNone.
	Estimate string
	// LimitFactor is the factor of EstimateBucket; 0 means DefaultLimitFactor.
	LimitFactor float64
	// Fractional says what to do with a shared GPU (openb gpu_milli < 1000, a CSV
	// cards value in (0,1)): "" or FractionalCard, FractionalSkip.
	Fractional string
	// CardsPerNode is the node size assumed to infer placement where a trace has no
	// node count; 0 means DefaultCardsPerNode.
	CardsPerNode int
	// Columns maps CSV header names to job fields. Required for format "csv"; for
	// "philly", "helios" and "acme" it replaces the preset when non-nil.
	Columns *Columns
	// SkipMalformed drops records whose values do not parse (reason DropMalformed)
	// instead of failing. CSV quoting errors still fail.
	SkipMalformed bool
}

func (o Options) validate() error {
	var errs []error
	switch o.Filter {
	case "", FilterStrong:
	default:
		errs = append(errs, fmt.Errorf("trace: options: filter %q: want \"\" or %q", o.Filter, FilterStrong))
	}
	switch o.Estimate {
	case "", EstimateBucket, EstimateExact, EstimateNone:
	default:
		errs = append(errs, fmt.Errorf("trace: options: estimate %q: want %q, %q or %q", o.Estimate, EstimateBucket, EstimateExact, EstimateNone))
	}
	switch o.Fractional {
	case "", FractionalCard, FractionalSkip:
	default:
		errs = append(errs, fmt.Errorf("trace: options: fractional %q: want %q or %q", o.Fractional, FractionalCard, FractionalSkip))
	}
	if o.LimitFactor < 0 || math.IsNaN(o.LimitFactor) || math.IsInf(o.LimitFactor, 0) || o.LimitFactor > 1000 {
		errs = append(errs, fmt.Errorf("trace: options: limit factor %v: want 0 (default) or in (0, 1000]", o.LimitFactor))
	}
	if o.CardsPerNode < 0 {
		errs = append(errs, fmt.Errorf("trace: options: cards per node %d: want ≥ 0", o.CardsPerNode))
	}
	return errors.Join(errs...)
}

func (o Options) cardsPerNode() int {
	if o.CardsPerNode > 0 {
		return o.CardsPerNode
	}
	return DefaultCardsPerNode
}

// ErrUnknownFormat is returned by Open for a format name it does not know.
var ErrUnknownFormat = errors.New("trace: unknown format")

// ParseError is a value that does not parse, with where it is.
type ParseError struct {
	Line  int    // 1-based line in the (decompressed) input
	Field string // e.g. "field 4 (run time)" or "column submit_time"
	Value string // the offending text, cut to 64 bytes
	Err   error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("line %d: %s %q: %v", e.Line, e.Field, e.Value, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

func parseErr(line int, field, value string, err error) *ParseError {
	if len(value) > 64 {
		value = value[:64]
	}
	return &ParseError{Line: line, Field: field, Value: value, Err: err}
}

// Formats lists the format names Open accepts.
func Formats() []string {
	return []string{"swf", "philly", "openb", "helios", "acme", "csv", "synth"}
}

// Open reads the trace at path in the named format: swf, philly, openb, helios, acme,
// csv (needs opts.Columns) or synth (path is then a spec, see ParseSynthSpec, and opts
// are not used).
func Open(path, format string, opts Options) (*Trace, error) {
	if opts.Filter != "" && format != "swf" {
		// A filter another reader would ignore is a mistake to say, not
		// to pass over.
		return nil, fmt.Errorf("trace: options: filter %q: for SWF logs, not format %q", opts.Filter, format)
	}
	var read func(io.Reader, Options) (*Trace, error)
	switch format {
	case "swf":
		read = ReadSWF
	case "philly":
		read = ReadPhilly
	case "openb":
		read = ReadOpenB
	case "helios":
		read = ReadHelios
	case "acme":
		read = ReadAcme
	case "csv":
		read = ReadCSV
	case "synth":
		so, err := ParseSynthSpec(path)
		if err != nil {
			return nil, err
		}
		return Synth(so)
	default:
		return nil, fmt.Errorf("%w %q (want one of %s)", ErrUnknownFormat, format, strings.Join(Formats(), ", "))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	t, err := read(f, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// OpenNodes reads the node list at path (see ReadNodes).
func OpenNodes(path string) (*NodeList, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	nl, err := ReadNodes(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return nl, nil
}

// decompress returns r's content, gunzipped when it starts with the gzip magic bytes.
func decompress(r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, _ := br.Peek(2) // a shorter input is simply not gzip
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return zr, nil
	}
	return br, nil
}

func newTrace() *Trace { return &Trace{Dropped: map[string]int{}} }

func (t *Trace) drop(reason string) {
	t.Records++
	t.Dropped[reason]++
}

func (t *Trace) keep(j Job) {
	t.Records++
	j.Spec.ID = j.ID
	t.Jobs = append(t.Jobs, j)
}

func (t *Trace) notef(format string, args ...any) {
	t.Notes = append(t.Notes, fmt.Sprintf(format, args...))
}

// DropUsers clears every job's user, as in a log that records none: the
// estimators then have no user's own history to go on (a class, where the
// trace gives one, stays). It notes how many jobs had one.
func (t *Trace) DropUsers() {
	n := 0
	for i := range t.Jobs {
		if t.Jobs[i].Spec.User != "" {
			t.Jobs[i].Spec.User = ""
			n++
		}
	}
	t.notef("user ids dropped: %d of %d jobs had one", n, len(t.Jobs))
}

// SortBySubmit orders jobs by submit time, ties in their order before: the
// order Trace.Jobs is in.
func SortBySubmit(jobs []Job) {
	slices.SortStableFunc(jobs, func(a, b Job) int {
		switch {
		case a.Submit < b.Submit:
			return -1
		case a.Submit > b.Submit:
			return 1
		}
		return 0
	})
}

// OfferedLoad is the card-seconds the jobs ask for over what cards provide while they
// arrive: Σ cards × runtime / (cards × (last submit − first submit)). It is 0 for fewer
// than two distinct submit times or cards ≤ 0.
func (t *Trace) OfferedLoad(cards int) float64 {
	if len(t.Jobs) < 2 || cards <= 0 {
		return 0
	}
	span := t.Jobs[len(t.Jobs)-1].Submit - t.Jobs[0].Submit
	if span <= 0 {
		return 0
	}
	var work float64
	for _, j := range t.Jobs {
		work += float64(j.Spec.Cards) * float64(j.Runtime)
	}
	return work / (float64(cards) * float64(span))
}

// maxSeconds bounds every time and duration read, so that differences and sums of
// them cannot overflow (1e15 s is 31.7 million years).
const maxSeconds = 1e15

var (
	errRange    = errors.New("out of range")
	errNotFinit = errors.New("not a finite number")
)

// parseNum reads an integer or a decimal number (SWF logs hold both) and rounds it to
// the nearest integer.
func parseNum(s string) (int64, error) {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		if v > maxSeconds || v < -maxSeconds {
			return 0, errRange
		}
		return v, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) {
			return 0, ne.Err
		}
		return 0, err
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, errNotFinit
	}
	if f > maxSeconds || f < -maxSeconds {
		return 0, errRange
	}
	return int64(math.Round(f)), nil
}

// maxCards bounds a card count read from a trace.
const maxCards = 1 << 24

// DroppedSummary lists dropped-record counts by reason, in reason order
// ("reason n, reason n"), or "none".
func DroppedSummary(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+" "+strconv.Itoa(m[k]))
	}
	return strings.Join(parts, ", ")
}
