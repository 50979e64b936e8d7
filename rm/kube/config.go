package kube

import (
	"errors"
	"fmt"
	"time"
)

// Attributes map a DRA driver's device attributes to huitian's card
// fields. Names may be given bare ("uuid") or qualified with the driver's
// domain ("gpu.nvidia.com/uuid"); a bare name also matches the qualified one.
type Attributes struct {
	// Index is an int attribute: the card's index on its node (required).
	Index string
	// UUID is a string attribute, unique in the cluster; claims select
	// planned cards by it. Without it they select by index on the node.
	UUID string
	// Model is a string attribute: the card's product name.
	Model string
	// Island is a string attribute naming the card's NVLink island on its
	// node; cards without it are one pool.
	Island string
	// Memory is a capacity: the card's memory.
	Memory string
}

// NVIDIAAttributes are the attribute names of the NVIDIA DRA driver
// (k8s-dra-driver-gpu, driver gpu.nvidia.com). It publishes no NVLink
// island per card: set Island where a driver or a relabelling adds one.
var NVIDIAAttributes = Attributes{Index: "index", UUID: "uuid", Model: "productName", Island: "nvlinkIsland", Memory: "memory"}

// Config is the driver's configuration; start from Defaults.
type Config struct {
	// ClusterID names the cluster to the planning service.
	ClusterID string
	// Queue is the value of the huitian.dev/queue label on the Jobs it manages.
	Queue string
	// Namespace limits it to one namespace; "" watches all.
	Namespace string
	// Driver is the DRA driver whose ResourceSlices list the GPUs.
	Driver string
	// DeviceClass is used in a claim template that names none.
	DeviceClass string
	// Attributes map the driver's attributes to card fields.
	Attributes Attributes
	// SwitchLabel is a node label whose value names the node's switch (or
	// rack, or zone) domain; "" puts every node in one domain.
	SwitchLabel string
	// CatchUp bounds how long a snapshot waits for the informers to show the
	// adapter's own last writes.
	CatchUp time.Duration
	// Clock is the driver's time source (time.Now when nil).
	Clock func() time.Time
}

// Defaults returns the documented defaults: the NVIDIA DRA driver, queue
// "default", every namespace.
func Defaults() Config {
	return Config{
		ClusterID:   "kubernetes",
		Queue:       "default",
		Driver:      "gpu.nvidia.com",
		Attributes:  NVIDIAAttributes,
		SwitchLabel: "topology.kubernetes.io/zone",
		CatchUp:     10 * time.Second,
	}
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	if c.ClusterID == "" {
		errs = append(errs, errors.New("cluster id: must not be empty"))
	}
	if c.Queue == "" {
		errs = append(errs, errors.New("queue: must not be empty"))
	}
	if c.Driver == "" {
		errs = append(errs, errors.New("dra driver: must not be empty"))
	}
	if c.Attributes.Index == "" {
		errs = append(errs, errors.New("index attribute: must not be empty"))
	}
	if c.CatchUp < 0 {
		errs = append(errs, fmt.Errorf("catch-up: must be ≥ 0, got %s", c.CatchUp))
	}
	return errors.Join(errs...)
}

func (c Config) now() time.Time {
	if c.Clock != nil {
		return c.Clock()
	}
	return time.Now()
}
