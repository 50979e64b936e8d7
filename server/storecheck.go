package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
)

// ErrStoreDamaged says the store file cannot be trusted: empty where it
// held data, cut short, structurally broken, or of an unknown format. The
// service refuses to start on it; `huitian store check` says what is
// readable and `huitian store recover` copies the readable events into a
// new store.
var ErrStoreDamaged = errors.New("server: store is damaged")

// ErrStoredData says a stored entry could not be read back (a flipped
// byte in an event, say): calls that need it answer DataLoss.
var ErrStoredData = errors.New("server: stored data is unreadable")

// Format record: bucket "huitian", key "format". A store without one that
// holds clusters was written before the record existed (format 1); an
// empty one is new. Any other value is a format this build cannot read.
var (
	bucketFormat = []byte("huitian")
	keyFormat    = []byte("format")
)

const storeFormat = "huitian-store/1"

// damaged wraps ErrStoreDamaged with the file, what is wrong, and what to do.
func damaged(path, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s; the service will not start on it. See what is readable with `huitian store check --data DIR`, "+
		"copy the readable events into a new store with `huitian store recover --data DIR --to NEWDIR`, then start on NEWDIR "+
		"(or restore a backup)", ErrStoreDamaged, path, fmt.Sprintf(format, args...))
}

// checkFileShape reads the file's two bbolt meta pages without mapping it
// and checks that the file is as long as the newest valid meta says: a
// file cut short makes bbolt fault on its first read past the end.
func checkFileShape(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() == 0 {
		return damaged(path, "the file is empty (0 bytes): a store that held data was truncated, or its creation was interrupted")
	}
	type meta struct {
		pageSize, pgid, txid uint64
	}
	read := func(off int64) (meta, bool) {
		var b [80]byte
		if _, err := f.ReadAt(b[:], off); err != nil {
			return meta{}, false
		}
		m := b[16:]
		le := binary.LittleEndian
		if le.Uint32(m[0:]) != 0xED0CDAED || le.Uint32(m[4:]) != 2 {
			return meta{}, false
		}
		h := fnv.New64a()
		h.Write(m[:56])
		if h.Sum64() != le.Uint64(m[56:]) {
			return meta{}, false
		}
		return meta{pageSize: uint64(le.Uint32(m[8:])), pgid: le.Uint64(m[40:]), txid: le.Uint64(m[48:])}, true
	}
	m0, ok0 := read(0)
	var m1 meta
	ok1 := false
	if ok0 {
		m1, ok1 = read(int64(m0.pageSize))
	} else {
		for _, ps := range []int64{4096, 8192, 16384, 65536} {
			if m1, ok1 = read(ps); ok1 {
				break
			}
		}
	}
	var m meta
	switch {
	case ok0 && ok1:
		m = m0
		if m1.txid > m0.txid {
			m = m1
		}
	case ok0:
		m = m0
	case ok1:
		m = m1
	default:
		return damaged(path, "neither of its two bbolt meta pages is valid (%d bytes): not a bbolt file, or overwritten", fi.Size())
	}
	if need := m.pgid * m.pageSize; uint64(fi.Size()) < need {
		return &shortFileError{need: int64(need), err: damaged(path, "the file is %d bytes but its pages reach %d bytes: it was cut short", fi.Size(), need)}
	}
	return nil
}

// shortFileError is a file cut short: recover reads what is left from a
// copy padded to the length its meta page says.
type shortFileError struct {
	need int64
	err  error
}

func (e *shortFileError) Error() string { return e.err.Error() }
func (e *shortFileError) Unwrap() error { return e.err }

// openStoreFile opens a bbolt file after checking its shape, with memory
// faults and bbolt panics turned into errors (a damaged file must stop the
// service with a message, not a SIGSEGV).
func openStoreFile(path string, opts *bolt.Options) (db *bolt.DB, err error) {
	if _, statErr := os.Stat(path); statErr == nil {
		if err := checkFileShape(path); err != nil {
			return nil, err
		}
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, damaged(path, "reading it failed: %v", r)
		}
	}()
	return bolt.Open(path, 0o600, opts)
}

// checkStore runs bbolt's consistency check and checks (or, on a new or
// pre-format store, writes) the format record. Up to maxProblems of
// bbolt's findings are reported.
func checkStore(db *bolt.DB, path string, write bool) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = damaged(path, "checking it failed: %v", r)
		}
	}()
	const maxProblems = 5
	var problems []error
	if err := db.View(func(tx *bolt.Tx) error {
		for e := range tx.Check() {
			if len(problems) < maxProblems {
				problems = append(problems, e)
			}
		}
		return nil
	}); err != nil {
		return damaged(path, "its consistency check could not run: %v", err)
	}
	if len(problems) > 0 {
		return damaged(path, "bbolt's consistency check failed: %v", errors.Join(problems...))
	}
	var format []byte
	var buckets int
	moved := false
	if err := db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketFormat); b != nil {
			format = append([]byte(nil), b.Get(keyFormat)...)
			moved = b.Get(keyMoved) != nil
		}
		return tx.ForEach(func([]byte, *bolt.Bucket) error { buckets++; return nil })
	}); err != nil {
		return damaged(path, "reading its format record: %v", err)
	}
	switch {
	case moved:
		return errMoved
	case string(format) == storeFormat:
		return nil
	case format != nil:
		return damaged(path, "its format is %q; this build reads %q", format, storeFormat)
	case !write:
		return nil // a pre-format store, read as format 1
	}
	return db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketFormat)
		if err != nil {
			return err
		}
		return b.Put(keyFormat, []byte(storeFormat))
	})
}

// StoreReport is what `huitian store check` and `recover` say about a
// store: per cluster, the entries read and those that could not be.
type StoreReport struct {
	Path     string
	Clusters []ClusterReport
	// Damage is the store-level problem (ErrStoreDamaged), if any.
	Damage error
}

// ClusterReport counts one cluster's log entries.
type ClusterReport struct {
	ID                          string
	Events, Decisions, Bad      int
	Plan                        bool // a readable last-plan record
	Problems                    []string
	Recovered, RecoveredSkipped int // for recover: events written, duplicates
}

// Write prints the report for people.
func (r *StoreReport) Write(w io.Writer) {
	fmt.Fprintf(w, "store %s\n", r.Path)
	if r.Damage != nil {
		fmt.Fprintf(w, "  DAMAGED: %v\n", r.Damage)
	}
	for _, c := range r.Clusters {
		fmt.Fprintf(w, "  cluster %q: %d events, %d decisions, %d unreadable entries, last plan readable: %v\n",
			logID(c.ID), c.Events, c.Decisions, c.Bad, c.Plan)
		for _, p := range c.Problems {
			fmt.Fprintf(w, "    %s\n", p)
		}
		if c.Recovered > 0 || c.RecoveredSkipped > 0 {
			fmt.Fprintf(w, "    recovered %d events (%d duplicates skipped)\n", c.Recovered, c.RecoveredSkipped)
		}
	}
}

// OK says whether the store is whole: no damage and every entry readable.
func (r *StoreReport) OK() bool {
	if r.Damage != nil {
		return false
	}
	for _, c := range r.Clusters {
		if c.Bad > 0 {
			return false
		}
	}
	return true
}
