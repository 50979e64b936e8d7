package gputopo

import (
	"fmt"
	"slices"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// nvmlBus writes a PCI address the way NVML does: an eight-digit domain.
func nvmlBus(s string) nvml.PciInfo {
	var p nvml.PciInfo
	for i, c := range "0000" + s {
		p.BusId[i] = int8(c)
	}
	return p
}

func fakeUUID(box string, i int) string {
	return fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", len(box)*7919, i)
}

// linkSwitch in boxCard.links marks an NVLink to an NVSwitch.
const linkSwitch = "switch"

// boxCard is one card of a fake machine.
type boxCard struct {
	name   string
	memGiB uint64
	bus    string   // sysfs style, "0000:1A:00.0"
	numa   int      // what NVML memory affinity says; -1: no answer
	links  []string // per NVLink: the remote's bus id, linkSwitch, or "" (down)
	mig    bool
}

// box is a fake machine built on mock.Interface and mock.Device.
type box struct {
	name  string
	cards []boxCard
	// level gives the common ancestor of cards a and b (positions).
	level func(a, b int) nvml.GpuTopologyLevel
	// p2p gives the P2P read status; nil: all OK.
	p2p func(a, b int) nvml.GpuP2PStatus
	// missing are NVML symbols the fake library lacks.
	missing []string
	// remoteBusOfSwitch is what a link to an NVSwitch reports as remote PCI.
	remoteBusOfSwitch string
}

// lib returns the fake library and its devices.
func (bx box) lib() (*mock.Interface, []*mock.Device) {
	devs := make([]*mock.Device, len(bx.cards))
	pos := func(d nvml.Device) int {
		return slices.IndexFunc(devs, func(x *mock.Device) bool { return nvml.Device(x) == d })
	}
	for i, c := range bx.cards {
		migMode := nvml.DEVICE_MIG_DISABLE
		if c.mig {
			migMode = nvml.DEVICE_MIG_ENABLE
		}
		devs[i] = &mock.Device{
			GetUUIDFunc: func() (string, nvml.Return) { return fakeUUID(bx.name, i), nvml.SUCCESS },
			GetNameFunc: func() (string, nvml.Return) { return c.name, nvml.SUCCESS },
			GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
				return nvml.Memory{Total: c.memGiB << 30, Free: c.memGiB << 30}, nvml.SUCCESS
			},
			GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) { return nvmlBus(c.bus), nvml.SUCCESS },
			GetMemoryAffinityFunc: func(int, nvml.AffinityScope) ([]uint, nvml.Return) {
				if c.numa < 0 {
					return nil, nvml.ERROR_NOT_SUPPORTED
				}
				mask := make([]uint, 8)
				mask[c.numa/64] = 1 << (c.numa % 64)
				return mask, nvml.SUCCESS
			},
			GetMigModeFunc: func() (int, int, nvml.Return) { return migMode, migMode, nvml.SUCCESS },
			GetNvLinkStateFunc: func(l int) (nvml.EnableState, nvml.Return) {
				switch {
				case len(c.links) == 0:
					return 0, nvml.ERROR_NOT_SUPPORTED
				case l >= len(c.links):
					return 0, nvml.ERROR_INVALID_ARGUMENT
				case c.links[l] == "":
					return nvml.FEATURE_DISABLED, nvml.SUCCESS
				}
				return nvml.FEATURE_ENABLED, nvml.SUCCESS
			},
			GetNvLinkRemoteDeviceTypeFunc: func(l int) (nvml.IntNvLinkDeviceType, nvml.Return) {
				if c.links[l] == linkSwitch {
					return nvml.NVLINK_DEVICE_TYPE_SWITCH, nvml.SUCCESS
				}
				return nvml.NVLINK_DEVICE_TYPE_GPU, nvml.SUCCESS
			},
			GetNvLinkRemotePciInfoFunc: func(l int) (nvml.PciInfo, nvml.Return) {
				if c.links[l] == linkSwitch {
					return nvmlBus(bx.remoteBusOfSwitch), nvml.SUCCESS
				}
				return nvmlBus(c.links[l]), nvml.SUCCESS
			},
			GetTopologyCommonAncestorFunc: func(other nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
				return bx.level(i, pos(other)), nvml.SUCCESS
			},
			GetP2PStatusFunc: func(other nvml.Device, _ nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
				if bx.p2p == nil {
					return nvml.P2P_STATUS_OK, nvml.SUCCESS
				}
				return bx.p2p(i, pos(other)), nvml.SUCCESS
			},
		}
	}
	lib := &mock.Interface{
		DeviceGetCountFunc: func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(devs) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return devs[i], nvml.SUCCESS
		},
		ExtensionsFunc: func() nvml.ExtendedInterface {
			return &mock.ExtendedInterface{LookupSymbolFunc: func(s string) error {
				if slices.Contains(bx.missing, s) {
					return fmt.Errorf("symbol %s not found", s)
				}
				return nil
			}}
		},
		InitFunc:     func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc: func() nvml.Return { return nvml.SUCCESS },
	}
	return lib, devs
}

// pcieBridgeBox is an 8-card PCIe server (two sockets, two PCIe switches per
// socket, two cards per switch) whose cards are NVLink-bridged in pairs,
// three bridges (12 links) per pair. Its library predates
// nvmlDeviceGetNvLinkRemoteDeviceType and nvmlDeviceGetMemoryAffinity, so
// peers come from remote PCI ids and NUMA nodes from sysfs.
func pcieBridgeBox() box {
	buses := []string{"0000:1A:00.0", "0000:1B:00.0", "0000:3D:00.0", "0000:3E:00.0", "0000:89:00.0", "0000:8A:00.0", "0000:B1:00.0", "0000:B2:00.0"}
	bx := box{
		name:    "pcie-bridges",
		missing: []string{symRemoteDeviceType, symMemoryAffinity},
		level: func(a, b int) nvml.GpuTopologyLevel {
			switch {
			case a/2 == b/2:
				return nvml.TOPOLOGY_SINGLE
			case a/4 == b/4:
				return nvml.TOPOLOGY_NODE
			}
			return nvml.TOPOLOGY_SYSTEM
		},
		p2p: func(a, b int) nvml.GpuP2PStatus {
			if a/4 != b/4 {
				return nvml.P2P_STATUS_CHIPSET_NOT_SUPPORTED
			}
			return nvml.P2P_STATUS_OK
		},
	}
	for i, bus := range buses {
		peer := buses[i^1]
		bx.cards = append(bx.cards, boxCard{
			name: "NVIDIA A100 80GB PCIe", memGiB: 80, bus: bus, numa: -1,
			// Links 0-11 bridged; links 12-13 exist but are not cabled.
			links: append(slices.Repeat([]string{peer}, 12), "", ""),
		})
	}
	return bx
}

// pcieBridgeSysfs is the sysfs the bridge box's NUMA nodes come from; GPU7's
// file is missing, so its NUMA node stays unknown.
func pcieBridgeSysfs() map[string]string {
	return map[string]string{
		"bus/pci/devices/0000:1a:00.0/numa_node": "0\n",
		"bus/pci/devices/0000:1b:00.0/numa_node": "0\n",
		"bus/pci/devices/0000:3d:00.0/numa_node": "0\n",
		"bus/pci/devices/0000:3e:00.0/numa_node": "0\n",
		"bus/pci/devices/0000:89:00.0/numa_node": "1\n",
		"bus/pci/devices/0000:8a:00.0/numa_node": "1\n",
		"bus/pci/devices/0000:b1:00.0/numa_node": "-1\n",
	}
}

// meshBox is a 4-card HGX A100 board: every pair joined by 4 NVLinks
// directly (12 per card), two cards per socket.
func meshBox() box {
	buses := []string{"0000:01:00.0", "0000:41:00.0", "0000:81:00.0", "0000:C1:00.0"}
	bx := box{
		name:    "mesh4",
		missing: []string{symRemoteDeviceType},
		level: func(a, b int) nvml.GpuTopologyLevel {
			if a/2 == b/2 {
				return nvml.TOPOLOGY_MULTIPLE
			}
			return nvml.TOPOLOGY_SYSTEM
		},
	}
	for i, bus := range buses {
		var links []string
		for j, peer := range buses {
			if j != i {
				links = append(links, peer, peer, peer, peer)
			}
		}
		bx.cards = append(bx.cards, boxCard{name: "NVIDIA A100-SXM4-80GB", memGiB: 80, bus: bus, numa: i / 2, links: links})
	}
	return bx
}

// dgxA100 returns go-nvml's DGX A100 mock with what it lacks filled in.
//
// dgxa100.New gives 8 A100-SXM4-40GB devices with index, name, memory, MIG
// mode and the MIG profile calls, random UUIDs, and a PCI info without a bus
// id; its LookupSymbol finds every symbol. It has no NVLink, common-ancestor,
// P2P or affinity functions: they are set here as on a real DGX A100 — 12
// NVLinks per card to the six NVSwitches, NUMA nodes 3,3,1,1,7,7,5,5 (NPS4,
// sockets 0-3 and 4-7), PXB within a card pair, NODE within a socket, SYS
// across. UUIDs are fixed for the golden files.
func dgxA100() (*server.Server, []*server.Device) {
	s := dgxa100.New()
	buses := []string{"0000:07:00.0", "0000:0F:00.0", "0000:47:00.0", "0000:4E:00.0", "0000:87:00.0", "0000:90:00.0", "0000:B7:00.0", "0000:BD:00.0"}
	numa := []int{3, 3, 1, 1, 7, 7, 5, 5}
	devs := make([]*server.Device, len(s.Devices))
	for i := range s.Devices {
		devs[i] = s.Devices[i].(*server.Device)
	}
	pos := func(d nvml.Device) int {
		return slices.IndexFunc(devs, func(x *server.Device) bool { return nvml.Device(x) == d })
	}
	for i, d := range devs {
		d.UUID = fakeUUID("dgx-a100", i)
		d.PciBusID = buses[i]
		d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
			p := nvmlBus(d.PciBusID)
			p.PciDeviceId = d.Config.PciDeviceId
			return p, nvml.SUCCESS
		}
		d.GetMemoryAffinityFunc = func(int, nvml.AffinityScope) ([]uint, nvml.Return) {
			mask := make([]uint, 8)
			mask[0] = 1 << numa[i]
			return mask, nvml.SUCCESS
		}
		d.GetNvLinkStateFunc = func(l int) (nvml.EnableState, nvml.Return) {
			if l >= 12 {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			return nvml.FEATURE_ENABLED, nvml.SUCCESS
		}
		d.GetNvLinkRemoteDeviceTypeFunc = func(int) (nvml.IntNvLinkDeviceType, nvml.Return) {
			return nvml.NVLINK_DEVICE_TYPE_SWITCH, nvml.SUCCESS
		}
		d.GetNvLinkRemotePciInfoFunc = func(l int) (nvml.PciInfo, nvml.Return) {
			return nvmlBus(fmt.Sprintf("0000:%02X:00.0", 0xC4+l/2)), nvml.SUCCESS
		}
		d.GetTopologyCommonAncestorFunc = func(other nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
			j := pos(other)
			switch {
			case i/2 == j/2:
				return nvml.TOPOLOGY_MULTIPLE, nvml.SUCCESS
			case i/4 == j/4:
				return nvml.TOPOLOGY_NODE, nvml.SUCCESS
			}
			return nvml.TOPOLOGY_SYSTEM, nvml.SUCCESS
		}
		d.GetP2PStatusFunc = func(nvml.Device, nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
			return nvml.P2P_STATUS_OK, nvml.SUCCESS
		}
	}
	return s, devs
}
