package gputopo

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
)

// matrixOf returns the topology's matrix cells, a row per card.
func matrixOf(t *Topology) []string {
	var rows []string
	for a := range t.Cards {
		var cells []string
		for b := range t.Cards {
			cells = append(cells, t.cell(a, b))
		}
		rows = append(rows, strings.Join(cells, " "))
	}
	return rows
}

func numaOf(t *Topology) []int {
	var out []int
	for _, c := range t.Cards {
		out = append(out, c.NUMANode)
	}
	return out
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "smi", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseSMIFixtures(t *testing.T) {
	nv18 := make([]string, 8)
	for a := range nv18 {
		var cells []string
		for b := range 8 {
			cells = append(cells, map[bool]string{true: "X", false: "NV18"}[a == b])
		}
		nv18[a] = strings.Join(cells, " ")
	}
	tests := []struct {
		name    string
		file    string
		islands []Group
		matrix  []string
		numa    []int
	}{
		{
			name:    "an HGX H100 is one island of eight at NV18, NUMA 0 and 1 by halves, NICs ignored",
			file:    "hgx-h100",
			islands: []Group{{Name: "nvl0", Cards: []int{0, 1, 2, 3, 4, 5, 6, 7}}},
			matrix:  nv18,
			numa:    []int{0, 0, 0, 0, 1, 1, 1, 1},
		},
		{
			name: "a 4-GPU PCIe workstation is four islands of one with PHB, NODE and SYS between them",
			file: "pcie-4gpu",
			islands: []Group{
				{Name: "nvl0", Cards: []int{0}}, {Name: "nvl1", Cards: []int{1}},
				{Name: "nvl2", Cards: []int{2}}, {Name: "nvl3", Cards: []int{3}},
			},
			matrix: []string{
				"X PHB NODE SYS",
				"PHB X NODE SYS",
				"NODE NODE X SYS",
				"SYS SYS SYS X",
			},
			numa: []int{0, 0, 0, 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topo, err := ParseSMI(bytes.NewReader(readFixture(t, tt.file+".txt")), tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.islands, topo.Islands); diff != "" {
				t.Errorf("islands (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.matrix, matrixOf(topo)); diff != "" {
				t.Errorf("matrix (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.numa, numaOf(topo)); diff != "" {
				t.Errorf("NUMA nodes (-want +got):\n%s", diff)
			}
			var text bytes.Buffer
			if err := topo.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			golden(t, "smi-"+tt.file+".txt", text.Bytes())
			node, err := topo.Node()
			if err != nil {
				t.Fatal(err)
			}
			js, err := MarshalNode(node)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "smi-"+tt.file+".json", js)
		})
	}
}

func TestParseSMIVariants(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		matrix []string
		numa   []int
	}{
		{
			name:   "without a NUMA column, CPU sets are numbered by their first CPU",
			in:     "\tGPU0\tGPU1\tGPU2\tCPU Affinity\nGPU0\t X \tSYS\tPIX\t24-47\nGPU1\tSYS\t X \tSYS\t0-23\nGPU2\tPIX\tSYS\t X \t24-47\n",
			matrix: []string{"X SYS PIX", "SYS X SYS", "PIX SYS X"},
			numa:   []int{1, 0, 1},
		},
		{
			name:   "an empty CPU Affinity cell (GB200) leaves the NUMA column in place",
			in:     "\t\x1b[4mGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\nGPU0\t X \tNV18\t\t1\t\tN/A\nGPU1\tNV18\t X \t0-71\t0\t\tN/A\n",
			matrix: []string{"X NV18", "NV18 X"},
			numa:   []int{1, 0},
		},
		{
			name:   "text before the matrix, CRLF line ends and the old SOC label",
			in:     "NVIDIA Topology:\r\n\tGPU0\tGPU1\r\nGPU0\t X \tSOC\r\nGPU1\tSOC\t X \r\n",
			matrix: []string{"X SYS", "SYS X"},
			numa:   []int{-1, -1},
		},
		{
			name:   "one GPU, padded with double tabs, NUMA N/A",
			in:     "\t\t\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t0-7\t\tN/A\t\tN/A\n\nLegend:\n",
			matrix: []string{"X"},
			numa:   []int{-1},
		},
		{
			name:   "a NUMA affinity over several nodes is no single node",
			in:     "GPU0 GPU1 CPU Affinity NUMA Affinity\nGPU0 X PXB 0-63 0-1\nGPU1 PXB X 0-63 0-1\n",
			matrix: []string{"X PXB", "PXB X"},
			numa:   []int{-1, -1},
		},
		{
			name:   "GPU indexes need not start at 0, and sort",
			in:     "\tGPU3\tGPU1\nGPU3\t X \tNV4\nGPU1\tNV4\t X \n",
			matrix: []string{"X NV4", "NV4 X"},
			numa:   []int{-1, -1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topo, err := ParseSMI(strings.NewReader(tt.in), "n")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.matrix, matrixOf(topo)); diff != "" {
				t.Errorf("matrix (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.numa, numaOf(topo)); diff != "" {
				t.Errorf("NUMA nodes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseSMIErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "an unknown connection names its cell",
			in:   "\tGPU0\tGPU1\nGPU0\t X \tFOO\nGPU1\tFOO\t X \n",
			want: `line 2, column 10: GPU0/GPU1: unknown connection "FOO" (want X, NV#, PIX, PXB, PHB, NODE or SYS)`,
		},
		{
			name: "an asymmetric pair names the later cell and the earlier line",
			in:   "\tGPU0\tGPU1\nGPU0\t X \tPIX\nGPU1\tPXB\t X \n",
			want: `line 3, column 6: GPU1/GPU0 is PXB but GPU0/GPU1 on line 2 is PIX`,
		},
		{
			name: "a column without a row names the column",
			in:   "\tGPU0\tGPU1\nGPU0\t X \tPIX\n",
			want: `line 1, column 7: column GPU1 has no row`,
		},
		{
			name: "a short row names where it ends",
			in:   "\tGPU0\tGPU1\nGPU0\t X \tPIX\nGPU1\tPIX\n",
			want: `line 3, column 9: row GPU1 has 1 cell where the header has 2 columns`,
		},
		{
			name: "the diagonal must be X",
			in:   "\tGPU0\tGPU1\nGPU0\tPIX\tPIX\nGPU1\tPIX\t X \n",
			want: `line 2, column 6: GPU0/GPU0 is "PIX", want X on the diagonal`,
		},
		{
			name: "X off the diagonal",
			in:   "\tGPU0\tGPU1\nGPU0\t X \tX\nGPU1\tPIX\t X \n",
			want: `line 2, column 10: GPU0/GPU1 is X off the diagonal`,
		},
		{
			name: "text without a header",
			in:   "hello\nworld\n",
			want: "line 2: no header row naming GPU columns (GPU0 GPU1 …); is this `nvidia-smi topo -m` output?",
		},
		{
			name: "a GPU row before any header",
			in:   "GPU0 X PIX\nGPU1 PIX X\n",
			want: `line 1, column 1: a GPU row before the header row (GPU0 GPU1 …)`,
		},
		{
			name: "a row the header does not name",
			in:   "\tGPU0\tGPU1\nGPU2\t X \tPIX\n",
			want: `line 2, column 1: row GPU2 has no column in the header (line 1)`,
		},
		{
			name: "a row twice",
			in:   "\tGPU0\tGPU1\nGPU0\t X \tPIX\nGPU0\t X \tPIX\n",
			want: `line 3, column 1: row GPU0 appears twice (first on line 2)`,
		},
		{
			name: "a column twice",
			in:   "\tGPU0\tGPU0\n",
			want: `line 1, column 7: column GPU0 appears twice`,
		},
		{
			name: "a NUMA affinity that is no node",
			in:   "\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-7\tzero\n",
			want: `line 2, column 14: GPU0 NUMA Affinity: "zero" is not a NUMA node`,
		},
		{
			name: "a CPU affinity that is no CPU list",
			in:   "\tGPU0\tCPU Affinity\nGPU0\t X \t7-0\n",
			want: `line 2, column 10: GPU0 CPU Affinity: "7-0" is not a CPU list`,
		},
		{
			name: "one cell too many",
			in:   "\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-7\t0\tN/A\n",
			want: `line 2, column 16: row GPU0 has an extra cell "N/A"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSMI(strings.NewReader(tt.in), "n")
			var se *SMIError
			if !errors.As(err, &se) {
				t.Fatalf("ParseSMI() error = %v, want an *SMIError", err)
			}
			if got := strings.TrimPrefix(err.Error(), "gputopo: nvidia-smi topo -m: "); got != tt.want {
				t.Errorf("ParseSMI() error:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestParseSMIReadsTheReadableView checks that huitian's own matrix reads
// back: the same islands, NVLinks, PCIe levels and NUMA nodes. (Not the PCIe
// groups: like nvidia-smi's, the matrix shows NV# where cards also share a
// PCIe switch.)
func TestParseSMIReadsTheReadableView(t *testing.T) {
	dgx, _ := dgxA100()
	bridges, _ := pcieBridgeBox().lib()
	mesh, _ := meshBox().lib()
	tests := []struct {
		name  string
		lib   nvml.Interface
		sysfs map[string]string
	}{
		{"dgx-a100", dgx, nil},
		{"pcie-bridges", bridges, pcieBridgeSysfs()},
		{"mesh4", mesh, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topo, err := Discover(tt.lib, tt.name, WithSysfs(mapFS(tt.sysfs)))
			if err != nil {
				t.Fatal(err)
			}
			var text bytes.Buffer
			if err := topo.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			back, err := ParseSMI(&text, tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(matrixOf(topo), matrixOf(back)); diff != "" {
				t.Errorf("matrix (-discovered +read back):\n%s", diff)
			}
			if diff := cmp.Diff(numaOf(topo), numaOf(back)); diff != "" {
				t.Errorf("NUMA (-discovered +read back):\n%s", diff)
			}
			for i := range topo.Islands {
				topo.Islands[i].NVSwitch = false // the matrix cannot tell
			}
			if diff := cmp.Diff(topo.Islands, back.Islands); diff != "" {
				t.Errorf("islands (-discovered +read back):\n%s", diff)
			}
		})
	}
}

func FuzzParseSMI(f *testing.F) {
	for _, name := range []string{"hgx-h100.txt", "pcie-4gpu.txt"} {
		f.Add(readFixture(f, name))
	}
	for _, s := range []string{
		"\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV4\t0-7\t0\nGPU1\tNV4\t X \t8-15\t1\n",
		"\t\x1b[4mGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\nGPU0\t X \tNV18\t\t1\t\tN/A\nGPU1\tNV18\t X \t0-71\t0\t\tN/A\n",
		"\tGPU0\tGPU1\tGPU2\tCPU Affinity\nGPU0\t X \tSYS\tPIX\t24-47\nGPU1\tSYS\t X \tSYS\t0-23\nGPU2\tPIX\tSYS\t X \t24-47\n",
		"\tGPU0\tGPU1\nGPU0\t X \tPIX\nGPU1\tPXB\t X \n",
		"GPU0 X\n",
		"\x1b[",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		topo, err := ParseSMI(bytes.NewReader(in), "fuzz")
		if err != nil {
			var se *SMIError
			if !errors.As(err, &se) || se.Line < 1 || se.Column < 0 {
				t.Fatalf("error %v is not an SMIError with a line", err)
			}
			return
		}
		// What parses is consistent, and reads back the same from the
		// readable view.
		seen := map[int]bool{}
		for _, g := range topo.Islands {
			for _, i := range g.Cards {
				if seen[i] {
					t.Fatalf("GPU%d in two islands", i)
				}
				seen[i] = true
			}
		}
		if len(seen) != len(topo.Cards) {
			t.Fatalf("%d cards, %d in islands", len(topo.Cards), len(seen))
		}
		for a := range topo.Pairs {
			for b := range topo.Pairs {
				if topo.Pairs[a][b] != topo.Pairs[b][a] {
					t.Fatalf("pair %d/%d is not symmetric", a, b)
				}
			}
		}
		var text bytes.Buffer
		if err := topo.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		back, err := ParseSMI(&text, "fuzz")
		if err != nil {
			t.Fatalf("the readable view does not read back: %v\n%s", err, text.String())
		}
		if diff := cmp.Diff(matrixOf(topo), matrixOf(back)); diff != "" {
			t.Fatalf("matrix read back differs:\n%s", diff)
		}
		if diff := cmp.Diff(numaOf(topo), numaOf(back)); diff != "" {
			t.Fatalf("NUMA read back differs:\n%s", diff)
		}
	})
}
