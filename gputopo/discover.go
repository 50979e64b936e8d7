package gputopo

import (
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"os"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// ErrNoCards is returned when NVML works but reports no GPU.
var ErrNoCards = errors.New("gputopo: NVML reports no GPUs")

// Option changes how Discover reads the machine.
type Option func(*config)

type config struct {
	sysfs fs.FS
}

// WithSysfs makes Discover read sysfs (for a card's NUMA node, when NVML
// does not give it) from fsys, which stands for /sys. The default is
// os.DirFS("/sys"); tests pass a fstest.MapFS.
func WithSysfs(fsys fs.FS) Option {
	return func(c *config) { c.sysfs = fsys }
}

// NVML functions newer than the oldest drivers huitian supports. Calling a
// function the loaded library lacks aborts the process, so Discover asks the
// library for these by name first.
const (
	symRemoteDeviceType = "nvmlDeviceGetNvLinkRemoteDeviceType"
	symMemoryAffinity   = "nvmlDeviceGetMemoryAffinity"
)

// Discover reads the topology of every GPU that lib reports and names the
// node nodeName. lib must be initialised (lib.Init) by the caller, who also
// shuts it down; Probe does both.
//
// For each card it reads the index, UUID, model, memory, PCI bus id, NUMA
// node (NVML memory affinity, else sysfs numa_node, else -1), MIG mode and
// active NVLinks (peer by remote PCI bus id; an NVSwitch by remote device
// type, or, where the library cannot tell the type, by a remote that is not a
// GPU of this node); for each pair the PCIe common ancestor and P2P read
// status. NVML errors come back wrapped with the card and the call; a
// function a card does not support leaves its fact unknown.
func Discover(lib nvml.Interface, nodeName string, opts ...Option) (*Topology, error) {
	cfg := config{sysfs: os.DirFS("/sys")}
	for _, o := range opts {
		o(&cfg)
	}
	has := func(sym string) bool { return lib.Extensions().LookupSymbol(sym) == nil }
	hasRemoteType, hasMemAffinity := has(symRemoteDeviceType), has(symMemoryAffinity)

	// 1. Enumerate the cards.
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("gputopo: count devices: %w", ret)
	}
	if n == 0 {
		return nil, ErrNoCards
	}
	t := newTopology(nodeName, "nvml", n)
	devs := make([]nvml.Device, n)
	for i := range n {
		d, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("gputopo: GPU%d: get handle: %w", i, ret)
		}
		devs[i] = d
	}

	// 2. Per-card facts.
	byBus := make(map[string]int, n)
	for i, d := range devs {
		c, err := readCard(d, i, hasMemAffinity, cfg.sysfs)
		if err != nil {
			return nil, err
		}
		t.Cards[i] = c
		if c.PCIBusID != "" {
			byBus[c.PCIBusID] = i
		}
	}

	// 3. NVLinks: direct links per peer, and links to NVSwitches.
	for a, d := range devs {
		direct, sw, err := readNVLinks(d, a, byBus, hasRemoteType)
		if err != nil {
			return nil, err
		}
		t.Cards[a].SwitchLinks = sw
		for b, l := range direct {
			// Both ends count the same links; keep the larger count should
			// one end report a link down that the other still sees.
			t.Pairs[a][b].Links = max(t.Pairs[a][b].Links, l)
			t.Pairs[b][a].Links = t.Pairs[a][b].Links
		}
	}
	for a := range n {
		for b := range n {
			if a == b {
				continue
			}
			if s := min(t.Cards[a].SwitchLinks, t.Cards[b].SwitchLinks); s > 0 {
				t.Pairs[a][b].Links += s
				t.Pairs[a][b].ViaSwitch = true
			}
		}
	}

	// 4. Pairwise PCIe level and P2P status.
	for a := range n {
		for b := a + 1; b < n; b++ {
			lvl, p2p, err := readPair(devs[a], devs[b], a, b)
			if err != nil {
				return nil, err
			}
			t.Pairs[a][b].Level, t.Pairs[b][a].Level = lvl, lvl
			t.Pairs[a][b].P2P, t.Pairs[b][a].P2P = p2p, p2p
		}
	}

	// 5. Islands and PCIe groups.
	t.derive()
	return t, nil
}

// unsupported reports whether ret means "this card or library cannot tell
// (or will not tell this user, as in some containers and VMs)", which leaves
// an optional fact unknown rather than failing the discovery.
func unsupported(ret nvml.Return) bool {
	switch ret {
	case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND, nvml.ERROR_NOT_FOUND, nvml.ERROR_INVALID_ARGUMENT, nvml.ERROR_NO_PERMISSION:
		return true
	}
	return false
}

func readCard(d nvml.Device, i int, hasMemAffinity bool, sysfs fs.FS) (Card, error) {
	c := Card{Index: i, NUMANode: -1}
	var ret nvml.Return
	if c.UUID, ret = d.GetUUID(); ret != nvml.SUCCESS {
		return c, fmt.Errorf("gputopo: GPU%d: uuid: %w", i, ret)
	}
	if c.Model, ret = d.GetName(); ret != nvml.SUCCESS {
		return c, fmt.Errorf("gputopo: GPU%d: name: %w", i, ret)
	}
	mem, ret := d.GetMemoryInfo()
	switch {
	case ret == nvml.SUCCESS:
		c.MemBytes = int64(min(mem.Total, 1<<63-1))
	case !unsupported(ret):
		return c, fmt.Errorf("gputopo: GPU%d: memory info: %w", i, ret)
	}
	pci, ret := d.GetPciInfo()
	if ret != nvml.SUCCESS {
		return c, fmt.Errorf("gputopo: GPU%d: pci info: %w", i, ret)
	}
	c.PCIBusID = busID(pci)

	// NUMA: NVML's memory affinity when it names exactly one node, else the
	// kernel's view of the PCI device.
	if hasMemAffinity {
		mask, ret := d.GetMemoryAffinity(64, nvml.AFFINITY_SCOPE_NODE)
		switch {
		case ret == nvml.SUCCESS:
			c.NUMANode = singleBit(mask)
		case !unsupported(ret):
			return c, fmt.Errorf("gputopo: GPU%d: memory affinity: %w", i, ret)
		}
	}
	if c.NUMANode < 0 && c.PCIBusID != "" {
		c.NUMANode = sysfsNUMANode(sysfs, c.PCIBusID)
	}

	cur, pending, ret := d.GetMigMode()
	switch {
	case ret == nvml.SUCCESS:
		c.MIG = MIGMode{Capable: true, Enabled: cur == nvml.DEVICE_MIG_ENABLE, Pending: pending == nvml.DEVICE_MIG_ENABLE}
	case !unsupported(ret):
		return c, fmt.Errorf("gputopo: GPU%d: MIG mode: %w", i, ret)
	}
	return c, nil
}

// readNVLinks returns card a's active direct links per peer position and its
// links to NVSwitches.
func readNVLinks(d nvml.Device, a int, byBus map[string]int, hasRemoteType bool) (map[int]int, int, error) {
	direct := map[int]int{}
	sw := 0
	for l := range nvml.NVLINK_MAX_LINKS {
		state, ret := d.GetNvLinkState(l)
		if unsupported(ret) {
			continue // no such link, or no NVLink on this card
		}
		if ret != nvml.SUCCESS {
			return nil, 0, fmt.Errorf("gputopo: GPU%d: nvlink %d state: %w", a, l, ret)
		}
		if state != nvml.FEATURE_ENABLED {
			continue
		}
		kind := nvml.NVLINK_DEVICE_TYPE_UNKNOWN
		if hasRemoteType {
			k, ret := d.GetNvLinkRemoteDeviceType(l)
			switch {
			case ret == nvml.SUCCESS:
				kind = k
			case !unsupported(ret):
				return nil, 0, fmt.Errorf("gputopo: GPU%d: nvlink %d remote device type: %w", a, l, ret)
			}
		}
		switch kind {
		case nvml.NVLINK_DEVICE_TYPE_SWITCH:
			sw++
			continue
		case nvml.NVLINK_DEVICE_TYPE_IBMNPU:
			continue // a link to the CPU, not to a card
		}
		pci, ret := d.GetNvLinkRemotePciInfo(l)
		if unsupported(ret) {
			continue
		}
		if ret != nvml.SUCCESS {
			return nil, 0, fmt.Errorf("gputopo: GPU%d: nvlink %d remote pci info: %w", a, l, ret)
		}
		if b, ok := byBus[busID(pci)]; ok && b != a {
			direct[b]++
		} else if kind == nvml.NVLINK_DEVICE_TYPE_UNKNOWN && !ok {
			// The library cannot tell the remote's type and it is no GPU we
			// know: on x86 the only other NVLink endpoint is an NVSwitch.
			sw++
		}
	}
	return direct, sw, nil
}

func readPair(da, db nvml.Device, a, b int) (Level, P2PStatus, error) {
	lvl := LevelUnknown
	anc, ret := da.GetTopologyCommonAncestor(db)
	switch {
	case ret == nvml.SUCCESS:
		lvl = levelOf(anc)
	case !unsupported(ret):
		return lvl, P2PUnknown, fmt.Errorf("gputopo: GPU%d/GPU%d: common ancestor: %w", a, b, ret)
	}
	p2p := P2PUnknown
	st, ret := da.GetP2PStatus(db, nvml.P2P_CAPS_INDEX_READ)
	switch {
	case ret == nvml.SUCCESS:
		p2p = p2pOf(st)
	case !unsupported(ret):
		return lvl, p2p, fmt.Errorf("gputopo: GPU%d/GPU%d: p2p status: %w", a, b, ret)
	}
	return lvl, p2p, nil
}

func levelOf(l nvml.GpuTopologyLevel) Level {
	switch l {
	case nvml.TOPOLOGY_INTERNAL:
		return LevelBoard
	case nvml.TOPOLOGY_SINGLE:
		return LevelSingleSwitch
	case nvml.TOPOLOGY_MULTIPLE:
		return LevelMultiSwitch
	case nvml.TOPOLOGY_HOSTBRIDGE:
		return LevelHostBridge
	case nvml.TOPOLOGY_NODE:
		return LevelNUMANode
	case nvml.TOPOLOGY_SYSTEM:
		return LevelSystem
	}
	return LevelUnknown
}

func p2pOf(s nvml.GpuP2PStatus) P2PStatus {
	switch s {
	case nvml.P2P_STATUS_OK:
		return P2POK
	case nvml.P2P_STATUS_CHIPSET_NOT_SUPPORTED:
		return P2PChipsetNotSupported
	case nvml.P2P_STATUS_GPU_NOT_SUPPORTED:
		return P2PGPUNotSupported
	case nvml.P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED:
		return P2PTopologyNotSupported
	case nvml.P2P_STATUS_DISABLED_BY_REGKEY:
		return P2PDisabledByRegkey
	case nvml.P2P_STATUS_NOT_SUPPORTED:
		return P2PNotSupported
	}
	return P2PUnknown
}

// busID returns the PCI address NVML gives as "DDDD:BB:DD.F" in upper-case
// hex (NVML writes an eight-digit domain, sysfs a four-digit one); empty
// when NVML gave none.
func busID(p nvml.PciInfo) string {
	b := make([]byte, 0, len(p.BusId))
	for _, c := range p.BusId {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return normalizeBusID(string(b))
}

// normalizeBusID rewrites a PCI address "domain:bus:device.function" with a
// domain of at least four hex digits, upper case; anything else it returns
// trimmed and upper-cased.
func normalizeBusID(s string) string {
	s = strings.ToUpper(strings.TrimSpace(s))
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return s
	}
	devFn := strings.Split(parts[2], ".")
	if len(devFn) != 2 {
		return s
	}
	var v [4]uint64
	for i, f := range []string{parts[0], parts[1], devFn[0], devFn[1]} {
		x, err := strconv.ParseUint(f, 16, 32)
		if err != nil {
			return s
		}
		v[i] = x
	}
	return fmt.Sprintf("%04X:%02X:%02X.%X", v[0], v[1], v[2], v[3])
}

// singleBit returns the position of the only set bit in mask, or -1 when
// none or several are set.
func singleBit(mask []uint) int {
	node := -1
	for w, m := range mask {
		switch bits.OnesCount(m) {
		case 0:
			continue
		case 1:
			if node >= 0 {
				return -1
			}
			node = w*bits.UintSize + bits.TrailingZeros(m)
		default:
			return -1
		}
	}
	return node
}

// sysfsNUMANode reads bus/pci/devices/<bus id>/numa_node from sysfs; -1 when
// it is missing, unreadable or says -1 itself.
func sysfsNUMANode(sysfs fs.FS, bus string) int {
	if sysfs == nil {
		return -1
	}
	b, err := fs.ReadFile(sysfs, "bus/pci/devices/"+strings.ToLower(bus)+"/numa_node")
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return -1
	}
	return n
}
