package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"k8s.io/client-go/kubernetes"

	"github.com/huitian/huitian/gputopo"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/rm/kube"
)

// exitNoGPU is the exit status of `huitian topo` where NVML, the NVIDIA
// driver or any GPU is missing.
const exitNoGPU = 3

func newTopoCmd() *cobra.Command {
	var (
		asJSON   bool
		node     string
		fromSMI  string
		fromJSON string
		publish  bool
		kubecfg  string
		driver   string
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
whole cards.

With --publish-slice it publishes the node's cards to Kubernetes as a DRA
ResourceSlice of --dra-driver (one device gpu-<index> per card, attributes
index, uuid, productName, nvlinkIsland and capacity memory: what huitian
kube reads with --attr-* at their defaults), for clusters without a DRA
driver. --from-json reads the node (the API's Node in protojson, as --json
prints it) from a file instead of this machine's GPUs.`,
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
			if fromJSON != "" {
				if !publish {
					return exitWith(2, errors.New("--from-json goes with --publish-slice"))
				}
				n, err := readNodeJSON(fromJSON)
				if err != nil {
					return err
				}
				return publishSlice(cmd, n, kubecfg, driver)
			}
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
			if publish {
				n, err := topo.Node()
				if err != nil {
					return err
				}
				return publishSlice(cmd, n, kubecfg, driver)
			}
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
	f.BoolVar(&publish, "publish-slice", false, "publish the node's cards as a DRA ResourceSlice")
	f.StringVar(&fromJSON, "from-json", "", "with --publish-slice: read the node from `FILE` (protojson Node) instead of this machine")
	f.StringVar(&kubecfg, "kubeconfig", os.Getenv("KUBECONFIG"), "with --publish-slice: kubeconfig file (default $KUBECONFIG; in a pod, its ServiceAccount)")
	f.StringVar(&driver, "dra-driver", "gpu.huitian.dev", "with --publish-slice: the slice's DRA driver name")
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

// readNodeJSON reads the API's Node in protojson.
func readNodeJSON(path string) (*pb.Node, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("topo: %w", err)
	}
	n := &pb.Node{}
	if err := protojson.Unmarshal(b, n); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if n.GetName() == "" || len(n.GetCards()) == 0 {
		return nil, fmt.Errorf("%s: want a node with a name and cards", path)
	}
	return n, nil
}

// publishSlice creates or replaces the node's ResourceSlice.
func publishSlice(cmd *cobra.Command, n *pb.Node, kubeconfig, driver string) error {
	rc, err := restConfig(kubeconfig)
	if err != nil {
		return exitWith(2, err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	s, err := kube.PublishSlice(cmd.Context(), cs, kube.SliceFor(n, driver, kube.NVIDIAAttributes))
	if err != nil {
		return fmt.Errorf("topo: publish the slice of node %s: %w", n.GetName(), err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "resourceslice/%s: %d cards of node %s, driver %s, generation %d\n",
		s.Name, len(s.Spec.Devices), n.GetName(), driver, s.Spec.Pool.Generation)
	return nil
}
