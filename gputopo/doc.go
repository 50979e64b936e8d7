// Package gputopo discovers a node's GPU topology — cards, NVLink islands,
// PCIe distances, NUMA affinity — from NVML or from the text of
// `nvidia-smi topo -m`, and turns it into the API's huitian.v1.Node.
//
// Discover reads an initialised nvml.Interface (the real library or a mock);
// Probe and ProbeHost also initialise and shut NVML down, and turn a missing
// library or driver into ErrNoNVML instead of a crash. ParseSMI reads the
// matrix that `nvidia-smi topo -m` prints.
//
// NVLink islands are the connected components of the NVLink graph: every card
// on an NVSwitch board lands in one island, NVLink bridge pairs form islands
// of two, and a card without NVLink is an island of its own. Islands are named
// "nvl0", "nvl1", … in the order of their lowest card index.
//
// MIG: huitian plans whole cards. Discover reports each card's MIG mode, and
// the readable view shows it, but Topology.Node refuses (ErrMIGEnabled) to
// describe a node on which any card has MIG enabled, naming the cards and how
// to turn MIG off. MIG instances are never listed as cards.
package gputopo
