package server

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The repository root, from this package's folder.
const repoRoot = ".."

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	binDir    string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// huitianBinary builds cmd/huitian once per test run.
func huitianBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "huitian-bin-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "huitian")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/huitian")
		cmd.Dir = repoRoot
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = &buildError{err: err, out: string(out)}
		}
	})
	if buildErr != nil {
		t.Fatalf("build huitian: %v", buildErr)
	}
	return binPath
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// child is a `huitian serve` process.
type child struct {
	cmd    *exec.Cmd
	URL    string // http://host:port
	Addr   string // host:port
	stderr *strings.Builder
	mu     *sync.Mutex
	done   chan error
}

// serveChild starts `huitian serve --listen 127.0.0.1:0` with extra
// arguments and waits for its "listening on" line.
func serveChild(t *testing.T, args ...string) *child {
	t.Helper()
	bin := huitianBinary(t)
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stderr: &strings.Builder{}, mu: &sync.Mutex{}, done: make(chan error, 1)}
	cmd.Stderr = lockedWriter{c.mu, c.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "huitian serve: listening on "); ok {
				urls <- u
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() { c.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-c.done
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case u := <-urls:
		c.URL = u
		c.Addr = strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
	case err := <-c.done:
		t.Fatalf("huitian serve exited before listening: %v\n%s", err, c.log())
	case <-ctx.Done():
		t.Fatalf("huitian serve did not print its address within 30s\n%s", c.log())
	}
	return c
}

func (c *child) log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// needTool fails (never skips) when a tool is missing, naming the make
// target that installs it.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: run `make deps` (scripts/deps.sh installs it with apt-get)", name)
	}
	return p
}
