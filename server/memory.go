package server

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/solver"
)

// A Learner whose memory has a saved form (solver.Snapshotter) is saved
// every memoryEvery plans of its cluster and when the service stops, each
// at the log position it folds in (every entry up to it). At start it is
// restored from that and fed only the entries after it, so that Trim may
// drop the entries before it: a learning cluster's log is bounded by
// --retain, not kept whole.
const memoryEvery = trimEvery

var (
	bucketMemory   = []byte("memory")   // learner name → log position (8 bytes) + saved memory
	bucketLearners = []byte("learners") // learner name → nothing: its decisions are in the log
	keyDropped     = []byte("dropped")  // present: entries were dropped from the log; the last one's position
)

// learnerName names a Learner in the store: policy and depth.
func learnerName(k plannerKey) string { return k.policy.String() + "/" + strconv.Itoa(k.depth) }

// savedMemory is a Learner's stored memory.
type savedMemory struct {
	ok    bool   // a memory is stored
	pos   uint64 // the log position it folds in
	mem   []byte
	whole bool // no entry was ever dropped from the log
}

// PutMemory stores the cluster's Learners' saved memories (by learner
// name), each at the log's current position. The caller holds the
// cluster's lock, so that no entry is logged that a Learner has not seen.
func (s *boltStore) PutMemory(cluster string, mems map[string][]byte) error {
	if len(mems) == 0 {
		return nil
	}
	err := s.db.Batch(func(tx *bolt.Tx) error {
		c, err := tx.CreateBucketIfNotExists(clusterBucket(cluster))
		if err != nil {
			return err
		}
		var pos uint64
		if lg := c.Bucket(bucketLog); lg != nil {
			pos = lg.Sequence()
		}
		mb, err := c.CreateBucketIfNotExists(bucketMemory)
		if err != nil {
			return err
		}
		for _, name := range slices.Sorted(maps.Keys(mems)) {
			v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(mems[name])), pos)
			if err := mb.Put([]byte(name), append(v, mems[name]...)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: put memory for %q: %w", cluster, err)
	}
	return nil
}

// Memory returns a Learner's stored memory, and whether the log is whole.
func (s *boltStore) Memory(cluster, learner string) (savedMemory, error) {
	out := savedMemory{whole: true}
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(clusterBucket(cluster))
		if c == nil {
			return nil
		}
		if m := c.Bucket(bucketMeta); m != nil && m.Get(keyDropped) != nil {
			out.whole = false
		}
		mb := c.Bucket(bucketMemory)
		if mb == nil {
			return nil
		}
		v := mb.Get([]byte(learner))
		if v == nil {
			return nil
		}
		if len(v) < 8 {
			return fmt.Errorf("%w: cluster %q, saved memory of %s: %d bytes", ErrStoredData, logID(cluster), learner, len(v))
		}
		out.ok, out.pos, out.mem = true, binary.BigEndian.Uint64(v), bytes.Clone(v[8:])
		return nil
	})
	return out, err
}

// memoryFloor returns the lowest log position every Learner that has
// decided in the cluster has a saved memory at: the log entries up to it
// are folded into every one of them. ok is false when a Learner has no
// saved memory (its memory is the whole log), or none is known.
func memoryFloor(c *bolt.Bucket) (floor uint64, ok bool, err error) {
	ls, err := learnerNames(c)
	if err != nil || len(ls) == 0 {
		return 0, false, err
	}
	mb := c.Bucket(bucketMemory)
	if mb == nil {
		return 0, false, nil
	}
	floor = math.MaxUint64
	for _, name := range ls {
		v := mb.Get([]byte(name))
		if len(v) < 8 {
			return 0, false, nil
		}
		floor = min(floor, binary.BigEndian.Uint64(v))
	}
	return floor, true, nil
}

// learnerNames returns the names of the Learners whose decisions are in the
// cluster's log. A store written before the learners bucket is scanned
// for them once.
func learnerNames(c *bolt.Bucket) ([]string, error) {
	lb := c.Bucket(bucketLearners)
	if lb == nil {
		lb, err := c.CreateBucket(bucketLearners)
		if err != nil {
			return nil, err
		}
		if lg := c.Bucket(bucketLog); lg != nil {
			if err := lg.ForEach(func(k, v []byte) error {
				if len(v) == 0 || v[0] != tagDecided {
					return nil
				}
				var rec decidedRecord
				if err := json.Unmarshal(v[1:], &rec); err != nil {
					return fmt.Errorf("%w: log entry %x: %v", ErrStoredData, k, err)
				}
				return lb.Put([]byte(learnerName(plannerKey{rec.Policy, rec.Depth})), nil)
			}); err != nil {
				return nil, err
			}
		}
		return learnerNames(c)
	}
	var out []string
	err := lb.ForEach(func(k, _ []byte) error {
		out = append(out, string(k))
		return nil
	})
	return out, err
}

// markLearner records that a Learner's decision is in the log.
func markLearner(c *bolt.Bucket, rec *decidedRecord) error {
	lb, err := c.CreateBucketIfNotExists(bucketLearners)
	if err != nil {
		return err
	}
	name := []byte(learnerName(plannerKey{rec.Policy, rec.Depth}))
	if lb.Get(name) != nil {
		return nil
	}
	return lb.Put(name, []byte{})
}

// Learners returns the names of the Learners whose decisions are in the
// cluster's log, as far as the store has recorded them.
func (s *boltStore) Learners(cluster string) ([]string, error) {
	var out []string
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(clusterBucket(cluster))
		if c == nil || c.Bucket(bucketLearners) == nil {
			return nil
		}
		return c.Bucket(bucketLearners).ForEach(func(k, _ []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	return out, err
}

// parseLearnerName is the inverse of learnerName.
func parseLearnerName(name string) (plannerKey, bool) {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return plannerKey{}, false
	}
	p, ok := model.ParsePolicy(name[:i])
	d, err := strconv.Atoi(name[i+1:])
	return plannerKey{p, d}, ok && err == nil
}

// saveMemoryLocked stores the saved memory of each of the cluster's
// Learners that has one. A Learner that has decided in the cluster but is
// not in use since the start (its policy no longer asked for) is restored,
// fed the log after its saved memory, saved and let go: else its old
// saved memory would keep the log from being trimmed. A failure is
// logged: the log still holds what a restart needs (Trim keeps what no
// saved memory folds in). c.mu is held.
func (s *Server) saveMemoryLocked(c *cluster) {
	mems := map[string][]byte{}
	save := func(k plannerKey, sn solver.Snapshotter) {
		b, err := marshalMemory(sn)
		if err != nil {
			s.log.Warn("saving a planner's memory failed; the log keeps what it needs", "cluster", logID(c.id), "policy", k.policy.String(), "error", err.Error())
			return
		}
		mems[learnerName(k)] = b
	}
	for k, p := range c.planners {
		if sn, ok := p.(solver.Snapshotter); ok {
			save(k, sn)
		}
	}
	names, err := s.store.Learners(c.id)
	if err != nil {
		s.log.Warn("listing the cluster's planners failed; the log keeps what they need", "cluster", logID(c.id), "error", err.Error())
	}
	for _, name := range names {
		k, ok := parseLearnerName(name)
		if _, loaded := c.planners[k]; !ok || loaded {
			continue
		}
		p, err := s.newPlanner(k.policy, k.depth)
		if err != nil {
			continue
		}
		sn, ok := p.(solver.Snapshotter)
		if !ok {
			continue
		}
		start, err := s.restore(c, k, sn)
		if err == nil {
			_, err = s.replay(c.id, start.after, k, sn)
		}
		if err != nil {
			s.log.Warn("bringing an idle planner's memory up to date failed; the log keeps what it needs", "cluster", logID(c.id), "policy", k.policy.String(), "error", err.Error())
			continue
		}
		save(k, sn)
	}
	if err := s.store.PutMemory(c.id, mems); err != nil {
		s.log.Warn("storing the planners' memory failed; the log keeps what it needs", "cluster", logID(c.id), "error", err.Error())
	}
}

func marshalMemory(sn solver.Snapshotter) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return sn.MarshalMemory()
}

// saveAllMemory saves every cluster's Learners' memory (at shutdown).
func (s *Server) saveAllMemory() {
	s.mu.Lock()
	cs := make([]*cluster, 0, len(s.clusters))
	for _, c := range s.clusters {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	slices.SortFunc(cs, func(a, b *cluster) int { return strings.Compare(a.id, b.id) })
	for _, c := range cs {
		c.mu.Lock()
		s.saveMemoryLocked(c)
		c.mu.Unlock()
	}
}

// memoryStart is how restore began a Learner's memory.
type memoryStart struct {
	after   uint64 // the log position to replay after (0: the whole log)
	ignored string // why a saved memory was ignored, "" when none was
	partial bool   // one was, and the log before it is trimmed
}

// restore gives a new Learner the saved memory when there is one it can
// read, and says where to replay the log from. A saved memory it cannot
// read (another encoding version, damaged) is ignored with a warning: the
// whole log is replayed when it is still whole, else the memory starts
// fresh from what the log still holds.
func (s *Server) restore(c *cluster, key plannerKey, l solver.Learner) (memoryStart, error) {
	sn, ok := l.(solver.Snapshotter)
	if !ok {
		return memoryStart{}, nil
	}
	m, err := s.store.Memory(c.id, learnerName(key))
	if err != nil || !m.ok {
		return memoryStart{}, err
	}
	uerr := unmarshalMemory(sn, m.mem)
	if uerr == nil {
		return memoryStart{after: m.pos}, nil
	}
	version := errors.Is(uerr, solver.ErrMemoryVersion)
	why := uerr.Error()
	if m.whole {
		s.log.Warn("saved planner memory ignored; rebuilding it from the whole log", "cluster", logID(c.id), "policy", key.policy.String(),
			"other_version", version, "error", uerr.Error())
		return memoryStart{ignored: why}, nil
	}
	s.log.Warn("saved planner memory ignored and the log before it was trimmed: the planner's memory starts fresh from what the log still holds",
		"cluster", logID(c.id), "policy", key.policy.String(), "other_version", version, "error", uerr.Error())
	return memoryStart{ignored: why, partial: true}, nil
}

// memoryProto says, for GetStatus, how a Learner made now began: from
// start, with n log entries replayed.
func memoryProto(start memoryStart, n int, now time.Time) *pb.PlannerMemory {
	m := &pb.PlannerMemory{Replayed: int64(n), Ignored: start.ignored, Made: timestamppb.New(now)}
	switch {
	case start.after > 0:
		m.Origin, m.SavedPosition = pb.PlannerMemory_ORIGIN_SAVED, start.after
	case start.partial:
		m.Origin = pb.PlannerMemory_ORIGIN_PARTIAL_LOG
	default:
		m.Origin = pb.PlannerMemory_ORIGIN_LOG
	}
	return m
}

func unmarshalMemory(sn solver.Snapshotter, b []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return sn.UnmarshalMemory(b)
}
