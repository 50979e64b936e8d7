package trace

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tracesDir is /work/shared/traces seen from this package's directory.
var tracesDir = filepath.Join("..", "..", "..", "shared", "traces")

func tracePath(t *testing.T, parts ...string) string {
	t.Helper()
	p := filepath.Join(append([]string{tracesDir}, parts...)...)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("trace %s absent (%v): the shared trace folder is not mounted here", p, err)
	}
	return p
}

func dropSummary(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %d; ", k, m[k])
	}
	return b.String()
}

// TestKTHStrongFilter checks the strong filter against predictsim's published job
// count for KTH-SP2 (the "length" of its EASY result row).
func TestKTHStrongFilter(t *testing.T) {
	path := tracePath(t, "swf-KTH-SP2", "KTH-SP2-1996-2.1-cln.swf.gz")
	tr, err := Open(path, "swf", Options{Filter: FilterStrong})
	if err != nil {
		t.Fatal(err)
	}
	checkTrace(t, tr, true)
	want := 28481
	if m := filepath.Join(tracesDir, "results-predictsim-easy", "KTH-SP2.metrics.gz"); fileExists(m) {
		want = metricsLength(t, m)
	}
	if len(tr.Jobs) != want || want != 28481 {
		t.Errorf("KTH-SP2 strong filter: %d jobs, want %d (predictsim) = 28481", len(tr.Jobs), want)
	}
	if tr.MaxCards != 100 {
		t.Errorf("MaxCards = %d, want 100", tr.MaxCards)
	}
	if tr.Records != 28489 {
		t.Errorf("Records = %d, want 28489 job lines", tr.Records)
	}
	for _, j := range tr.Jobs {
		if j.Runtime > j.Limit {
			t.Fatalf("%s: runtime %d past limit %d after the strong filter", j.ID, j.Runtime, j.Limit)
		}
	}
	t.Logf("dropped %s notes %q", dropSummary(tr.Dropped), tr.Notes)
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// metricsLength reads the "length" column of the first result row.
func metricsLength(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Scan() // header
	if !sc.Scan() {
		t.Fatalf("%s: no result row", path)
	}
	fields := strings.Fields(sc.Text())
	n, err := strconv.Atoi(fields[1])
	if err != nil {
		t.Fatalf("%s: length %q: %v", path, fields[1], err)
	}
	return n
}

// TestRealTraces reads every trace in the shared folder that these readers cover and
// pins what each keeps and drops.
func TestRealTraces(t *testing.T) {
	tests := []struct {
		name, format string
		path         []string
		opts         Options
		jobs         int
		dropped      map[string]int
	}{
		{"KTH-SP2 unfiltered", "swf", []string{"swf-KTH-SP2", "KTH-SP2-1996-2.1-cln.swf.gz"}, Options{}, 28481, map[string]int{DropRuntime: 8}},
		{"HPC2N first 3170", "swf", []string{"swf-HPC2N-first3171", "hpc2n.swf.gz"}, Options{}, 3145, map[string]int{DropRuntime: 25}},
		{"HPC2N strong", "swf", []string{"swf-HPC2N-first3171", "hpc2n.swf.gz"}, Options{Filter: FilterStrong}, 3145, map[string]int{DropRuntime: 25}},
		{"NASA iPSC", "swf", []string{"swf-NASA-iPSC", "NASA-iPSC-1993-3.1-cln.swf.gz"}, Options{}, 18066, map[string]int{DropRuntime: 173}},
		{"Lublin 256", "swf", []string{"swf-Lublin-synthetic-rlscheduler", "lublin_256.swf.gz"}, Options{}, 10000, map[string]int{}},
		{"Lublin 256 new2", "swf", []string{"swf-Lublin-synthetic-rlscheduler", "lublin_256_new2.gz"}, Options{}, 10000, map[string]int{}},
		{"Philly vc103959", "philly", []string{"philly-vc103959-elasticflow", "philly_103959.csv"}, Options{}, 876, map[string]int{}},
		{"openb default", "openb", []string{"alibaba-openb-gpu-2023", "openb_pod_list_default.csv.gz"}, Options{}, 6203, map[string]int{DropNoCards: 1088, DropNotStarted: 861}},
		{"openb default, fractional skipped", "openb", []string{"alibaba-openb-gpu-2023", "openb_pod_list_default.csv.gz"}, Options{Fractional: FractionalSkip}, 3630, map[string]int{DropNoCards: 1088, DropNotStarted: 861, DropFractional: 2573}},
		{"openb gpuspec33", "openb", []string{"alibaba-openb-gpu-2023", "openb_pod_list_gpuspec33.csv.gz"}, Options{}, 6203, map[string]int{DropNoCards: 1088, DropNotStarted: 861}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := Open(tracePath(t, tt.path...), tt.format, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			checkTrace(t, tr, true)
			if len(tr.Jobs) != tt.jobs {
				t.Errorf("%d jobs, want %d", len(tr.Jobs), tt.jobs)
			}
			if diff := cmp.Diff(tt.dropped, tr.Dropped); diff != "" {
				t.Errorf("dropped (-want +got):\n%s", diff)
			}
			t.Logf("%d records, %d jobs, MaxCards %d; dropped %s\n  notes %q", tr.Records, len(tr.Jobs), tr.MaxCards, dropSummary(tr.Dropped), tr.Notes)
		})
	}
}

func TestOpenBPlacementOnly(t *testing.T) {
	_, err := Open(tracePath(t, "alibaba-openb-gpu-2023", "openb_pod_list_multigpu50.csv.gz"), "openb", Options{})
	if !errors.Is(err, ErrNoTimes) {
		t.Errorf("err = %v, want ErrNoTimes", err)
	}
}

func TestRealNodeLists(t *testing.T) {
	for _, tt := range []struct {
		path         []string
		nodes, cards int
	}{
		{[]string{"alibaba-openb-gpu-2023", "openb_node_list_gpu_node.csv.gz"}, 1213, 6212},
		{[]string{"alibaba-openb-gpu-2023", "openb_node_list_all_node.csv.gz"}, 1213, 6212},
		{[]string{"alibaba-spot-gpu-2026", "node_info_df.csv"}, 4278, 10412},
	} {
		nl, err := OpenNodes(tracePath(t, tt.path...))
		if err != nil {
			t.Fatal(err)
		}
		cards := 0
		for _, n := range nl.Nodes {
			cards += n.Cards
		}
		if len(nl.Nodes) != tt.nodes || cards != tt.cards {
			t.Errorf("%s: %d nodes, %d cards; want %d, %d (SOURCE.txt)", tt.path[1], len(nl.Nodes), cards, tt.nodes, tt.cards)
		}
		t.Logf("%s: %d GPU nodes, %d cards, dropped %s", tt.path[1], len(nl.Nodes), cards, dropSummary(nl.Dropped))
	}
}
