package server

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/huitian/huitian/model"
)

// store is what the service keeps on disk: per cluster, an append-only
// log of what the planners learn from (events and decisions), dedup keys
// of the events, each job's latest reported state, the last plan's
// per-job insight, and the newest whole plan records. Every write is
// durable (fsync'd) when it returns. What is kept, and for how long, is
// the Retention (retain.go): Trim drops the history nothing needs.
type store interface {
	// Append stores the events not stored before, in order, and says which
	// ones were new.
	Append(cluster string, evs []storedEvent) (fresh []bool, err error)
	// Replay calls fn with the cluster's log entries after position after
	// (0: all), in stored order: events (tagEvent, the wire bytes) and
	// decisions (tagDecided, a decidedRecord).
	Replay(cluster string, after uint64, fn func(tag byte, raw []byte) error) error
	// EventCount is how many events the cluster has stored.
	EventCount(cluster string) (int64, error)
	// Job returns a job's latest reported state.
	Job(cluster, job string) (jobRecord, bool, error)
	// PutPlan replaces the cluster's last-plan record and, when decided is
	// not nil, appends it to the log after the events stored so far.
	PutPlan(cluster string, rec, decided []byte) error
	// Plans returns every cluster's last-plan record.
	Plans() (map[string][]byte, error)
	// PutMemory stores the cluster's Learners' saved memories (by
	// learnerName), each at the log's current position.
	PutMemory(cluster string, mems map[string][]byte) error
	// Memory returns a Learner's stored memory, and whether the log is
	// still whole.
	Memory(cluster, learner string) (savedMemory, error)
	// Learners returns the names (learnerName) of the Learners whose
	// decisions are in the cluster's log.
	Learners(cluster string) ([]string, error)
	// Trim drops the cluster's history that the retention policy lets go
	// as of now (the cluster's time). keepLearning says a Learner has
	// planned the cluster: its log is trimmed only up to what every
	// Learner's saved memory folds in.
	Trim(cluster string, now time.Time, keepLearning bool) (trimmed, error)
	Close() error
}

// storedEvent is one event to append: its dedup key, its wire bytes (what
// Replay gives back), and the event itself for the job's state.
type storedEvent struct {
	key string
	raw []byte
	ev  model.Event
}

// jobRecord is a job's latest reported state. Events may arrive out of
// order: the latest event by time wins, whatever the arrival order.
type jobRecord struct {
	Kind         model.EventKind     `json:"kind"` // started, finished or preempted
	Time         time.Time           `json:"time"`
	Alloc        model.AllocKind     `json:"alloc"`
	Exit         model.ExitState     `json:"exit,omitempty"`
	Action       model.PreemptAction `json:"action,omitempty"`
	Progress     float64             `json:"progress,omitempty"`
	ProgressTime time.Time           `json:"progressTime"`
}

// stateRank orders state events at the same instant: a job that started
// and finished in the same second is finished.
func stateRank(k model.EventKind) int {
	switch k {
	case model.EventStarted:
		return 1
	case model.EventPreempted:
		return 2
	case model.EventFinished:
		return 3
	}
	return 0
}

// apply folds one event into the record.
func (r *jobRecord) apply(e model.Event) {
	if e.Kind == model.EventProgress {
		if !e.Time.Before(r.ProgressTime) {
			r.Progress, r.ProgressTime = e.Progress, e.Time
		}
		return
	}
	if r.Kind != model.EventUnspecified && (e.Time.Before(r.Time) || e.Time.Equal(r.Time) && stateRank(e.Kind) < stateRank(r.Kind)) {
		return
	}
	r.Kind, r.Time, r.Alloc, r.Exit, r.Action = e.Kind, e.Time, e.Alloc, e.Exit, e.Action
	if e.Kind == model.EventStarted && e.Time.After(r.ProgressTime) {
		r.Progress, r.ProgressTime = 0, e.Time
	}
}

// Log entry tags: the first byte of every log value.
const (
	tagEvent   byte = 'e'
	tagDecided byte = 'd'
)

var (
	keyEvents   = []byte("events")
	bucketLog   = []byte("log")
	bucketKeys  = []byte("keys")
	bucketJobs  = []byte("jobs")
	bucketMeta  = []byte("meta")
	bucketPlans = []byte("plans") // whole decision records, the newest Retention.Plans
	bucketEnded = []byte("ended") // finished jobs by end time (8 bytes, Unix ns) and id
	keyPlan     = []byte("plan")
	keyLearner  = []byte("learner") // present: a Learner's decision is in the log
	keyScanned  = []byte("scanned") // present: the log was searched for a Learner's decision
)

// appendFill is the fill of buckets whose keys only grow (the log, the
// plan records, the ended index): bbolt's default of one half leaves
// every page of an append-only bucket half empty.
const appendFill = 0.95

const clusterPrefix = "cluster/"

// boltStore is the store in one bbolt file. bbolt commits with fsync, and a
// reader never blocks on a writer; concurrent writes are coalesced by
// DB.Batch into one transaction (one fsync).
type boltStore struct {
	db  *bolt.DB
	ret Retention
}

// ErrStoreLocked says another process has the store open.
var ErrStoreLocked = errors.New("server: store is in use by another process")

func openBolt(dir string, ret Retention) (*boltStore, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	path := filepath.Join(dir, "huitian.db")
	db, err := openCompacted(path, ret.CompactFree)
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("%w: %s", ErrStoreLocked, path)
		}
		if errors.Is(err, ErrStoreDamaged) {
			return nil, err
		}
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	db.MaxBatchDelay = time.Millisecond
	return &boltStore{db: db, ret: ret}, nil
}

func clusterBucket(cluster string) []byte { return []byte(clusterPrefix + cluster) }

func (s *boltStore) Append(cluster string, evs []storedEvent) ([]bool, error) {
	var fresh []bool
	err := s.db.Batch(func(tx *bolt.Tx) error {
		// Batch may run fn again alone after a failed batch: start over.
		fresh = make([]bool, len(evs))
		c, err := tx.CreateBucketIfNotExists(clusterBucket(cluster))
		if err != nil {
			return err
		}
		lg, err := logBucket(c)
		if err != nil {
			return err
		}
		ended, err := c.CreateBucketIfNotExists(bucketEnded)
		if err != nil {
			return err
		}
		ended.FillPercent = appendFill
		keys, err := c.CreateBucketIfNotExists(bucketKeys)
		if err != nil {
			return err
		}
		jobs, err := c.CreateBucketIfNotExists(bucketJobs)
		if err != nil {
			return err
		}
		n := 0
		for i, e := range evs {
			if keys.Get([]byte(e.key)) != nil {
				continue
			}
			// A progress report teaches no planner (Learners read
			// starts, ends and preemptions): its key and the job's state
			// keep it, the log does not.
			k := []byte{'p'}
			if e.ev.Kind != model.EventProgress {
				if k, err = appendLog(lg, tagEvent, e.raw); err != nil {
					return err
				}
			}
			if err := keys.Put([]byte(e.key), k); err != nil {
				return err
			}
			var rec jobRecord
			if b := jobs.Get([]byte(e.ev.JobID)); b != nil {
				if err := json.Unmarshal(b, &rec); err != nil {
					return fmt.Errorf("job %q: %w", e.ev.JobID, err)
				}
			}
			was := rec
			rec.apply(e.ev)
			if rec.Kind == model.EventFinished && (was.Kind != rec.Kind || !was.Time.Equal(rec.Time)) {
				if err := ended.Put(endedKey(rec.Time, e.ev.JobID), nil); err != nil {
					return err
				}
			}
			b, err := json.Marshal(&rec)
			if err != nil {
				return err
			}
			if err := jobs.Put([]byte(e.ev.JobID), b); err != nil {
				return err
			}
			fresh[i] = true
			n++
		}
		return addCount(c, n)
	})
	if err != nil {
		return nil, fmt.Errorf("store: append events for %q: %w", cluster, err)
	}
	return fresh, nil
}

// logBucket returns a cluster's log bucket, made if missing, filled as
// an append-only bucket.
func logBucket(c *bolt.Bucket) (*bolt.Bucket, error) {
	lg, err := c.CreateBucketIfNotExists(bucketLog)
	if err != nil {
		return nil, err
	}
	lg.FillPercent = appendFill
	return lg, nil
}

// appendLog appends one tagged entry under the log's next sequence number.
func appendLog(lg *bolt.Bucket, tag byte, raw []byte) ([]byte, error) {
	seq, err := lg.NextSequence()
	if err != nil {
		return nil, err
	}
	k := binary.BigEndian.AppendUint64(nil, seq)
	v := make([]byte, 0, 1+len(raw))
	v = append(append(v, tag), raw...)
	return k, lg.Put(k, v)
}

// addCount adds n to the cluster's stored event count.
func addCount(c *bolt.Bucket, n int) error {
	if n == 0 {
		return nil
	}
	m, err := c.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	var cur uint64
	if b := m.Get(keyEvents); len(b) == 8 {
		cur = binary.BigEndian.Uint64(b)
	}
	return m.Put(keyEvents, binary.BigEndian.AppendUint64(nil, cur+uint64(n)))
}

func (s *boltStore) Replay(cluster string, after uint64, fn func(byte, []byte) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(clusterBucket(cluster))
		if c == nil || c.Bucket(bucketLog) == nil {
			return nil
		}
		cur := c.Bucket(bucketLog).Cursor()
		for k, v := cur.Seek(binary.BigEndian.AppendUint64(nil, after+1)); k != nil; k, v = cur.Next() {
			if len(v) == 0 {
				return fmt.Errorf("%w: log entry %x is empty", ErrStoredData, k)
			}
			if err := fn(v[0], v[1:]); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *boltStore) EventCount(cluster string) (int64, error) {
	var n int64
	err := s.db.View(func(tx *bolt.Tx) error {
		if c := tx.Bucket(clusterBucket(cluster)); c != nil {
			if m := c.Bucket(bucketMeta); m != nil {
				if b := m.Get(keyEvents); len(b) == 8 {
					n = int64(binary.BigEndian.Uint64(b))
				}
			}
		}
		return nil
	})
	return n, err
}

func (s *boltStore) Job(cluster, job string) (jobRecord, bool, error) {
	var (
		rec jobRecord
		ok  bool
	)
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(clusterBucket(cluster))
		if c == nil || c.Bucket(bucketJobs) == nil {
			return nil
		}
		b := c.Bucket(bucketJobs).Get([]byte(job))
		if b == nil {
			return nil
		}
		ok = true
		if err := json.Unmarshal(b, &rec); err != nil {
			return fmt.Errorf("%w: cluster %q, job %q: record: %v", ErrStoredData, logID(cluster), logID(job), err)
		}
		return nil
	})
	return rec, ok, err
}

func (s *boltStore) PutPlan(cluster string, rec, decided []byte) error {
	err := s.db.Batch(func(tx *bolt.Tx) error {
		c, err := tx.CreateBucketIfNotExists(clusterBucket(cluster))
		if err != nil {
			return err
		}
		m, err := c.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if decided != nil {
			if err := s.putDecided(c, m, decided); err != nil {
				return err
			}
		}
		return m.Put(keyPlan, rec)
	})
	if err != nil {
		return fmt.Errorf("store: put plan for %q: %w", cluster, err)
	}
	return nil
}

func (s *boltStore) Plans() (map[string][]byte, error) {
	out := map[string][]byte{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, c *bolt.Bucket) error {
			if !bytes.HasPrefix(name, []byte(clusterPrefix)) {
				return nil
			}
			id := strings.TrimPrefix(string(name), clusterPrefix)
			if m := c.Bucket(bucketMeta); m != nil {
				if v := m.Get(keyPlan); v != nil {
					out[id] = bytes.Clone(v)
				}
			}
			return nil
		})
	})
	return out, err
}

func (s *boltStore) Close() error { return s.db.Close() }
