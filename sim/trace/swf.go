package trace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/huitian/huitian/model"
)

// swfFields is the number of fields of an SWF job line.
const swfFields = 18

// maxLine bounds one line of a text trace.
const maxLine = 1 << 20

// swfRecord is the part of an SWF job line that the reader uses.
type swfRecord struct {
	id        string
	submit    int64 // field 2
	run       int64 // field 4
	alloc     int64 // field 5
	req       int64 // field 8
	reqTime   int64 // field 9
	user      string
	extraCols bool
}

// swfField names a 1-based SWF field in errors.
var swfFieldNames = map[int]string{
	2: "field 2 (submit time)", 4: "field 4 (run time)", 5: "field 5 (allocated processors)",
	8: "field 8 (requested processors)", 9: "field 9 (requested time)",
}

// ReadSWF reads a trace in the Standard Workload Format of the Parallel Workloads
// Archive: header lines "; Key: value" (MaxProcs and MaxNodes are used, MaxProcs first,
// for the machine size) and job lines of 18 whitespace-separated fields, -1 for
// unknown. Fields after the 18th (extended Alea logs) are ignored and a note says so.
//
// Each job: ID field 1, Submit field 2, Runtime field 4, Cards field 8 (requested
// processors; field 5, allocated, where 8 is missing), Limit field 9 (the user's
// requested time), User field 12 ("" for -1); topology any, no class.
//
// With opts.Filter FilterStrong the filter of predictsim's published results applies:
// fill requested processors from allocated and vice versa; drop runtime ≤ 0, requested
// time ≤ 0, processors > MaxProcs, submit < 0; clip the runtime to the requested time
// where it exceeds it. Without it, records that cannot run (no processors, runtime ≤ 0,
// submit < 0, more processors than the machine) are dropped, a missing requested time
// is set by opts.Estimate, and runtimes past the limit are kept (and counted in Notes).
func ReadSWF(r io.Reader, opts Options) (*Trace, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	t, err := readSWF(r, opts)
	if err != nil {
		return nil, fmt.Errorf("trace: swf: %w", err)
	}
	return t, nil
}

func readSWF(r io.Reader, opts Options) (*Trace, error) {
	in, err := decompress(r)
	if err != nil {
		return nil, err
	}
	t := newTrace()

	// 1. Read the header and the job lines; the machine size may come after jobs.
	var (
		recs                []swfRecord
		maxProcs, maxNodes  int64 = -1, -1
		malformed, extraCol int
	)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if line == 1 {
			text = strings.TrimPrefix(text, "\ufeff")
		}
		if text == "" {
			continue
		}
		if text[0] == ';' {
			key, val, ok := strings.Cut(text[1:], ":")
			if !ok {
				continue
			}
			key = strings.TrimSpace(key)
			var dst *int64
			switch {
			case strings.EqualFold(key, "MaxProcs"):
				dst = &maxProcs
			case strings.EqualFold(key, "MaxNodes"):
				dst = &maxNodes
			default:
				continue
			}
			val = strings.TrimSpace(val)
			v, err := strconv.ParseInt(val, 10, 64)
			if err == nil && (v < -1 || v > maxCards) {
				err = errRange
			}
			if err != nil {
				if opts.SkipMalformed {
					t.notef("line %d: header %s %q ignored: not a card count", line, key, val)
					continue
				}
				return nil, parseErr(line, "header "+key, val, unwrapNum(err))
			}
			*dst = v
			continue
		}
		rec, err := parseSWFLine(text, line)
		if err != nil {
			if opts.SkipMalformed {
				malformed++
				t.drop(DropMalformed)
				continue
			}
			return nil, err
		}
		if rec.extraCols {
			extraCol++
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, parseErr(line+1, "line", "", fmt.Errorf("longer than %d bytes", maxLine))
		}
		return nil, err
	}
	if malformed > 0 {
		t.notef("%d malformed lines dropped", malformed)
	}
	if extraCol > 0 {
		t.notef("%d job lines have fields after the 18th (extended SWF): ignored", extraCol)
	}

	// 2. The machine size: MaxProcs, else MaxNodes (as RLScheduler does), else unknown.
	machine := maxProcs
	if machine <= 0 {
		machine = maxNodes
		if machine > 0 {
			t.notef("no MaxProcs header: machine size = MaxNodes = %d", machine)
		} else {
			t.notef("no MaxProcs or MaxNodes header: machine size unknown, no job dropped for size")
		}
	}
	if machine > 0 {
		t.MaxCards = int(machine)
	}
	if maxNodes > 0 {
		t.MaxNodes = int(maxNodes)
	}

	// 3. Filter and convert.
	strong := opts.Filter == FilterStrong
	var clipped, over, noLimit int
	for _, rec := range recs {
		procs := rec.req
		if procs <= 0 {
			procs = rec.alloc
		}
		var reason string
		switch {
		case procs <= 0:
			reason = DropNoCards
		case rec.run <= 0:
			reason = DropRuntime
		case strong && rec.reqTime <= 0:
			reason = DropLimit
		case machine > 0 && procs > machine:
			reason = DropTooLarge
		case rec.submit < 0:
			reason = DropSubmit
		}
		if reason != "" {
			t.drop(reason)
			continue
		}
		j := Job{ID: rec.id, Submit: rec.submit, Runtime: rec.run, Limit: rec.reqTime}
		switch {
		case j.Limit <= 0:
			noLimit++
			j.Limit = LimitFor(j.Runtime, opts)
		case j.Runtime > j.Limit && strong:
			clipped++
			j.Runtime = j.Limit
		case j.Runtime > j.Limit:
			over++
		}
		j.Spec = model.Job{User: rec.user, Cards: int(procs), Topology: model.TopologyAny}
		if procs > 1 {
			// A job of several processors in a parallel workload log is one
			// parallel program (MPI and the like): its processes talk.
			j.Spec.Comm = model.CommHigh
		}
		t.keep(j)
	}
	if strong {
		t.notef("strong filter (predictsim): %d runtimes clipped to the requested time", clipped)
	}
	if over > 0 {
		t.notef("%d jobs run longer than their requested time: kept as they are", over)
	}
	if noLimit > 0 {
		t.Notes = append(t.Notes, estimateNote(noLimit, "requested time (field 9)", opts))
	}
	SortBySubmit(t.Jobs)
	return t, nil
}

func parseSWFLine(text string, line int) (swfRecord, error) {
	f := strings.Fields(text)
	if len(f) < swfFields {
		return swfRecord{}, parseErr(line, "fields", text, fmt.Errorf("%d fields, want %d", len(f), swfFields))
	}
	rec := swfRecord{id: f[0], extraCols: len(f) > swfFields}
	for _, c := range [...]struct {
		n   int
		dst *int64
	}{{2, &rec.submit}, {4, &rec.run}, {5, &rec.alloc}, {8, &rec.req}, {9, &rec.reqTime}} {
		v, err := parseNum(f[c.n-1])
		if err != nil {
			return swfRecord{}, parseErr(line, swfFieldNames[c.n], f[c.n-1], err)
		}
		*c.dst = v
	}
	if rec.alloc > maxCards || rec.req > maxCards {
		bad := 5
		if rec.req > maxCards {
			bad = 8
		}
		return swfRecord{}, parseErr(line, swfFieldNames[bad], f[bad-1], errRange)
	}
	if u := f[11]; u != "-1" {
		rec.user = u
	}
	return rec, nil
}

func unwrapNum(err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return ne.Err
	}
	return err
}
