package server

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/huitian/huitian/model"
)

// Retention says what the store keeps of each cluster's history. What the
// service needs to answer and to restart with the same decisions is never
// trimmed: each job's state while the job lives (and Retain after it
// finished), the last plan, the event count, and every log entry a
// Learner rebuilds from. A Learner whose memory has a saved form
// (solver.Snapshotter, memory.go) is restored from it and the entries
// after it, so a learning cluster's log is trimmed up to what every one
// of its Learners' saved memory folds in; the rest of each decision
// (cards, reasons, pending messages) is kept whole only for the newest
// Plans.
type Retention struct {
	// Retain is how long, in the cluster's own time (its plans' now), the
	// history that no answer needs is kept: finished jobs' states and
	// their events' dedup keys, and the events of clusters no Learner has
	// planned. Zero keeps everything.
	Retain time.Duration
	// Plans is how many whole decision records each cluster keeps (read
	// with huitian store dump); older decisions keep what the planners
	// learn from.
	Plans int
	// CompactFree: at start, a store whose free pages are at least this
	// share of its file (and at least compactMinBytes) is compacted into a
	// new file first. Zero never compacts at start.
	CompactFree float64
}

// DefaultRetention returns the documented defaults.
func DefaultRetention() Retention {
	return Retention{Retain: 7 * 24 * time.Hour, Plans: 100, CompactFree: 0.5}
}

func (r Retention) validate() error {
	var errs []error
	if r.Retain < 0 {
		errs = append(errs, fmt.Errorf("retain: must not be negative (0 keeps everything), got %s", r.Retain))
	}
	if r.Plans < 0 {
		errs = append(errs, fmt.Errorf("retain plans: must not be negative, got %d", r.Plans))
	}
	if !(r.CompactFree >= 0 && r.CompactFree <= 1) { // NaN too
		errs = append(errs, fmt.Errorf("compact free: must be a share in [0, 1] (0: never at start), got %g", r.CompactFree))
	}
	return errors.Join(errs...)
}

// trimEvery: a cluster's history is trimmed once every trimEvery plans
// (and at its first plan after a start).
const trimEvery = 64

// maxTrim bounds the entries one Trim deletes of each kind, so that one
// plan never waits on a long trim; the rest goes at the next.
const maxTrim = 4096

// trimmed counts what one Trim dropped.
type trimmed struct {
	Jobs, Keys, Entries int
}

// trimLocked trims the cluster's stored history as of now. A failure is
// logged: nothing is lost by not trimming. c.mu is held, so that no
// Learner is made (and fed the log) while its events go.
func (s *Server) trimLocked(c *cluster, now time.Time) {
	if c.plans.Load()%trimEvery != 0 {
		return
	}
	n, err := s.store.Trim(c.id, now, len(c.learnersLocked()) > 0)
	if err != nil {
		s.log.Warn("trimming the store's history failed; it is kept", "cluster", logID(c.id), "error", err.Error())
		return
	}
	if n != (trimmed{}) {
		s.log.Debug("store history trimmed", "cluster", logID(c.id), "jobs", n.Jobs, "keys", n.Keys, "log_entries", n.Entries)
	}
}

// slimDecided keeps of a decision record what a Learner's Decided reads
// when the log is replayed (solver.Huitian: the snapshot's time, each
// reservation's job and start, each start's job and window end, and the
// idle and backfill card counts), and drops the rest: cards, reasons,
// pending messages and fragment inventories, which only the plan's own
// answer needed. TestTrimmedStoreAnswersAsUntrimmed holds a restarted
// Learner to the same decisions.
func slimDecided(r *decidedRecord) *decidedRecord {
	out := &decidedRecord{Policy: r.Policy, Depth: r.Depth, Now: r.Now, Options: r.Options}
	d := &out.Decision
	for _, rs := range r.Decision.Reservations {
		d.Reservations = append(d.Reservations, model.Reservation{JobID: rs.JobID, Start: rs.Start})
	}
	for _, st := range r.Decision.Starts {
		if !st.WindowEnd.IsZero() {
			d.Starts = append(d.Starts, model.Start{JobID: st.JobID, WindowEnd: st.WindowEnd})
		}
	}
	d.Stats.IdleCards, d.Stats.BackfillCards = r.Decision.Stats.IdleCards, r.Decision.Stats.BackfillCards
	return out
}

// putDecided appends a Learner's decision to the log in its learned form,
// keeps it whole among the newest Retention.Plans, and marks the cluster
// as one a Learner has planned.
func (s *boltStore) putDecided(c, meta *bolt.Bucket, decided []byte) error {
	var rec decidedRecord
	if err := json.Unmarshal(decided, &rec); err != nil {
		return fmt.Errorf("decision record: %w", err)
	}
	slim, err := json.Marshal(slimDecided(&rec))
	if err != nil {
		return err
	}
	lg, err := logBucket(c)
	if err != nil {
		return err
	}
	seq, err := appendLog(lg, tagDecided, slim)
	if err != nil {
		return err
	}
	if err := meta.Put(keyLearner, []byte{1}); err != nil {
		return err
	}
	if err := markLearner(c, &rec); err != nil {
		return err
	}
	pl, err := c.CreateBucketIfNotExists(bucketPlans)
	if err != nil {
		return err
	}
	pl.FillPercent = appendFill
	if s.ret.Plans > 0 {
		n, err := pl.NextSequence()
		if err != nil {
			return err
		}
		v := make([]byte, 0, len(seq)+len(decided))
		if err := pl.Put(binary.BigEndian.AppendUint64(nil, n), append(append(v, seq...), decided...)); err != nil {
			return err
		}
	}
	// Drop the records past the newest Plans (all of them when Plans is 0).
	last := pl.Sequence()
	var old [][]byte
	cur := pl.Cursor()
	for k, _ := cur.First(); k != nil && len(old) < maxTrim; k, _ = cur.Next() {
		if len(k) == 8 && binary.BigEndian.Uint64(k)+uint64(s.ret.Plans) > last {
			break
		}
		old = append(old, k)
	}
	for _, k := range old {
		if err := pl.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// endedKey orders finished jobs by end time, then id.
func endedKey(at time.Time, job string) []byte {
	return append(binary.BigEndian.AppendUint64(nil, uint64(at.UnixNano())), job...)
}

// jobOfKey returns the job of an event's dedup key (model.Event.Key: id,
// kind and time joined by NUL; neither kind nor time holds one).
func jobOfKey(k []byte) string {
	s := string(k)
	i := strings.LastIndexByte(s, 0)
	if i < 0 {
		return ""
	}
	j := strings.LastIndexByte(s[:i], 0)
	if j < 0 {
		return ""
	}
	return s[:j]
}

// Trim drops, as of now: (1) the states and dedup keys of jobs that
// finished before now-Retain and are not in the last plan; (2) the log's
// entries from before now-Retain: in a cluster no Learner has planned
// (keepLearning false and no Learner's decision stored), events; in a
// learning cluster, events and decisions up to the lowest position the
// Learners' saved memories fold in, none while one has no saved memory. A job
// reported again after its state was trimmed is a new job to the store.
func (s *boltStore) Trim(cluster string, now time.Time, keepLearning bool) (trimmed, error) {
	var out trimmed
	if s.ret.Retain <= 0 {
		return out, nil
	}
	cutoff := now.Add(-s.ret.Retain)
	err := s.db.Update(func(tx *bolt.Tx) error {
		out = trimmed{}
		c := tx.Bucket(clusterBucket(cluster))
		if c == nil {
			return nil
		}
		meta := c.Bucket(bucketMeta)
		// 1. Finished jobs.
		if ended, jobs := c.Bucket(bucketEnded), c.Bucket(bucketJobs); ended != nil && jobs != nil {
			var due [][]byte
			cur := ended.Cursor()
			for k, _ := cur.First(); k != nil && len(due) < maxTrim; k, _ = cur.Next() {
				if len(k) < 8 || time.Unix(0, int64(binary.BigEndian.Uint64(k))).After(cutoff) {
					break
				}
				due = append(due, bytes.Clone(k))
			}
			var inPlan map[string]bool
			if len(due) > 0 && meta != nil {
				if v := meta.Get(keyPlan); v != nil {
					lp, err := decodePlan(v)
					if err != nil {
						return fmt.Errorf("%w: cluster %q: last plan: %v", ErrStoredData, logID(cluster), err)
					}
					inPlan = make(map[string]bool, len(lp.jobs))
					for id := range lp.jobs {
						inPlan[id] = true
					}
				}
			}
			keys := c.Bucket(bucketKeys)
			for _, k := range due {
				job := string(k[8:])
				if inPlan[job] {
					continue // still planned: its state answers for it
				}
				if err := ended.Delete(k); err != nil {
					return err
				}
				b := jobs.Get([]byte(job))
				if b == nil {
					continue
				}
				var rec jobRecord
				if err := json.Unmarshal(b, &rec); err != nil {
					continue // unreadable: left for store check, not trimmed
				}
				if rec.Kind != model.EventFinished || rec.Time.After(cutoff) {
					continue // reported again since: a newer entry stands for it
				}
				if err := jobs.Delete([]byte(job)); err != nil {
					return err
				}
				out.Jobs++
				if keys == nil {
					continue
				}
				var kk [][]byte
				kc := keys.Cursor()
				prefix := append([]byte(job), 0)
				for k, _ := kc.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = kc.Next() {
					if jobOfKey(k) == job {
						kk = append(kk, bytes.Clone(k))
					}
				}
				for _, k := range kk {
					if err := keys.Delete(k); err != nil {
						return err
					}
				}
				out.Keys += len(kk)
			}
		}
		// 2. The log: events before the cutoff of a cluster no Learner
		// has planned; of a learning cluster, entries before the cutoff
		// that every Learner's saved memory folds in.
		lg := c.Bucket(bucketLog)
		if lg == nil {
			return nil
		}
		learned := keepLearning || meta != nil && meta.Get(keyLearner) != nil
		if !learned && (meta == nil || meta.Get(keyScanned) == nil) {
			// A store written before the learner mark: look for a
			// Learner's decision once.
			if err := lg.ForEach(func(_, v []byte) error {
				learned = learned || len(v) > 0 && v[0] == tagDecided
				return nil
			}); err != nil {
				return err
			}
			m, err := c.CreateBucketIfNotExists(bucketMeta)
			if err != nil {
				return err
			}
			meta = m
			if err := m.Put(keyScanned, []byte{1}); err != nil {
				return err
			}
			if learned {
				if err := m.Put(keyLearner, []byte{1}); err != nil {
					return err
				}
			}
		}
		upTo := uint64(math.MaxUint64)
		if learned {
			floor, ok, err := memoryFloor(c)
			if err != nil || !ok {
				return err // a Learner's memory is the whole log
			}
			upTo = floor
		}
		var old [][]byte
		cur := lg.Cursor()
	scan:
		for k, v := cur.First(); k != nil && len(old) < maxTrim; k, v = cur.Next() {
			if len(k) != 8 || binary.BigEndian.Uint64(k) > upTo || len(v) == 0 {
				break
			}
			var at time.Time
			switch v[0] {
			case tagEvent:
				ev, err := readEvent(v[1:])
				if err != nil {
					break scan
				}
				at = ev.Time
			case tagDecided:
				if !learned {
					// Found a Learner's decision: no longer trimmed as
					// a cluster no Learner planned.
					if meta != nil {
						if err := meta.Put(keyLearner, []byte{1}); err != nil {
							return err
						}
					}
					break scan
				}
				var rec struct {
					Now time.Time `json:"now"`
				}
				if json.Unmarshal(v[1:], &rec) != nil {
					break scan
				}
				at = rec.Now
			}
			if at.IsZero() || at.After(cutoff) {
				break scan
			}
			old = append(old, bytes.Clone(k))
		}
		for _, k := range old {
			if err := lg.Delete(k); err != nil {
				return err
			}
		}
		if len(old) > 0 {
			m, err := c.CreateBucketIfNotExists(bucketMeta)
			if err != nil {
				return err
			}
			if err := m.Put(keyDropped, old[len(old)-1]); err != nil {
				return err
			}
		}
		out.Entries = len(old)
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("store: trim %q: %w", cluster, err)
	}
	return out, nil
}
