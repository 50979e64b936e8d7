package gputopo

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// ErrNoNVML is returned when NVML cannot be initialised on this machine: the
// library (libnvidia-ml.so.1) is missing, the kernel driver is not loaded,
// the two do not match, or Init failed for another reason.
var ErrNoNVML = errors.New("gputopo: NVML unavailable")

// ProbeHost discovers this machine's GPUs through the real NVML library
// (nvml.New, which loads libnvidia-ml.so.1 on Init).
func ProbeHost(nodeName string, opts ...Option) (*Topology, error) {
	return Probe(nvml.New(), nodeName, opts...)
}

// Probe initialises lib, runs Discover and shuts lib down. A library that
// cannot be loaded or initialised gives an error wrapping ErrNoNVML; a panic
// inside the NVML binding comes back as an error, never as a crash.
func Probe(lib nvml.Interface, nodeName string, opts ...Option) (t *Topology, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("gputopo: NVML failed: %v", r)
		}
	}()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, initError(ret)
	}
	defer func() {
		if ret := lib.Shutdown(); ret != nvml.SUCCESS && err == nil {
			t, err = nil, fmt.Errorf("gputopo: NVML shutdown: %w", ret)
		}
	}()
	return Discover(lib, nodeName, opts...)
}

// initError explains why nvml.Init failed, in terms of what to fix.
func initError(ret nvml.Return) error {
	var why string
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		why = "libnvidia-ml.so.1 could not be loaded; is the NVIDIA driver installed?"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		why = "the NVIDIA kernel driver is not loaded"
	case nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		why = "libnvidia-ml and the loaded kernel driver differ in version; reload the driver or reboot"
	case nvml.ERROR_NO_PERMISSION:
		why = "no permission to open the NVIDIA devices"
	default:
		why = "init failed"
	}
	return fmt.Errorf("%w: %s (%w)", ErrNoNVML, why, ret)
}
