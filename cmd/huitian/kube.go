package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/huitian/huitian/rm/kube"
)

func newKubeCmd() *cobra.Command {
	cfg := kube.Defaults()
	var (
		df         driverFlags
		kubeconfig string
		qps        float32
		burst      int
	)
	cmd := &cobra.Command{
		Use:   "kube",
		Short: "Carry out huitian's plans on a Kubernetes cluster (card-exact through DRA)",
		Long: `kube runs the Kubernetes adapter: every --interval it reads the GPU
cards from the DRA ResourceSlices of --dra-driver, the queue from suspended
batch/v1 Jobs labelled huitian.dev/queue=<--queue>, asks huitian serve for a
plan, suspends the Jobs it preempts, admits the Jobs it starts on exactly the
planned cards (a CEL selector on the cards' UUIDs in the Job's claim
template, the pods pinned to the planned nodes), and reports what happened.
Users see the decision on each Job (kubectl describe job): Events, the
HuitianScheduled condition and huitian.dev/* annotations.

It reads its Kubernetes credentials from --kubeconfig, or in a pod from its
ServiceAccount. Its state lives on the Jobs: a restart loses nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := df.check(cmd); err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return exitWith(2, err)
			}
			rc, err := restConfig(kubeconfig)
			if err != nil {
				return exitWith(2, err)
			}
			// A cycle writes to many Jobs (admissions, Events, users' views):
			// client-go's default of 5 requests a second would make it slow.
			rc.QPS, rc.Burst = qps, burst
			cs, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd)
			defer stop()
			d, err := kube.New(ctx, cs, cfg, df.log)
			if err != nil {
				return err
			}
			df.log.Info("huitian kube: running", "server", df.server, "queue", cfg.Queue, "driver", cfg.Driver,
				"namespace", cfg.Namespace, "cluster", cfg.ClusterID, "interval", df.interval)
			return df.run(ctx, d)
		},
	}
	df.register(cmd)
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file (default $KUBECONFIG; in a pod, its ServiceAccount)")
	f.StringVar(&cfg.Queue, "queue", cfg.Queue, "manage Jobs labelled "+kube.LabelQueue+"=QUEUE")
	f.StringVar(&cfg.Namespace, "namespace", "", "watch one namespace (default: all)")
	f.StringVar(&cfg.ClusterID, "cluster-id", cfg.ClusterID, "the cluster's id at huitian serve")
	f.StringVar(&cfg.Driver, "dra-driver", cfg.Driver, "DRA driver whose ResourceSlices list the GPUs")
	f.StringVar(&cfg.DeviceClass, "device-class", "", "DeviceClass for a claim template that names none")
	f.StringVar(&cfg.Attributes.Index, "attr-index", cfg.Attributes.Index, "device attribute (int): the card's index on its node")
	f.StringVar(&cfg.Attributes.UUID, "attr-uuid", cfg.Attributes.UUID, "device attribute (string): the card's UUID")
	f.StringVar(&cfg.Attributes.Model, "attr-model", cfg.Attributes.Model, "device attribute (string): the card's model")
	f.StringVar(&cfg.Attributes.Island, "attr-nvlink-island", cfg.Attributes.Island, "device attribute (string): the card's NVLink island on its node")
	f.StringVar(&cfg.Attributes.Memory, "capacity-memory", cfg.Attributes.Memory, "device capacity: the card's memory")
	f.StringVar(&cfg.SwitchLabel, "switch-label", cfg.SwitchLabel, "node label naming the node's switch/rack domain (\"\": one domain)")
	f.Float32Var(&qps, "kube-qps", 50, "most Kubernetes API requests a second")
	f.IntVar(&burst, "kube-burst", 100, "Kubernetes API request burst")
	df.registerLog(cmd)
	return cmd
}

// restConfig reads a kubeconfig, or the pod's ServiceAccount without one.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		c, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no --kubeconfig and not in a pod: %w", err)
		}
		return c, nil
	}
	c, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	return c, nil
}
