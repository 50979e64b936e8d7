package server

import (
	"testing"

	"google.golang.org/protobuf/proto"
)

// FuzzDecodePlan reads arbitrary bytes as a stored plan record: a record
// the store hands back damaged is an error naming what could not be
// read, never a panic or an allocation of what its length prefix claims;
// one that reads is written back to a record that reads the same.
func FuzzDecodePlan(f *testing.F) {
	f.Add([]byte{})
	// A length prefix of 2^63-1: it panicked the server loading its store.
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Add([]byte{0x02, 0x0a, 0x00, 0xf0, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, rec []byte) {
		lp, err := decodePlan(rec)
		if err != nil {
			return
		}
		again, err := encodePlan(lp)
		if err != nil {
			t.Fatalf("a record that reads does not write: %v", err)
		}
		back, err := decodePlan(again)
		if err != nil {
			t.Fatalf("the record written back does not read: %v", err)
		}
		if !proto.Equal(back.header, lp.header) || len(back.jobs) != len(lp.jobs) {
			t.Fatalf("written back, the record reads otherwise: %d jobs, %d before", len(back.jobs), len(lp.jobs))
		}
		for id, in := range lp.jobs {
			if !proto.Equal(back.jobs[id], in) {
				t.Fatalf("job %q reads otherwise written back", id)
			}
		}
	})
}
