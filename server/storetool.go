package server

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/huitian/huitian/internal/wire"
)

// StorePath is the store file under a data folder.
func StorePath(dataDir string) string { return filepath.Join(dataDir, "huitian.db") }

// entryFunc sees one readable log entry of a cluster: an event (with its
// wire bytes) or a decision record.
type entryFunc func(cluster string, seq uint64, tag byte, raw []byte) error

// walkStore opens a store file read-only and reads every cluster's log
// and last plan, counting what it cannot read. A fault or a bbolt panic
// while reading one cluster ends that cluster, not the walk.
func walkStore(path string, fn entryFunc) (*StoreReport, error) {
	rep := &StoreReport{Path: path}
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	open := path
	if err := checkFileShape(path); err != nil {
		rep.Damage = err
		var short *shortFileError
		if !errors.As(err, &short) {
			return rep, nil
		}
		// Read what is left from a copy padded to the length the meta
		// page says: the missing pages read as zeros, not a fault.
		padded, perr := paddedCopy(path, short.need)
		if perr != nil {
			return rep, nil
		}
		defer os.Remove(padded)
		open = padded
	}
	db, err := openStoreFile(open, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if err != nil {
		if rep.Damage == nil {
			rep.Damage = err
		}
		return rep, nil
	}
	defer db.Close()
	if rep.Damage == nil {
		if err := checkStore(db, path, false); err != nil {
			rep.Damage = err
		}
	}
	var ids []string
	_ = guarded(func() error {
		return db.View(func(tx *bolt.Tx) error {
			return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
				if id, ok := strings.CutPrefix(string(name), clusterPrefix); ok {
					ids = append(ids, id)
				}
				return nil
			})
		})
	})
	for _, id := range ids {
		cr := ClusterReport{ID: id}
		err := guarded(func() error {
			return db.View(func(tx *bolt.Tx) error {
				c := tx.Bucket(clusterBucket(id))
				if m := c.Bucket(bucketMeta); m != nil {
					if v := m.Get(keyPlan); v != nil {
						if _, err := decodePlan(v); err != nil {
							cr.Bad++
							cr.Problems = append(cr.Problems, "last plan: "+err.Error())
						} else {
							cr.Plan = true
						}
					}
				}
				lg := c.Bucket(bucketLog)
				if lg == nil {
					return nil
				}
				return lg.ForEach(func(k, v []byte) error {
					seq := uint64(0)
					if len(k) == 8 {
						seq = binary.BigEndian.Uint64(k)
					}
					bad := func(why string) {
						cr.Bad++
						if len(cr.Problems) < 20 {
							cr.Problems = append(cr.Problems, fmt.Sprintf("log entry %d: %s", seq, why))
						}
					}
					if len(v) == 0 {
						bad("empty")
						return nil
					}
					switch v[0] {
					case tagEvent:
						if _, err := readEvent(v[1:]); err != nil {
							bad(err.Error())
							return nil
						}
						cr.Events++
					case tagDecided:
						var rec decidedRecord
						if err := json.Unmarshal(v[1:], &rec); err != nil {
							bad("stored decision: " + err.Error())
							return nil
						}
						cr.Decisions++
					default:
						bad(fmt.Sprintf("unknown tag %q", v[0]))
						return nil
					}
					if fn != nil {
						return fn(id, seq, v[0], bytes.Clone(v[1:]))
					}
					return nil
				})
			})
		})
		if err != nil {
			cr.Bad++
			cr.Problems = append(cr.Problems, "reading stopped: "+err.Error())
		}
		rep.Clusters = append(rep.Clusters, cr)
	}
	return rep, nil
}

// guarded runs fn with memory faults and panics turned into errors.
func guarded(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrStoreDamaged, r)
		}
	}()
	return fn()
}

func paddedCopy(path string, size int64) (string, error) {
	in, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := os.CreateTemp("", "huitian-recover-*.db")
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(out.Name())
		return "", err
	}
	if err := out.Truncate(size); err != nil {
		out.Close()
		os.Remove(out.Name())
		return "", err
	}
	return out.Name(), out.Close()
}

// CheckStore reads a store (read-only; the service must not be running on
// it) and reports what is readable: bbolt's consistency check, the format
// record, and every cluster's log entries and last plan.
func CheckStore(dataDir string) (*StoreReport, error) {
	return walkStore(StorePath(dataDir), nil)
}

// DumpStore writes every readable log entry as one JSON object a line:
// {"cluster", "seq", "event"} or {"cluster", "seq", "decision"}.
func DumpStore(dataDir string, w io.Writer) (*StoreReport, error) {
	enc := json.NewEncoder(w)
	mo := protojson.MarshalOptions{}
	return walkStore(StorePath(dataDir), func(cluster string, seq uint64, tag byte, raw []byte) error {
		line := map[string]any{"cluster": cluster, "seq": seq}
		switch tag {
		case tagEvent:
			ev, err := readEvent(raw)
			if err != nil {
				return nil
			}
			b, err := mo.Marshal(wire.EventProto(ev))
			if err != nil {
				return err
			}
			line["event"] = json.RawMessage(b)
		case tagDecided:
			line["decision"] = json.RawMessage(raw)
		}
		return enc.Encode(line)
	})
}

// RecoverStore copies every readable event and decision of the store under
// dataDir, in stored order, into a new store under toDir (which must not
// hold one). The service then starts on toDir; the planners rebuild from
// the recovered log, and the last plans come with the next Plan calls.
func RecoverStore(dataDir, toDir string) (*StoreReport, error) {
	if _, err := os.Stat(StorePath(toDir)); err == nil {
		return nil, fmt.Errorf("%s already exists: recover into a new folder", StorePath(toDir))
	}
	dst, err := openBolt(toDir, Retention{})
	if err != nil {
		return nil, err
	}
	type counts struct{ fresh, dup int }
	got := map[string]*counts{}
	var pending []storedEvent
	var pendingCluster string
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		fresh, err := dst.Append(pendingCluster, pending)
		if err != nil {
			return err
		}
		c := got[pendingCluster]
		for _, f := range fresh {
			if f {
				c.fresh++
			} else {
				c.dup++
			}
		}
		pending = pending[:0]
		return nil
	}
	rep, err := walkStore(StorePath(dataDir), func(cluster string, _ uint64, tag byte, raw []byte) error {
		if cluster != pendingCluster || len(pending) >= 1000 || tag != tagEvent {
			if err := flush(); err != nil {
				return err
			}
		}
		pendingCluster = cluster
		if got[cluster] == nil {
			got[cluster] = &counts{}
		}
		switch tag {
		case tagEvent:
			ev, err := readEvent(raw)
			if err != nil {
				return nil
			}
			pending = append(pending, storedEvent{key: ev.Key(), raw: raw, ev: ev})
		case tagDecided:
			return dst.db.Update(func(tx *bolt.Tx) error {
				c, err := tx.CreateBucketIfNotExists(clusterBucket(cluster))
				if err != nil {
					return err
				}
				lg, err := logBucket(c)
				if err != nil {
					return err
				}
				_, err = appendLog(lg, tagDecided, raw)
				return err
			})
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return rep, fmt.Errorf("recover into %s: %w", StorePath(toDir), err)
	}
	for i := range rep.Clusters {
		if c := got[rep.Clusters[i].ID]; c != nil {
			rep.Clusters[i].Recovered, rep.Clusters[i].RecoveredSkipped = c.fresh, c.dup
		}
	}
	return rep, nil
}
