// Package e2etest holds what the end-to-end tests (test/e2e/kubernetes,
// test/e2e/slurm) share: the huitian processes they run and restart, and
// waiting for a condition with a guard against a hang.
package e2etest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Proc is a huitian process a test runs and can restart; its standard
// output and error are appended to Log.
type Proc struct {
	T    testing.TB
	Name string
	Args []string
	Log  string
	// Done receives the process's exit once it ends.
	Done chan error

	cmd *exec.Cmd
}

// Start starts the process.
func (p *Proc) Start() {
	p.T.Helper()
	f, err := os.OpenFile(p.Log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		p.T.Fatal(err)
	}
	p.cmd = exec.Command(p.Args[0], p.Args[1:]...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		p.T.Fatalf("start %s: %v", p.Name, err)
	}
	p.Done = make(chan error, 1)
	go func() { p.Done <- p.cmd.Wait(); f.Close() }()
}

// Stop sends SIGTERM and waits, at most a minute, then kills it; a clean
// drain exits 0.
func (p *Proc) Stop() error {
	if p.cmd == nil {
		return nil
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.Done:
		p.cmd = nil
		return err
	case <-time.After(time.Minute):
		p.cmd.Process.Kill()
		p.cmd = nil
		return fmt.Errorf("%s did not stop in a minute after SIGTERM", p.Name)
	}
}

// ServeURL waits for the line huitian serve prints with its address, in
// the log of p; it fails the test if the process exits first.
func ServeURL(t testing.TB, p *Proc) string {
	t.Helper()
	for {
		if b, err := os.ReadFile(p.Log); err == nil {
			sc := bufio.NewScanner(strings.NewReader(string(b)))
			for sc.Scan() {
				if u, ok := strings.CutPrefix(sc.Text(), "huitian serve: listening on "); ok {
					return u
				}
			}
		}
		select {
		case err := <-p.Done:
			b, _ := os.ReadFile(p.Log)
			t.Fatalf("huitian serve exited (%v):\n%s", err, b)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// WaitFor polls cond every interval until it holds or the budget runs out
// (a guard against a hang, not a timed assertion).
func WaitFor(t testing.TB, what string, budget, interval time.Duration, cond func() bool) {
	t.Helper()
	end := time.Now().Add(budget)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("gave up waiting for %s after %s", what, budget)
		}
		time.Sleep(interval)
	}
}
