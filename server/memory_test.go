package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/testing/protocmp"

	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/solver"
)

// logSpan returns the first and last positions, and the count, of a
// cluster's log entries.
func logSpan(t *testing.T, ts *testServer, cluster string) (first, last uint64, n int) {
	t.Helper()
	err := ts.store.(*boltStore).db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(clusterBucket(cluster))
		if c == nil || c.Bucket(bucketLog) == nil {
			return nil
		}
		return c.Bucket(bucketLog).ForEach(func(k, _ []byte) error {
			if n == 0 {
				first = binary.BigEndian.Uint64(k)
			}
			last = binary.BigEndian.Uint64(k)
			n++
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return first, last, n
}

// rewriteMemory rewrites every saved memory of a stopped service's store
// as one of another encoding version.
func rewriteMemory(t *testing.T, dir string) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, "huitian.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 0
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.ForEach(func(_ []byte, c *bolt.Bucket) error {
			mb := c.Bucket(bucketMemory)
			if mb == nil {
				return nil
			}
			var keys, vals [][]byte
			mb.ForEach(func(k, v []byte) error {
				keys = append(keys, bytes.Clone(k))
				vals = append(vals, bytes.Replace(v, []byte(fmt.Sprintf(`"version":%d`, solver.MemoryVersion)), []byte(`"version":999`), 1))
				return nil
			})
			for i := range keys {
				if err := mb.Put(keys[i], vals[i]); err != nil {
					return err
				}
				n++
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no saved memory to rewrite")
	}
}

// memoryOf returns what GetStatus says of how the cluster's planner
// began.
func memoryOf(t *testing.T, ts *testServer, cluster string) *pb.PlannerMemory {
	t.Helper()
	st, err := ts.client().GetStatus(context.Background(), connect.NewRequest(&pb.GetStatusRequest{ClusterId: cluster}))
	if err != nil {
		t.Fatal(err)
	}
	if st.Msg.GetMemory() == nil {
		t.Fatalf("%s: GetStatus says nothing of the planner's memory", cluster)
	}
	return st.Msg.GetMemory()
}

// checkMemory checks how each cluster's planner began, as GetStatus says.
func checkMemory(t *testing.T, when string, ts *testServer, rms []*miniRM, origin pb.PlannerMemory_Origin, ignored string) {
	t.Helper()
	for _, m := range rms {
		mem := memoryOf(t, ts, m.id)
		if mem.GetOrigin() != origin || (mem.GetSavedPosition() > 0) != (origin == pb.PlannerMemory_ORIGIN_SAVED) ||
			!strings.Contains(mem.GetIgnored(), ignored) || (ignored == "") != (mem.GetIgnored() == "") || mem.GetMade() == nil {
			t.Errorf("%s, %s: memory %v, want origin %v, ignored %q", when, m.id, mem, origin, ignored)
		}
	}
}

// TestTrimmedLearnerRestartsAsWhole drives a service that trims its
// history to an hour and one that keeps everything with the same cycles
// of a huitian and a huitian-greedy cluster. The trimming one drops the
// learning clusters' old log (their planners' memory is saved), and plans
// as the other throughout; after both restart — the trimming one from its
// saved memory and the log after it, the other from its whole log (its
// saved memory is of another version: ignored, with a warning) — they
// still plan alike. A saved memory of another version in a trimmed log
// starts the memory fresh, with a warning, and the service plans on.
func TestTrimmedLearnerRestartsAsWhole(t *testing.T) {
	trim := start(t, func(c *Config) { c.Retention = Retention{Retain: time.Hour, Plans: 1} })
	keep := start(t, func(c *Config) { c.Retention = Retention{} })
	rms := []*miniRM{
		newMiniRM("hui", pb.Policy_POLICY_HUITIAN, 5*time.Minute),
		newMiniRM("greedy", pb.Policy_POLICY_HUITIAN_GREEDY, 5*time.Minute),
	}
	cycles := func(when string, n int, a, b *testServer) {
		t.Helper()
		for i := range n {
			for _, m := range rms {
				got := m.cycle(t, a, b)
				if diff := cmp.Diff(got[1], got[0], protocmp.Transform()); diff != "" {
					t.Fatalf("%s cycle %d %s: the trimmed service planned differently (-kept +trimmed):\n%s", m.id, i, when, diff)
				}
			}
		}
	}
	cycles("", 200, trim, keep) // 16.7 h of cluster time, an hour kept
	checkMemory(t, "new", trim, rms, pb.PlannerMemory_ORIGIN_LOG, "")
	for _, m := range rms {
		first, last, n := logSpan(t, trim, m.id)
		_, _, all := logSpan(t, keep, m.id)
		names, err := trim.store.Learners(m.id)
		if err != nil || len(names) != 1 {
			t.Fatalf("%s: learners %v, %v", m.id, names, err)
		}
		mem, err := trim.store.Memory(m.id, names[0])
		if err != nil || !mem.ok || mem.whole {
			t.Fatalf("%s: saved memory %v (whole log %v), %v", m.id, mem.ok, mem.whole, err)
		}
		t.Logf("%s: trimmed log holds entries %d..%d (%d), the kept one %d; saved memory %d bytes at %d (%d jobs finished)",
			m.id, first, last, n, all, len(mem.mem), mem.pos, len(m.ended))
		if first <= 1 || n*2 > all {
			t.Errorf("%s: the trimmed log holds entries %d..%d (%d of %d): not trimmed", m.id, first, last, n, all)
		}
	}

	for _, ts := range []*testServer{trim, keep} {
		if err := ts.stop(); err != nil {
			t.Fatal(err)
		}
	}
	rewriteMemory(t, keep.cfg.DataDir)
	var trimLog, keepLog strings.Builder
	trim2 := startAt(t, trim.cfg, WithLogger(newTestLogger(&trimLog)))
	keep2 := startAt(t, keep.cfg, WithLogger(newTestLogger(&keepLog)))
	cycles("after restart", 20, trim2, keep2)
	checkMemory(t, "restarted with its saved memory", trim2, rms, pb.PlannerMemory_ORIGIN_SAVED, "")
	checkMemory(t, "restarted with another version's memory and the whole log", keep2, rms, pb.PlannerMemory_ORIGIN_LOG, "another encoding version")
	for _, m := range rms {
		if mem := memoryOf(t, keep2, m.id); mem.GetReplayed() == 0 {
			t.Errorf("%s rebuilt from the whole log replayed nothing: %v", m.id, mem)
		}
	}
	if !strings.Contains(trimLog.String(), "planner restored from its saved memory") {
		t.Errorf("the trimmed service did not restore its planners' memory:\n%s", trimLog.String())
	}
	if !strings.Contains(keepLog.String(), "level=WARN msg=\"saved planner memory ignored; rebuilding it from the whole log\"") ||
		!strings.Contains(keepLog.String(), "other_version=true") {
		t.Errorf("the service keeping all did not warn of the other version's memory:\n%s", keepLog.String())
	}

	// Another version's memory, and the log before it trimmed: fresh.
	if err := trim2.stop(); err != nil {
		t.Fatal(err)
	}
	rewriteMemory(t, trim.cfg.DataDir)
	var freshLog strings.Builder
	trim3 := startAt(t, trim.cfg, WithLogger(newTestLogger(&freshLog)))
	for range 3 {
		for _, m := range rms {
			m.cycle(t, trim3)
		}
	}
	checkMemory(t, "restarted with another version's memory and a trimmed log", trim3, rms, pb.PlannerMemory_ORIGIN_PARTIAL_LOG, "another encoding version")
	if !strings.Contains(freshLog.String(), "the planner's memory starts fresh") {
		t.Errorf("the trimmed service did not say its planners' memory starts fresh:\n%s", freshLog.String())
	}
}

// TestIdleLearnerDoesNotPinTheLog: a cluster planned with huitian, then
// (after a restart) only with huitian-greedy, still has its log trimmed:
// the idle huitian planner's memory is brought up to date and saved with
// the other's, so its old saved memory does not hold the log whole.
func TestIdleLearnerDoesNotPinTheLog(t *testing.T) {
	ts := start(t, func(c *Config) { c.Retention = Retention{Retain: time.Hour, Plans: 1} })
	m := newMiniRM("c", pb.Policy_POLICY_HUITIAN, 5*time.Minute)
	for range 70 {
		m.cycle(t, ts)
	}
	_, atRestart, _ := logSpan(t, ts, m.id)
	if err := ts.stop(); err != nil {
		t.Fatal(err)
	}
	ts = startAt(t, ts.cfg)
	m.policy = pb.Policy_POLICY_HUITIAN_GREEDY
	for range 200 {
		m.cycle(t, ts)
	}
	if first, last, n := logSpan(t, ts, m.id); 2*n > int(last-atRestart) {
		t.Errorf("the log holds entries %d..%d (%d): not half of what was logged after the restart (%d..) trimmed", first, last, n, atRestart+1)
	}
	names, err := ts.store.Learners(m.id)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"huitian-greedy/0", "huitian/0"}, names); diff != "" {
		t.Errorf("learners (-want +got):\n%s", diff)
	}
}
