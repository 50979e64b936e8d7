package slurm

import (
	"context"
	"maps"
	"time"
)

// Wakes is rm.Waker's. Slurm has no watch an outside program can
// subscribe to, so the first call starts a poll: every WatchInterval one
// `squeue --noheader --partition=P --format="%i %T"` lists the ids and
// states of the partition's jobs that are not finished (pending, running,
// suspended, completing), and a change from the last poll — a job
// submitted, started, requeued, ending or ended, cancelled — asks for a
// cycle. The first poll only records what is there; a failed poll is
// logged once per streak of failures and asks for nothing. With the watch
// off (WatchInterval ≤ 0) or after Close, the channel never fires.
//
// Jobs of other partitions on the partition's nodes are not watched: GPUs
// they free are planned at the next cycle.
func (d *Driver) Wakes() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stop == nil && !d.closed && d.cfg.WatchInterval > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		d.stop, d.stopped = cancel, make(chan struct{})
		go d.watch(ctx, d.stopped)
	}
	return d.wake
}

// Close stops the watch that Wakes started and waits for it to return
// (a poll in flight is cancelled). Wakes after Close starts none. It is
// safe to call more than once, and from any goroutine.
func (d *Driver) Close() error {
	d.mu.Lock()
	d.closed = true
	stop, stopped := d.stop, d.stopped
	d.mu.Unlock()
	if stop != nil {
		stop()
		<-stopped
	}
	return nil
}

// watch polls Slurm every WatchInterval until ctx ends, then closes done.
func (d *Driver) watch(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(d.cfg.WatchInterval)
	defer t.Stop()
	var last map[string]string // nil until a poll worked: no baseline
	fails := 0                 // polls failed in a row
	for {
		jobs, err := d.poll(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil:
			if fails == 0 {
				d.log.Warn("watching Slurm's jobs: squeue failed; cycles come on the interval until it works again", "error", err)
			}
			fails++
		default:
			if fails > 0 {
				d.log.Info("watching Slurm's jobs: squeue works again", "failed_polls", fails)
				fails = 0
			}
			// A change during a streak of failures is a change all the same.
			if last != nil && !maps.Equal(last, jobs) {
				d.log.Debug("Slurm's jobs changed: a cycle asked", "jobs", len(jobs))
				d.poke()
			}
			last = jobs
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// poll lists the partition's unfinished jobs: id → state.
func (d *Driver) poll(ctx context.Context) (map[string]string, error) {
	out, err := d.run(ctx, "squeue", "--noheader", "--partition="+d.cfg.Partition, "--format=%i %T")
	if err != nil {
		return nil, err
	}
	js, err := ParseJobStates(out)
	if err != nil {
		return nil, err
	}
	jobs := make(map[string]string, len(js))
	for _, j := range js {
		jobs[j.ID] = j.State
	}
	return jobs, nil
}

// poke asks for a cycle; one asked and not yet taken is enough.
func (d *Driver) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}
