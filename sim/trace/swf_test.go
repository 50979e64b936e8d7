package trace

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/huitian/huitian/model"
)

// checkTrace reports every broken promise of a Trace.
func checkTrace(t testing.TB, tr *Trace, wantLimit bool) {
	t.Helper()
	if tr.Dropped == nil {
		t.Fatalf("Dropped is nil")
	}
	dropped := 0
	for _, n := range tr.Dropped {
		dropped += n
	}
	if tr.Records != len(tr.Jobs)+dropped {
		t.Errorf("Records = %d, want jobs %d + dropped %d", tr.Records, len(tr.Jobs), dropped)
	}
	for i, j := range tr.Jobs {
		switch {
		case j.Submit < 0:
			t.Fatalf("job %d (%s): submit %d < 0", i, j.ID, j.Submit)
		case i > 0 && j.Submit < tr.Jobs[i-1].Submit:
			t.Fatalf("job %d (%s): submit %d before previous %d", i, j.ID, j.Submit, tr.Jobs[i-1].Submit)
		case j.Runtime <= 0:
			t.Fatalf("job %d (%s): runtime %d ≤ 0", i, j.ID, j.Runtime)
		case wantLimit && j.Limit <= 0:
			t.Fatalf("job %d (%s): limit %d ≤ 0", i, j.ID, j.Limit)
		case j.Spec.Cards <= 0:
			t.Fatalf("job %d (%s): cards %d ≤ 0", i, j.ID, j.Spec.Cards)
		case j.Spec.ID != j.ID:
			t.Fatalf("job %d: Spec.ID %q != ID %q", i, j.Spec.ID, j.ID)
		case j.Spec.CardsPerNode < 0 || (j.Spec.CardsPerNode > 0 && j.Spec.Cards%j.Spec.CardsPerNode != 0):
			t.Fatalf("job %d (%s): cards per node %d does not divide cards %d", i, j.ID, j.Spec.CardsPerNode, j.Spec.Cards)
		case !j.Spec.Submit.IsZero() || j.Spec.TimeLimit != 0:
			t.Fatalf("job %d (%s): Spec.Submit/TimeLimit set", i, j.ID)
		}
	}
}

func gz(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

const swfHeader = "; Version: 2.2\n; MaxNodes: 64\n; MaxProcs: 128\n"

// swfLine builds a job line from the fields the reader uses.
func swfLine(id, submit, run, alloc, req, reqTime, user int) string {
	return fmt.Sprintf("%d %d 0 %d %d -1 -1 %d %d -1 1 %d 1 -1 -1 -1 -1 -1\n", id, submit, run, alloc, req, reqTime, user)
}

func TestReadSWF(t *testing.T) {
	type kept struct {
		ID                     string
		Submit, Runtime, Limit int64
		Cards                  int
		User                   string
	}
	tests := []struct {
		name     string
		in       string
		opts     Options
		want     []kept
		dropped  map[string]int
		maxCards int
	}{
		{
			name: "a plain job keeps its fields: procs from field 8, limit from field 9, user from 12",
			in:   swfHeader + swfLine(1, 10, 100, 4, 8, 3600, 7),
			want: []kept{{"1", 10, 100, 3600, 8, "7"}}, dropped: map[string]int{}, maxCards: 128,
		},
		{
			name: "missing requested processors come from allocated ones",
			in:   swfHeader + swfLine(1, 0, 100, 4, -1, 600, -1),
			want: []kept{{"1", 0, 100, 600, 4, ""}}, dropped: map[string]int{}, maxCards: 128,
		},
		{
			name:    "jobs are sorted by submit time, ties in input order",
			in:      swfHeader + swfLine(1, 50, 1, 1, 1, 60, 1) + swfLine(2, 20, 1, 1, 1, 60, 1) + swfLine(3, 50, 1, 1, 1, 60, 1) + swfLine(4, 20, 1, 1, 1, 60, 1),
			want:    []kept{{"2", 20, 1, 60, 1, "1"}, {"4", 20, 1, 60, 1, "1"}, {"1", 50, 1, 60, 1, "1"}, {"3", 50, 1, 60, 1, "1"}},
			dropped: map[string]int{}, maxCards: 128,
		},
		{
			name: "without a filter unusable records are dropped by reason and overruns kept",
			in: swfHeader +
				swfLine(1, 0, 100, -1, -1, 600, 1) + // no processors
				swfLine(2, 0, -1, 4, 4, 600, 1) + // runtime missing
				swfLine(3, 0, 0, 4, 4, 600, 1) + // runtime 0
				swfLine(4, -1, 10, 4, 4, 600, 1) + // submit missing
				swfLine(5, 0, 10, 200, 200, 600, 1) + // larger than MaxProcs
				swfLine(6, 0, 900, 4, 4, 600, 1) + // runs past its limit: kept
				swfLine(7, 5, 100, 4, 4, -1, 1), // no requested time: bucket rule
			want:    []kept{{"6", 0, 900, 600, 4, "1"}, {"7", 5, 100, 300, 4, "1"}},
			dropped: map[string]int{DropNoCards: 1, DropRuntime: 2, DropSubmit: 1, DropTooLarge: 1}, maxCards: 128,
		},
		{
			name: "the strong filter drops no requested time and clips runtime to it",
			in: swfHeader +
				swfLine(1, 0, 900, 4, 4, 600, 1) +
				swfLine(2, 0, 100, 4, 4, -1, 1) +
				swfLine(3, 0, 100, 4, 4, 0, 1),
			opts: Options{Filter: FilterStrong},
			want: []kept{{"1", 0, 600, 600, 4, "1"}}, dropped: map[string]int{DropLimit: 2}, maxCards: 128,
		},
		{
			name: "without MaxProcs the machine size is MaxNodes",
			in:   "; MaxNodes: 8\n" + swfLine(1, 0, 10, 4, 4, 60, 1) + swfLine(2, 0, 10, 16, 16, 60, 1),
			want: []kept{{"1", 0, 10, 60, 4, "1"}}, dropped: map[string]int{DropTooLarge: 1}, maxCards: 8,
		},
		{
			name: "without any size header no job is too large",
			in:   swfLine(1, 0, 10, 4000, 4000, 60, 1),
			want: []kept{{"1", 0, 10, 60, 4000, "1"}}, dropped: map[string]int{}, maxCards: 0,
		},
		{
			name: "decimal fields, blank lines, extra fields and CRLF are accepted",
			in:   swfHeader + "\r\n1 0.4 -1 99.6 4 12.5 -1 4 600 -1 1 3 1 -1 -1 1 -1 -1 {1,2} q pbs\r\n\n",
			want: []kept{{"1", 0, 100, 600, 4, "3"}}, dropped: map[string]int{}, maxCards: 128,
		},
		{
			name: "Estimate exact sets a missing limit to the runtime",
			in:   swfHeader + swfLine(1, 0, 100, 4, 4, -1, 1),
			opts: Options{Estimate: EstimateExact},
			want: []kept{{"1", 0, 100, 100, 4, "1"}}, dropped: map[string]int{}, maxCards: 128,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, compressed := range []bool{false, true} {
				in := []byte(tt.in)
				if compressed {
					in = gz(t, tt.in)
				}
				tr, err := ReadSWF(bytes.NewReader(in), tt.opts)
				if err != nil {
					t.Fatalf("gzip %v: %v", compressed, err)
				}
				checkTrace(t, tr, tt.opts.Estimate != EstimateNone)
				var got []kept
				for _, j := range tr.Jobs {
					if j.Spec.Topology != model.TopologyAny || j.Spec.Class != "" {
						t.Errorf("job %s: topology %v class %q, want any and none", j.ID, j.Spec.Topology, j.Spec.Class)
					}
					// One processor computes alone; several are one parallel program.
					if wantComm := map[bool]model.Comm{false: model.CommNone, true: model.CommHigh}[j.Spec.Cards > 1]; j.Spec.Comm != wantComm {
						t.Errorf("job %s on %d processors: comm %v, want %v", j.ID, j.Spec.Cards, j.Spec.Comm, wantComm)
					}
					got = append(got, kept{j.ID, j.Submit, j.Runtime, j.Limit, j.Spec.Cards, j.Spec.User})
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("gzip %v: jobs (-want +got):\n%s", compressed, diff)
				}
				if diff := cmp.Diff(tt.dropped, tr.Dropped); diff != "" {
					t.Errorf("gzip %v: dropped (-want +got):\n%s", compressed, diff)
				}
				if tr.MaxCards != tt.maxCards {
					t.Errorf("MaxCards = %d, want %d", tr.MaxCards, tt.maxCards)
				}
			}
		})
	}
}

func TestReadSWFErrors(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		line      int
		field     string
		skipDrops int // malformed records dropped with SkipMalformed; -1: still an error
	}{
		{"a short line names its line", swfHeader + swfLine(1, 0, 1, 1, 1, 60, 1) + "2 0 1\n", 5, "fields", 1},
		{"a bad run time names field 4", swfHeader + "1 0 0 abc 4 -1 -1 4 60 -1 1 1 1 -1 -1 -1 -1 -1\n", 4, "field 4 (run time)", 1},
		{"an infinite submit names field 2", "1 Inf 0 5 4 -1 -1 4 60 -1 1 1 1 -1 -1 -1 -1 -1\n", 1, "field 2 (submit time)", 1},
		{"a huge processor count names field 8", "1 0 0 5 4 -1 -1 1e300 60 -1 1 1 1 -1 -1 -1 -1 -1\n", 1, "field 8 (requested processors)", 1},
		{"a bad MaxProcs header names it", "; MaxProcs: lots\n", 1, "header MaxProcs", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadSWF(strings.NewReader(tt.in), Options{})
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ParseError", err)
			}
			if pe.Line != tt.line || pe.Field != tt.field {
				t.Errorf("line %d field %q, want line %d field %q (%v)", pe.Line, pe.Field, tt.line, tt.field, err)
			}
			if !strings.HasPrefix(err.Error(), "trace: swf: line ") {
				t.Errorf("message %q lacks its prefix", err)
			}
			tr, err := ReadSWF(strings.NewReader(tt.in), Options{SkipMalformed: true})
			if err != nil {
				t.Fatalf("SkipMalformed: %v", err)
			}
			if got := tr.Dropped[DropMalformed]; got != tt.skipDrops {
				t.Errorf("SkipMalformed dropped %d malformed, want %d", got, tt.skipDrops)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{{Filter: "weak"}, {Estimate: "guess"}, {Fractional: "half"}, {LimitFactor: -1}, {CardsPerNode: -8}} {
		if _, err := ReadSWF(strings.NewReader(""), o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

// TestOpenFilterSWFOnly: the strong filter is the SWF reader's; Open
// refuses it for another format instead of reading without it.
func TestOpenFilterSWFOnly(t *testing.T) {
	for _, format := range []string{"philly", "openb", "csv", "synth"} {
		_, err := Open("synth:jobs=10", format, Options{Filter: FilterStrong})
		if err == nil || !strings.Contains(err.Error(), "filter") {
			t.Errorf("format %s with the strong filter: %v, want an error naming the filter", format, err)
		}
	}
	path := filepath.Join(t.TempDir(), "one.swf")
	if err := os.WriteFile(path, []byte(swfHeader+swfLine(1, 0, 60, 4, 4, 120, 7)), 0o644); err != nil {
		t.Fatal(err)
	}
	if tr, err := Open(path, "swf", Options{Filter: FilterStrong}); err != nil || len(tr.Jobs) != 1 {
		t.Errorf("swf with the strong filter: %v", err)
	}
}

func TestLimitFor(t *testing.T) {
	tests := []struct {
		name    string
		runtime int64
		opts    Options
		want    int64
	}{
		{"a short job asks for a minute", 10, Options{}, 60},
		{"1.5 × 100 s = 150 s rounds up to 5 min", 100, Options{}, 300},
		{"1.5 × 1 h = 1.5 h is a bucket", 3600, Options{}, 5400},
		{"beyond 7 days, whole days", 7 * 86400, Options{}, 11 * 86400},
		{"factor 1 rounds the runtime itself", 3600, Options{LimitFactor: 1}, 3600},
		{"exact is the runtime", 1234, Options{Estimate: EstimateExact}, 1234},
		{"none is 0", 1234, Options{Estimate: EstimateNone}, 0},
	}
	for _, tt := range tests {
		if got := LimitFor(tt.runtime, tt.opts); got != tt.want {
			t.Errorf("%s: LimitFor(%d) = %d, want %d", tt.name, tt.runtime, got, tt.want)
		}
	}
}

func TestDropUsers(t *testing.T) {
	in := swfHeader + swfLine(1, 0, 60, 4, 4, 120, 7) + swfLine(2, 5, 60, 2, 2, 120, -1) + swfLine(3, 9, 30, 1, 1, 60, 8)
	tr, err := ReadSWF(strings.NewReader(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := *tr
	before.Jobs = append([]Job(nil), tr.Jobs...)
	if tr.Jobs[0].Spec.User == "" || tr.Jobs[2].Spec.User == "" {
		t.Fatalf("users before = %q, %q: the test wants jobs 1 and 3 to have one", tr.Jobs[0].Spec.User, tr.Jobs[2].Spec.User)
	}
	tr.DropUsers()
	for i, j := range tr.Jobs {
		if j.Spec.User != "" {
			t.Errorf("job %s: user %q after DropUsers", j.ID, j.Spec.User)
		}
		// Nothing but the user changes.
		want := before.Jobs[i]
		want.Spec.User = ""
		if diff := cmp.Diff(want, j); diff != "" {
			t.Errorf("job %s changed beyond its user (-want +got):\n%s", j.ID, diff)
		}
	}
	checkTrace(t, tr, true)
	if got, want := tr.Notes[len(tr.Notes)-1], "user ids dropped: 2 of 3 jobs had one"; got != want {
		t.Errorf("note = %q, want %q", got, want)
	}
}
