package slurm

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// logBuffer is a log the watch writes from its goroutine while the test
// reads it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// newWatched is a driver on the fake Slurm that watches every `every`
// (0: off), and its log.
func newWatched(t *testing.T, every time.Duration) (*Driver, *fakeSlurm, *logBuffer) {
	t.Helper()
	f := &fakeSlurm{nodes: read(t, "scontrol-show-node.txt"), queue: `{"errors":[],"jobs":[]}`}
	cfg := Defaults()
	cfg.Run = f.run
	cfg.WatchInterval = every
	log := &logBuffer{}
	d, err := New(cfg, slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	return d, f, log
}

// woke reports whether the driver asked for a cycle, and takes the ask as
// the loop does.
func woke(w <-chan struct{}) bool {
	select {
	case <-w:
		return true
	default:
		return false
	}
}

const watchCmd = "squeue --noheader --partition=huitian --format=%i %T"

// TestSlurmWakesOnJobChanges: the watch asks for one cycle per change of
// the partition's jobs — submitted, started, ending, ended, cancelled — and
// none when nothing changed (whatever the order squeue lists them in) or
// squeue failed; its first poll only records what is there; a streak of
// failures is logged once; it polls once a WatchInterval and stops on
// Close.
func TestSlurmWakesOnJobChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = 2 * time.Second
		d, f, log := newWatched(t, every)
		down := errors.New("squeue: error: slurm_load_jobs error: Unable to contact slurm controller")
		steps := []struct {
			what string
			out  string
			err  error
			wake bool
		}{
			{"the first poll only records what is there", "1 PENDING\n2 RUNNING\n", nil, false},
			{"nothing changed, listed in another order", "2 RUNNING\n1 PENDING\n", nil, false},
			{"a job submitted", "1 PENDING\n2 RUNNING\n3_[1-4] PENDING\n", nil, true},
			{"nothing changed since", "1 PENDING\n2 RUNNING\n3_[1-4] PENDING\n", nil, false},
			{"a job started", "1 RUNNING\n2 RUNNING\n3_[1-4] PENDING\n", nil, true},
			{"a job ending", "1 RUNNING\n2 COMPLETING\n3_[1-4] PENDING\n", nil, true},
			{"a job ended", "1 RUNNING\n3_[1-4] PENDING\n", nil, true},
			{"squeue failed", "", down, false},
			{"squeue failed again", "", down, false},
			{"squeue answered what cannot be read", "JOBID STATE\n1 RUNNING\n", nil, false},
			{"squeue works again, nothing changed", "1 RUNNING\n3_[1-4] PENDING\n", nil, false},
			{"squeue failed while an array task started", "", down, false},
			{"squeue works again: the start is seen", "1 RUNNING\n3_1 RUNNING\n3_[2-4] PENDING\n", nil, true},
			{"a requeue", "1 REQUEUE_HOLD\n3_1 RUNNING\n3_[2-4] PENDING\n", nil, true},
			{"jobs cancelled: none left", "", nil, true},
			{"none left still", "\n", nil, false},
		}
		f.answer(steps[0].out, steps[0].err)
		w := d.Wakes()
		for i, s := range steps {
			if i > 0 {
				f.answer(s.out, s.err)
				time.Sleep(every)
			}
			synctest.Wait() // the poll is done
			if got := woke(w); got != s.wake {
				t.Errorf("%s: woke %v, want %v", s.what, got, s.wake)
			}
			if n := f.ran(watchCmd); n != i+1 {
				t.Fatalf("%s: %d polls, want %d", s.what, n, i+1)
			}
		}
		if n := log.count("squeue failed"); n != 2 {
			t.Errorf("%d warnings for 2 streaks of failed polls, want 2; log:\n%s", n, log)
		}
		if n := log.count("squeue works again"); n != 2 {
			t.Errorf("%d notes of the end of 2 streaks, want 2; log:\n%s", n, log)
		}

		// Close stops the watch (synctest.Test fails on a goroutine left
		// behind); Wakes afterwards starts none.
		closed := make(chan error, 1)
		go func() { closed <- d.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Minute):
			t.Fatal("Close did not return in a minute")
		}
		f.answer("9 PENDING\n", nil)
		d.Wakes()
		time.Sleep(10 * every)
		if n := f.ran(watchCmd); n != len(steps) {
			t.Errorf("%d polls after Close, want none", n-len(steps))
		}
		if woke(w) {
			t.Errorf("woke after Close")
		}
		if err := d.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		// Nothing but the watch ran: it never touches the jobs.
		if n := f.ran(""); n != len(steps) {
			t.Errorf("%d calls, want only the watch's %d squeue", n, len(steps))
		}
	})
}

// TestSlurmWatchOff: with WatchInterval 0 Wakes never fires and Slurm is
// never asked; Close without a watch returns at once.
func TestSlurmWatchOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, f, _ := newWatched(t, 0)
		w := d.Wakes()
		f.answer("1 PENDING\n", nil)
		time.Sleep(time.Hour)
		if woke(w) || f.ran("squeue") != 0 {
			t.Errorf("watch off: woke %v, %d calls", woke(w), f.ran(""))
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSlurmCloseCancelsAPoll: Close does not wait out a squeue that hangs
// (Exec's command timeout is 30 s): it cancels it, and the cancelled poll
// is not a failure to log.
func TestSlurmCloseCancelsAPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, f, log := newWatched(t, time.Second)
		f.block = true
		d.Wakes()
		synctest.Wait() // the poll hangs
		begin := time.Now()
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(begin); waited != 0 {
			t.Errorf("Close waited %s", waited)
		}
		if n := log.count("squeue failed"); n != 0 {
			t.Errorf("a cancelled poll was logged as a failure:\n%s", log)
		}
	})
}

func TestSlurmConfigWatchInterval(t *testing.T) {
	for _, tc := range []struct {
		what  string
		every time.Duration
		ok    bool
	}{
		{"the default", 2 * time.Second, true},
		{"off", 0, true},
		{"off, negative", -time.Second, true},
		{"the shortest", 100 * time.Millisecond, true},
		{"too short: slurmctld would answer squeue all day", 10 * time.Millisecond, false},
	} {
		cfg := Defaults()
		cfg.WatchInterval = tc.every
		err := cfg.Validate()
		if (err == nil) != tc.ok || err != nil && !strings.Contains(err.Error(), "watch interval") {
			t.Errorf("%s (%s): Validate() = %v", tc.what, tc.every, err)
		}
	}
	// Every problem at once, the watch interval's among them.
	err := Config{WatchInterval: time.Millisecond}.Validate()
	for _, field := range []string{"cluster id", "partition", "start timeout", "watch interval"} {
		if err == nil || !strings.Contains(err.Error(), field+":") {
			t.Errorf("Validate() = %v, want a problem with the %s", err, field)
		}
	}
}
