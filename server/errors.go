package server

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"connectrpc.com/connect"
	bolterrors "go.etcd.io/bbolt/errors"
)

// maxLoggedID caps an id in logs and error messages: ids are bounded at the
// edge (wire.MaxIDBytes), and a log line needs less.
const maxLoggedID = 64

// logID shortens an id for logs and error messages, marking the cut.
func logID(id string) string {
	if len(id) <= maxLoggedID {
		return id
	}
	cut := maxLoggedID
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes)", id[:cut], len(id))
}

// storeWriteError maps a failed store write: a write the store refuses for
// its input (a key or value too large) is the service's own fault, since
// the edge bounds what reaches the store (Internal); anything else (a full
// or failing disk, a closed store) is Unavailable, and a retry may succeed.
func storeWriteError(err error) *connect.Error {
	if errors.Is(err, bolterrors.ErrKeyTooLarge) || errors.Is(err, bolterrors.ErrValueTooLarge) || errors.Is(err, bolterrors.ErrKeyRequired) {
		return connect.NewError(connect.CodeInternal, err)
	}
	return connect.NewError(connect.CodeUnavailable, err)
}

// storeFailed logs nothing (the caller does, with context) but counts a
// failed store write and marks the store degraded until a write succeeds.
func (s *Server) storeFailed(op string, _ error) {
	s.met.storeErrors.WithLabelValues(op).Inc()
	s.met.storeDegraded.Set(1)
}

// storeOK clears the degraded mark after a successful write.
func (s *Server) storeOK() { s.met.storeDegraded.Set(0) }
