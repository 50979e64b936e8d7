package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/huitian/huitian/gputopo"
)

// exitNoGPU is the exit status of `huitian topo` where NVML, the NVIDIA
// driver or any GPU is missing.
const exitNoGPU = 3

func newTopoCmd() *cobra.Command {
	var (
		asJSON  bool
		node    string
		fromSMI string
	)
	cmd := &cobra.Command{
		Use:   "topo",
		Short: "Print this node's GPU topology as the API wants it",
		Long: `topo reads this node's GPUs through NVML (cards, NVLink islands, PCIe
distances, NUMA nodes) and prints them as a matrix like ` + "`nvidia-smi topo -m`" + `,
or, with --json, as the API's Node in protojson, ready to paste into a Cluster.

With --from-smi it reads the output of ` + "`nvidia-smi topo -m`" + ` from a file
(- for standard input) instead of asking NVML; that gives islands, PCIe levels
and NUMA nodes, but no UUIDs, models, memory or PCI bus ids.

Exit status 3: NVML, the NVIDIA driver or a GPU is missing on this machine.
A node with MIG enabled on any card is refused with --json: huitian plans
whole cards.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			name := node
			if name == "" {
				h, err := os.Hostname()
				if err != nil {
					return fmt.Errorf("topo: no host name (%w); name the node with --node", err)
				}
				name = h
			}
			var (
				topo *gputopo.Topology
				err  error
			)
			if fromSMI != "" {
				topo, err = readSMI(cmd.InOrStdin(), fromSMI, name)
			} else {
				topo, err = gputopo.ProbeHost(name)
				if errors.Is(err, gputopo.ErrNoNVML) || errors.Is(err, gputopo.ErrNoCards) {
					return exitWith(exitNoGPU, err)
				}
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !asJSON {
				return topo.WriteText(out)
			}
			n, err := topo.Node()
			if err != nil {
				return err
			}
			b, err := gputopo.MarshalNode(n)
			if err != nil {
				return err
			}
			_, err = out.Write(b)
			return err
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print the API's Node as protojson")
	f.StringVar(&node, "node", "", "the node's name (default: the host name)")
	f.StringVar(&fromSMI, "from-smi", "", "read the output of nvidia-smi topo -m from `FILE` (- for stdin) instead of NVML")
	return cmd
}

// readSMI parses `nvidia-smi topo -m` output from path, or from stdin for "-".
func readSMI(stdin io.Reader, path, node string) (*gputopo.Topology, error) {
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("topo: %w", err)
		}
		defer f.Close()
		r = f
	}
	t, err := gputopo.ParseSMI(r, node)
	if err != nil && path != "-" {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, err
}
