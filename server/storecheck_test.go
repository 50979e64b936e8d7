package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"connectrpc.com/connect"
	bolt "go.etcd.io/bbolt"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// storeWithEvents serves a store, reports n started events for cluster c1
// (job ids ev-0000…), and stops; it returns the data folder.
func storeWithEvents(t *testing.T, n int, opts ...Option) string {
	t.Helper()
	cfg := Defaults()
	cfg.DataDir = t.TempDir()
	ts := startAt(t, cfg, opts...)
	for i := 0; i < n; i += 500 {
		var evs []*pb.JobEvent
		for k := i; k < min(n, i+500); k++ {
			evs = append(evs, started(fmt.Sprintf("ev-%04d", k), 0, false))
		}
		report(t, ts, "c1", evs...)
	}
	if err := ts.stop(); err != nil {
		t.Fatal(err)
	}
	return cfg.DataDir
}

func openAt(dir string, opts ...Option) (*Server, error) {
	cfg := Defaults()
	cfg.DataDir = dir
	return New(cfg, opts...)
}

// TestDamagedStoreStopsTheServer: a store that is empty where it held
// data, cut short, or of an unknown format stops New with ErrStoreDamaged
// naming the file and the recover command. Before the fix, a zero-byte
// store started empty (every event gone, no warning) and a store cut to
// half its length crashed the process (SIGSEGV in bbolt's freelist load).
func TestDamagedStoreStopsTheServer(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"zero bytes", func(t *testing.T, path string) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"cut to half", func(t *testing.T, path string) {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
		{"unknown format", func(t *testing.T, path string) {
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.Update(func(tx *bolt.Tx) error {
				return tx.Bucket(bucketFormat).Put(keyFormat, []byte("huitian-store/99"))
			}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := storeWithEvents(t, 1000)
			c.damage(t, StorePath(dir))
			s, err := openAt(dir)
			if err == nil {
				s.Close()
				t.Fatal("New on a damaged store: started, want ErrStoreDamaged")
			}
			if !errors.Is(err, ErrStoreDamaged) || !strings.Contains(err.Error(), StorePath(dir)) || !strings.Contains(err.Error(), "huitian store recover") {
				t.Errorf("New: %v; want ErrStoreDamaged naming the file and `huitian store recover`", err)
			}
			rep, err := CheckStore(dir)
			if err != nil || rep.OK() {
				t.Errorf("CheckStore: %v, ok %v; want a report of the damage", err, rep != nil && rep.OK())
			}
		})
	}
}

// TestFlippedEventIsDataLossAndRecoverable: an event whose bytes changed
// on disk is found by `store check`, answers DataLoss (not Internal) when
// a Learner replays it, and `store recover` copies every other event into
// a new store the service starts on. Before the fix, the service fed the
// damaged event to the Learner (or answered Internal, "replay …
// panicked", for every Plan of that cluster, also after a restart).
func TestFlippedEventIsDataLossAndRecoverable(t *testing.T) {
	dir := storeWithEvents(t, 200)
	raw, err := os.ReadFile(StorePath(dir))
	if err != nil {
		t.Fatal(err)
	}
	// Flip a byte of one stored event's job id (in the log, not the key
	// index: the log entry follows the tag byte 'e' and the field header).
	i := bytes.Index(raw, []byte("ev-0123"))
	for i >= 0 && !(i >= 3 && raw[i-3] == tagEvent) {
		j := bytes.Index(raw[i+1:], []byte("ev-0123"))
		if j < 0 {
			i = -1
			break
		}
		i += 1 + j
	}
	if i < 0 {
		t.Fatal("event ev-0123 not found in the log")
	}
	raw[i+2] = 0x01
	if err := os.WriteFile(StorePath(dir), raw, 0o600); err != nil {
		t.Fatal(err)
	}

	rep, err := CheckStore(dir)
	if err != nil || rep.OK() || len(rep.Clusters) != 1 || rep.Clusters[0].Bad != 1 || rep.Clusters[0].Events != 199 {
		t.Fatalf("CheckStore: %v %+v; want 199 events and 1 unreadable entry", err, rep)
	}

	var ls learners
	s, err := openAt(dir, WithPlannerFactory(ls.factory))
	if err != nil {
		t.Fatalf("New: %v (the damage is in one value; the service starts and says so per call)", err)
	}
	ts := serveExisting(t, s)
	_, err = ts.client().Plan(context.Background(), connect.NewRequest(planRequest("c1", 2)))
	if connect.CodeOf(err) != connect.CodeDataLoss || !strings.Contains(err.Error(), "huitian store check") {
		t.Errorf("Plan replaying a damaged event: %v, want DataLoss pointing at `huitian store check`", err)
	}
	if err := ts.stop(); err != nil {
		t.Fatal(err)
	}

	to := t.TempDir()
	rep, err = RecoverStore(dir, to)
	if err != nil || rep.Clusters[0].Recovered != 199 {
		t.Fatalf("RecoverStore: %v %+v; want 199 events recovered", err, rep)
	}
	s, err = openAt(to, WithPlannerFactory(ls.factory))
	if err != nil {
		t.Fatalf("New on the recovered store: %v", err)
	}
	ts = serveExisting(t, s)
	if _, err := ts.client().Plan(context.Background(), connect.NewRequest(planRequest("c1", 2))); err != nil {
		t.Errorf("Plan on the recovered store: %v", err)
	}
	st, err := ts.client().GetStatus(context.Background(), connect.NewRequest(&pb.GetStatusRequest{ClusterId: "c1"}))
	if err != nil || st.Msg.GetEvents() != 199 {
		t.Errorf("GetStatus on the recovered store: %v, %d events; want 199", err, st.Msg.GetEvents())
	}
	if got := len(ls.last().observed); got != 199 {
		t.Errorf("the rebuilt Learner saw %d events, want 199", got)
	}
}
