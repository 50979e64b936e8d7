package gputopo

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites the file with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./gputopo -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got); rerun with -update once the change is understood:\n%s", path, diff)
	}
}

func mapFS(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return fsys
}

// shape is what the tests check of a topology besides the golden files.
type shape struct {
	Islands []Group
	PCIe    []Group
	NUMA    []int
	NVLinks map[int][]NVLink
}

func shapeOf(t *Topology) shape {
	s := shape{Islands: t.Islands, PCIe: t.PCIe, NVLinks: map[int][]NVLink{}}
	for _, c := range t.Cards {
		s.NUMA = append(s.NUMA, c.NUMANode)
		s.NVLinks[c.Index] = c.NVLinks
	}
	return s
}

func peers(links int, idx ...int) []NVLink {
	var out []NVLink
	for _, i := range idx {
		out = append(out, NVLink{Peer: i, Links: links})
	}
	return out
}

func TestDiscover(t *testing.T) {
	dgx, _ := dgxA100()
	bridges, _ := pcieBridgeBox().lib()
	mesh, _ := meshBox().lib()
	all8 := []int{0, 1, 2, 3, 4, 5, 6, 7}
	without := func(i int, from []int) []int {
		var out []int
		for _, x := range from {
			if x != i {
				out = append(out, x)
			}
		}
		return out
	}
	tests := []struct {
		name  string
		lib   nvml.Interface
		sysfs map[string]string
		file  string
		want  shape
	}{
		{
			name: "the DGX A100 mock is one NVSwitch island of eight, 12 links between any two cards",
			lib:  dgx, file: "dgx-a100",
			want: shape{
				Islands: []Group{{Name: "nvl0", Cards: all8, NVSwitch: true}},
				NUMA:    []int{3, 3, 1, 1, 7, 7, 5, 5},
				NVLinks: func() map[int][]NVLink {
					m := map[int][]NVLink{}
					for _, i := range all8 {
						m[i] = peers(12, without(i, all8)...)
					}
					return m
				}(),
			},
		},
		{
			name: "a PCIe box with NVLink bridges in pairs is four islands of two, NUMA from sysfs",
			lib:  bridges, sysfs: pcieBridgeSysfs(), file: "pcie-bridges",
			want: shape{
				Islands: []Group{
					{Name: "nvl0", Cards: []int{0, 1}}, {Name: "nvl1", Cards: []int{2, 3}},
					{Name: "nvl2", Cards: []int{4, 5}}, {Name: "nvl3", Cards: []int{6, 7}},
				},
				PCIe: []Group{
					{Name: "pcie0", Cards: []int{0, 1}}, {Name: "pcie1", Cards: []int{2, 3}},
					{Name: "pcie2", Cards: []int{4, 5}}, {Name: "pcie3", Cards: []int{6, 7}},
				},
				NUMA: []int{0, 0, 0, 0, 1, 1, -1, -1},
				NVLinks: map[int][]NVLink{
					0: peers(12, 1), 1: peers(12, 0), 2: peers(12, 3), 3: peers(12, 2),
					4: peers(12, 5), 5: peers(12, 4), 6: peers(12, 7), 7: peers(12, 6),
				},
			},
		},
		{
			name: "a four-card NVLink full mesh is one island of four, 4 links per pair",
			lib:  mesh, file: "mesh4",
			want: shape{
				Islands: []Group{{Name: "nvl0", Cards: []int{0, 1, 2, 3}}},
				NUMA:    []int{0, 0, 1, 1},
				NVLinks: map[int][]NVLink{0: peers(4, 1, 2, 3), 1: peers(4, 0, 2, 3), 2: peers(4, 0, 1, 3), 3: peers(4, 0, 1, 2)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topo, err := Discover(tt.lib, tt.file, WithSysfs(mapFS(tt.sysfs)))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, shapeOf(topo)); diff != "" {
				t.Errorf("shape (-want +got):\n%s", diff)
			}
			for _, c := range topo.Cards {
				if c.UUID == "" || c.MemBytes <= 0 || c.PCIBusID == "" || c.Model == "" {
					t.Errorf("GPU%d lacks a fact: %+v", c.Index, c)
				}
			}
			var text bytes.Buffer
			if err := topo.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.file+".txt", text.Bytes())
			node, err := topo.Node()
			if err != nil {
				t.Fatal(err)
			}
			js, err := MarshalNode(node)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tt.file+".json", js)
		})
	}
}

func TestDiscoverDGXA100Facts(t *testing.T) {
	s, devs := dgxA100()
	topo, err := Discover(s, "dgx-a100", WithSysfs(mapFS(nil)))
	if err != nil {
		t.Fatal(err)
	}
	c := topo.Cards[2]
	want := Card{
		Index: 2, UUID: devs[2].UUID, Model: "Mock NVIDIA A100-SXM4-40GB", MemBytes: 40 << 30,
		PCIBusID: "0000:47:00.0", NUMANode: 1, NVLinks: peers(12, 0, 1, 3, 4, 5, 6, 7),
		SwitchLinks: 12, Island: "nvl0", MIG: MIGMode{Capable: true},
	}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("GPU2 (-want +got):\n%s", diff)
	}
	if got := topo.Pairs[0][1]; got != (Pair{Level: LevelMultiSwitch, Links: 12, ViaSwitch: true, P2P: P2POK}) {
		t.Errorf("GPU0/GPU1 = %+v", got)
	}
	if got := topo.Pairs[0][7].Level; got != LevelSystem {
		t.Errorf("GPU0/GPU7 level = %v, want SYS", got)
	}
}

func TestDiscoverNVSwitchWithoutRemoteDeviceTypes(t *testing.T) {
	s, _ := dgxA100()
	// A library older than nvmlDeviceGetNvLinkRemoteDeviceType: the remote of
	// each link is a PCI device that is no GPU of the node, an NVSwitch.
	s.LookupSymbolFunc = func(sym string) error {
		if sym == symRemoteDeviceType {
			return errors.New("not found")
		}
		return nil
	}
	topo, err := Discover(s, "dgx-a100", WithSysfs(mapFS(nil)))
	if err != nil {
		t.Fatal(err)
	}
	want := []Group{{Name: "nvl0", Cards: []int{0, 1, 2, 3, 4, 5, 6, 7}, NVSwitch: true}}
	if diff := cmp.Diff(want, topo.Islands); diff != "" {
		t.Errorf("islands (-want +got):\n%s", diff)
	}
	if got := topo.Cards[5].SwitchLinks; got != 12 {
		t.Errorf("GPU5 switch links = %d, want 12", got)
	}
}

func TestDiscoverMIGIsReportedAndRefusedByNode(t *testing.T) {
	s, devs := dgxA100()
	if ret, _ := devs[2].SetMigMode(nvml.DEVICE_MIG_ENABLE); ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	topo, err := Discover(s, "dgx-a100", WithSysfs(mapFS(nil)))
	if err != nil {
		t.Fatal(err)
	}
	if got := topo.MIGCards(); !cmp.Equal(got, []int{2}) {
		t.Errorf("MIGCards() = %v, want [2]", got)
	}
	var text bytes.Buffer
	if err := topo.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "MIG is enabled on GPU2") {
		t.Errorf("the readable view does not say that MIG is on:\n%s", text.String())
	}
	_, err = topo.Node()
	if !errors.Is(err, ErrMIGEnabled) {
		t.Fatalf("Node() error = %v, want ErrMIGEnabled", err)
	}
	const want = "gputopo: MIG is enabled on GPU2 of node dgx-a100: huitian plans whole cards; turn MIG off (nvidia-smi -i 2 -mig 0, then reset the GPU) or leave the node out"
	if err.Error() != want {
		t.Errorf("Node() error:\n got %s\nwant %s", err, want)
	}
}

func TestDiscoverErrors(t *testing.T) {
	tests := []struct {
		name    string
		breakIt func(lib nvmlLib)
		is      error
		msg     string
	}{
		{
			name: "a lost GPU's uuid names the card and the call",
			breakIt: func(l nvmlLib) {
				l.devs[1].GetUUIDFunc = func() (string, nvml.Return) { return "", nvml.ERROR_GPU_IS_LOST }
			},
			is:  nvml.ERROR_GPU_IS_LOST,
			msg: "gputopo: GPU1: uuid: ERROR_GPU_IS_LOST",
		},
		{
			name: "a failing NVLink state names the link",
			breakIt: func(l nvmlLib) {
				l.devs[3].GetNvLinkStateFunc = func(int) (nvml.EnableState, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
			},
			is:  nvml.ERROR_UNKNOWN,
			msg: "gputopo: GPU3: nvlink 0 state: ERROR_UNKNOWN",
		},
		{
			name: "a failing common ancestor names both cards",
			breakIt: func(l nvmlLib) {
				l.devs[0].GetTopologyCommonAncestorFunc = func(nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
					return 0, nvml.ERROR_GPU_IS_LOST
				}
			},
			is:  nvml.ERROR_GPU_IS_LOST,
			msg: "gputopo: GPU0/GPU1: common ancestor: ERROR_GPU_IS_LOST",
		},
		{
			name: "a driver with no GPU is ErrNoCards",
			breakIt: func(l nvmlLib) {
				l.lib.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.SUCCESS }
			},
			is:  ErrNoCards,
			msg: "gputopo: NVML reports no GPUs",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lib, devs := meshBox().lib()
			tt.breakIt(nvmlLib{lib: lib, devs: devs})
			_, err := Discover(lib, "mesh4")
			if !errors.Is(err, tt.is) || err.Error() != tt.msg {
				t.Errorf("Discover() error = %v, want %q wrapping %v", err, tt.msg, tt.is)
			}
		})
	}
}

func TestDiscoverUnsupportedFactsStayUnknown(t *testing.T) {
	lib, devs := meshBox().lib()
	for _, d := range devs {
		d.GetTopologyCommonAncestorFunc = func(nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		d.GetP2PStatusFunc = func(nvml.Device, nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		d.GetMemoryAffinityFunc = func(int, nvml.AffinityScope) ([]uint, nvml.Return) { return []uint{0b11}, nvml.SUCCESS }
	}
	topo, err := Discover(lib, "mesh4", WithSysfs(mapFS(nil)))
	if err != nil {
		t.Fatal(err)
	}
	if p := topo.Pairs[0][3]; p.Level != LevelUnknown || p.P2P != P2PUnknown || p.Links != 4 {
		t.Errorf("GPU0/GPU3 = %+v, want unknown level and P2P, 4 links", p)
	}
	if n := topo.Cards[0].NUMANode; n != -1 {
		t.Errorf("NUMA node with affinity to two nodes and no sysfs = %d, want -1", n)
	}
}

func TestProbe(t *testing.T) {
	tests := []struct {
		name string
		init nvml.Return
		is   error
		msg  string
	}{
		{"a missing library is ErrNoNVML", nvml.ERROR_LIBRARY_NOT_FOUND, ErrNoNVML,
			"gputopo: NVML unavailable: libnvidia-ml.so.1 could not be loaded; is the NVIDIA driver installed? (ERROR_LIBRARY_NOT_FOUND)"},
		{"an unloaded driver is ErrNoNVML", nvml.ERROR_DRIVER_NOT_LOADED, ErrNoNVML,
			"gputopo: NVML unavailable: the NVIDIA kernel driver is not loaded (ERROR_DRIVER_NOT_LOADED)"},
		{"any other init failure is ErrNoNVML too", nvml.ERROR_UNKNOWN, nvml.ERROR_UNKNOWN,
			"gputopo: NVML unavailable: init failed (ERROR_UNKNOWN)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lib, _ := meshBox().lib()
			lib.InitFunc = func() nvml.Return { return tt.init }
			_, err := Probe(lib, "n")
			if !errors.Is(err, tt.is) || !errors.Is(err, ErrNoNVML) || err.Error() != tt.msg {
				t.Errorf("Probe() error = %v, want %q", err, tt.msg)
			}
		})
	}
	t.Run("a panic in the binding is an error and NVML is still shut down", func(t *testing.T) {
		lib, _ := meshBox().lib()
		lib.DeviceGetCountFunc = nil // the mock panics when called
		shut := false
		lib.ShutdownFunc = func() nvml.Return { shut = true; return nvml.SUCCESS }
		_, err := Probe(lib, "n")
		if err == nil || !strings.HasPrefix(err.Error(), "gputopo: NVML failed: ") || !shut {
			t.Errorf("Probe() error = %v, shut down = %v", err, shut)
		}
	})
	t.Run("a working library is initialised, read and shut down", func(t *testing.T) {
		lib, _ := meshBox().lib()
		topo, err := Probe(lib, "n")
		if err != nil || len(topo.Cards) != 4 || len(lib.InitCalls()) != 1 || len(lib.ShutdownCalls()) != 1 {
			t.Errorf("Probe() = %v, %v; init %d, shutdown %d", topo, err, len(lib.InitCalls()), len(lib.ShutdownCalls()))
		}
	})
}

// TestProbeHost runs the real library: on a machine without NVIDIA's driver
// it must say so, not crash; on a GPU machine it must find cards.
func TestProbeHost(t *testing.T) {
	topo, err := ProbeHost("host")
	switch {
	case errors.Is(err, ErrNoNVML), errors.Is(err, ErrNoCards):
		t.Logf("no NVML here: %v", err)
	case err != nil:
		t.Fatal(err)
	case len(topo.Cards) == 0:
		t.Fatal("ProbeHost found no cards and no error")
	}
}

func TestNormalizeBusID(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:07:00.0": "0000:07:00.0",
		"0000:3b:00.0":     "0000:3B:00.0",
		"00010000:c1:1f.7": "10000:C1:1F.7",
		"garbage":          "GARBAGE",
		"":                 "",
	} {
		if got := normalizeBusID(in); got != want {
			t.Errorf("normalizeBusID(%q) = %q, want %q", in, got, want)
		}
	}
}

// nvmlLib is a fake library and its devices, for a test to break.
type nvmlLib struct {
	lib  *mock.Interface
	devs []*mock.Device
}
