package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Compaction rewrites the store into a new file (bbolt's Compact: every
// bucket, key and sequence, pages packed full) next to it, syncs it, and
// renames it over the old file. Until the rename the old file is the
// store, untouched; after it the new one is, whole. A crash in between
// leaves the half-written new file, which the next open removes.
const compactSuffix = ".compact"

// compactMinBytes: a smaller store is not compacted at start, whatever
// its free share (bbolt grows files in steps; a small one is mostly step).
const compactMinBytes = 16 << 20

// keyMoved, in the format bucket of a file that compaction replaced,
// says that the store now lives in a new file under the same name: a
// process that waited on the old file's lock opens the path again.
var keyMoved = []byte("moved")

var errMoved = errors.New("server: the store file was replaced by its compacted copy")

// compactCrash, when set (by the crash tests' child process), is called at
// each step of a compaction.
var compactCrash func(step string)

// freeShare is the share of the file in free pages, and the file's size.
func freeShare(db *bolt.DB) (float64, int64, error) {
	fi, err := os.Stat(db.Path())
	if err != nil {
		return 0, 0, err
	}
	if fi.Size() == 0 {
		return 0, 0, nil
	}
	st := db.Stats()
	return float64(st.FreeAlloc) / float64(fi.Size()), fi.Size(), nil
}

// compactOpen compacts the open store db (whose lock this process holds)
// into path+compactSuffix and renames that over path. db stays open on
// the old file, which it marks as moved; the caller closes it and opens
// path again.
func compactOpen(db *bolt.DB) error {
	path := db.Path()
	tmp := path + compactSuffix
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return err
	}
	step := func(s string) {
		if compactCrash != nil {
			compactCrash(s)
		}
	}
	step("opened")
	// Every transaction Compact commits is fsync'd: once it returns and
	// dst is closed, the new file is on disk whole.
	if err := bolt.Compact(dst, db, 16<<20); err != nil {
		dst.Close()
		os.Remove(tmp)
		return err
	}
	if err := dst.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	step("copied")
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return err
	}
	step("renamed")
	return db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketFormat)
		if err != nil {
			return err
		}
		return b.Put(keyMoved, []byte{1})
	})
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// openChecked opens and checks the store file, opening it again when a
// compaction replaced it while this process waited for its lock, and
// removes what a crashed compaction left.
func openChecked(path string, opts *bolt.Options) (*bolt.DB, error) {
	for range 3 {
		db, err := openStoreFile(path, opts)
		if err != nil {
			return nil, err
		}
		err = checkStore(db, path, !opts.ReadOnly)
		if errors.Is(err, errMoved) {
			db.Close()
			continue
		}
		if err != nil {
			db.Close()
			return nil, err
		}
		if !opts.ReadOnly {
			// The lock is ours: no compaction is running.
			if err := os.Remove(path + compactSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				db.Close()
				return nil, err
			}
		}
		return db, nil
	}
	return nil, fmt.Errorf("store %s: replaced by compaction three times while opening it", path)
}

// openCompacted opens the service's store, first compacting it when its
// free pages are at least free share of the file (0: never).
func openCompacted(path string, free float64) (*bolt.DB, error) {
	opts := &bolt.Options{Timeout: 2 * time.Second}
	db, err := openChecked(path, opts)
	if err != nil || free <= 0 {
		return db, err
	}
	share, size, err := freeShare(db)
	if err != nil || size < compactMinBytes || share < free {
		return db, nil
	}
	if err := compactOpen(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("store %s: compacting (%.0f%% of %d bytes free): %w; the store is as it was: "+
			"start with --compact-free 0 to skip compaction", path, 100*share, size, err)
	}
	db.Close()
	return openChecked(path, opts)
}

// CompactStore rewrites the store under dataDir into a new file without
// free pages and renames it over the old one (the service must not be
// running on it). It returns the file's size before and after.
func CompactStore(dataDir string) (before, after int64, err error) {
	path := StorePath(dataDir)
	if _, err := os.Stat(path); err != nil {
		return 0, 0, err
	}
	db, err := openChecked(path, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return 0, 0, fmt.Errorf("%w: %s", ErrStoreLocked, path)
		}
		return 0, 0, err
	}
	_, before, err = freeShare(db)
	if err == nil {
		err = compactOpen(db)
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return before, 0, fmt.Errorf("compact %s: %w", path, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return before, 0, err
	}
	return before, fi.Size(), nil
}
