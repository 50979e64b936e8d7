package server

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/testing/protocmp"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// TestCompactCrashChild is the child of TestCompactionCrashLeavesAWholeStore:
// it compacts the store and kills itself (SIGKILL) at the named step.
func TestCompactCrashChild(t *testing.T) {
	dir, step := os.Getenv("HUITIAN_COMPACT_DIR"), os.Getenv("HUITIAN_COMPACT_STEP")
	if dir == "" {
		t.Skip("the child of TestCompactionCrashLeavesAWholeStore")
	}
	compactCrash = func(s string) {
		if s == step {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	if _, _, err := CompactStore(dir); err != nil {
		t.Fatal(err)
	}
}

func dumpOf(t *testing.T, dir string) []byte {
	t.Helper()
	var b bytes.Buffer
	rep, err := DumpStore(dir, &b)
	if err != nil || !rep.OK() {
		t.Fatalf("dump: %v, %+v", err, rep)
	}
	return b.Bytes()
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestCompactionCrashLeavesAWholeStore: a process killed while compacting,
// before the rename, leaves the old file byte for byte, and the next
// open removes the half-made copy; killed after it, the new file holds
// everything. Either way the store reads back the same entries, and the
// service restarts with the same decision. An uninterrupted compaction
// shrinks a store with free pages.
func TestCompactionCrashLeavesAWholeStore(t *testing.T) {
	ts := start(t, func(c *Config) { c.Retention = Retention{} })
	m := newMiniRM("hui", pb.Policy_POLICY_HUITIAN_GREEDY, 5*time.Minute)
	for range 60 {
		m.cycle(t, ts)
	}
	if err := ts.stop(); err != nil {
		t.Fatal(err)
	}
	dir := ts.cfg.DataDir
	path := StorePath(dir)
	want := dumpOf(t, dir)
	for _, step := range []string{"opened", "copied", "renamed"} {
		sum := fileSum(t, path)
		cmd := exec.Command(os.Args[0], "-test.run=^TestCompactCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "HUITIAN_COMPACT_DIR="+dir, "HUITIAN_COMPACT_STEP="+step)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("%s: the child was not killed: %v\n%s", step, err, out)
		}
		if step != "renamed" && fileSum(t, path) != sum {
			t.Errorf("%s: killed before the rename, yet the store file changed", step)
		}
		if got := dumpOf(t, dir); !bytes.Equal(got, want) {
			t.Errorf("%s: the store reads back differently after the crash", step)
		}
		st, err := openBolt(dir, Retention{})
		if err != nil {
			t.Fatalf("%s: open after the crash: %v", step, err)
		}
		st.Close()
		if _, err := os.Stat(path + compactSuffix); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the half-made copy is still there after an open: %v", step, err)
		}
	}
	// Free pages: a large bucket written and deleted.
	st, err := openBolt(dir, Retention{})
	if err != nil {
		t.Fatal(err)
	}
	junk := []byte("junk")
	if err := st.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(junk)
		if err != nil {
			return err
		}
		for i := range 1000 {
			if err := b.Put([]byte{byte(i >> 8), byte(i)}, make([]byte, 4096)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(junk) }); err != nil {
		t.Fatal(err)
	}
	st.Close()
	// A copy of the store as it is, to plan from beside the compacted one.
	ref := t.TempDir()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(StorePath(ref), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	before, after, err := CompactStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compacted: %d -> %d bytes", before, after)
	if after >= before {
		t.Errorf("compaction did not shrink the store: %d -> %d bytes", before, after)
	}
	if got := dumpOf(t, dir); !bytes.Equal(got, want) {
		t.Errorf("the compacted store reads back differently")
	}
	// The compacted store plans as the store it was made from.
	refCfg := ts.cfg
	refCfg.DataDir = ref
	a, b := startAt(t, ts.cfg), startAt(t, refCfg)
	got := m.cycle(t, a, b)
	if diff := cmp.Diff(got[1], got[0], protocmp.Transform()); diff != "" {
		t.Errorf("the compacted store plans differently (-original +compacted):\n%s", diff)
	}
}
