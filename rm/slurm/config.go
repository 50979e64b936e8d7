package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Runner runs one Slurm command and returns its standard output. An exit
// status other than 0 is an error that carries the command's stderr.
type Runner func(ctx context.Context, name string, args ...string) ([]byte, error)

// Exec runs Slurm's commands from PATH (SLURM_CONF and the rest of the
// environment are inherited), each bounded by timeout.
func Exec(timeout time.Duration) Runner {
	return func(ctx context.Context, name string, args ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var out, errb bytes.Buffer
		c := exec.CommandContext(ctx, name, args...)
		c.Stdout, c.Stderr = &out, &errb
		if err := c.Run(); err != nil {
			msg := strings.TrimSpace(errb.String())
			if len(msg) > 500 {
				msg = msg[:500] + "…"
			}
			return out.Bytes(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, msg)
		}
		return out.Bytes(), nil
	}
}

// Config is the driver's configuration; start from Defaults.
type Config struct {
	// ClusterID names the cluster to the planning service.
	ClusterID string
	// Partition is the Slurm partition whose jobs huitian plans; its nodes
	// are the cluster.
	Partition string
	// TopologyDir holds a huitian topology file per node, NODE.json (the
	// output of `huitian topo --json` on that node): the cards' UUIDs,
	// models, memory and NVLink islands. "" or a missing file: the cards
	// are numbered from Slurm's Gres (a GRES type is taken as the model).
	TopologyDir string
	// StartTimeout is how long a released job may stay pending before the
	// driver holds it again and plans it anew (the planned GPUs were not
	// free to Slurm after all).
	StartTimeout time.Duration
	// WatchInterval is how often the driver asks Slurm whether the
	// partition's jobs changed, once rm.Loop takes its Wakes: one squeue
	// call listing the ids and states of the jobs not yet finished. A job
	// submitted, started, ended, cancelled or requeued then asks the loop
	// for a cycle at once (at least its MinGap after the last), not at its
	// next interval. 0 or less turns the watch off: cycles come on the
	// loop's interval, replan_by and notices alone; otherwise it is at
	// least 100ms. Defaults sets 2s.
	WatchInterval time.Duration
	// Run runs Slurm's commands (Exec(30s) when nil).
	Run Runner
	// Clock is the driver's time source (time.Now when nil).
	Clock func() time.Time
}

// Defaults returns the documented defaults: partition "huitian", cluster
// id "slurm", start timeout 2m, watch interval 2s.
func Defaults() Config {
	return Config{ClusterID: "slurm", Partition: "huitian", StartTimeout: 2 * time.Minute, WatchInterval: 2 * time.Second}
}

// minWatchInterval is the shortest WatchInterval that is not off: every
// poll is a request to slurmctld, and the loop plans at most once a MinGap
// (1s by default) however often it is woken.
const minWatchInterval = 100 * time.Millisecond

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	if c.ClusterID == "" {
		errs = append(errs, errors.New("cluster id: must not be empty"))
	}
	if c.Partition == "" || strings.ContainsAny(c.Partition, " ,=") {
		errs = append(errs, fmt.Errorf("partition: want one partition name, got %q", c.Partition))
	}
	if c.StartTimeout <= 0 {
		errs = append(errs, fmt.Errorf("start timeout: must be > 0, got %s", c.StartTimeout))
	}
	if c.WatchInterval > 0 && c.WatchInterval < minWatchInterval {
		errs = append(errs, fmt.Errorf("watch interval: want 0 (off) or at least %s, got %s", minWatchInterval, c.WatchInterval))
	}
	return errors.Join(errs...)
}

func (c Config) now() time.Time {
	if c.Clock != nil {
		return c.Clock()
	}
	return time.Now()
}
