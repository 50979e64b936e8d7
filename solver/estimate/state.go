package estimate

import (
	"fmt"
	"slices"
	"strings"
)

// WindowState is a Window's contents as plain data, for saving a planner's
// memory: every ring in key order, with the position of its next
// overwrite. A Window restored from it estimates and scores as the one it
// was taken from.
type WindowState struct {
	Keys []RingState    `json:"keys"`
	Errs []ErrRingState `json:"errs"`
	N    int            `json:"n"` // finished jobs added
}

// RingState is one key's recent actual/limit ratios, in ring order.
type RingState struct {
	Key  string    `json:"key"`
	Vals []float64 `json:"vals"`
	Next int       `json:"next"`
}

// ErrRingState is one user+class's recent scores (true: outlived p90).
type ErrRingState struct {
	Key  string `json:"key"`
	Hits []bool `json:"hits"`
	Next int    `json:"next"`
}

// State returns the window's contents, sorted by key.
func (w *Window) State() WindowState {
	st := WindowState{N: w.n, Keys: make([]RingState, 0, len(w.keys)), Errs: make([]ErrRingState, 0, len(w.errs))}
	for k, r := range w.keys {
		st.Keys = append(st.Keys, RingState{Key: k, Vals: slices.Clone(r.vals), Next: r.next})
	}
	for k, e := range w.errs {
		st.Errs = append(st.Errs, ErrRingState{Key: k, Hits: slices.Clone(e.hits), Next: e.next})
	}
	slices.SortFunc(st.Keys, func(a, b RingState) int { return strings.Compare(a.Key, b.Key) })
	slices.SortFunc(st.Errs, func(a, b ErrRingState) int { return strings.Compare(a.Key, b.Key) })
	return st
}

// RestoreWindow returns a history with cfg and the contents st. It checks
// what Add relies on: no key twice, each ring's next position inside it.
func RestoreWindow(cfg Config, st WindowState) (*Window, error) {
	w := NewWindow(cfg)
	if st.N < 0 {
		return nil, fmt.Errorf("estimate: window state: negative job count %d", st.N)
	}
	w.n = st.N
	for _, r := range st.Keys {
		if _, dup := w.keys[r.Key]; dup {
			return nil, fmt.Errorf("estimate: window state: key %q twice", r.Key)
		}
		if r.Next < 0 || r.Next > 0 && r.Next >= len(r.Vals) {
			return nil, fmt.Errorf("estimate: window state: key %q: next %d outside its %d values", r.Key, r.Next, len(r.Vals))
		}
		w.keys[r.Key] = &ring{vals: slices.Clone(r.Vals), next: r.Next}
		w.maxCards = max(w.maxCards, keyCards(r.Key))
	}
	for _, e := range st.Errs {
		if _, dup := w.errs[e.Key]; dup {
			return nil, fmt.Errorf("estimate: window state: error key %q twice", e.Key)
		}
		if e.Next < 0 || e.Next > 0 && e.Next >= len(e.Hits) {
			return nil, fmt.Errorf("estimate: window state: error key %q: next %d outside its %d scores", e.Key, e.Next, len(e.Hits))
		}
		w.errs[e.Key] = &errRing{hits: slices.Clone(e.Hits), next: e.Next}
	}
	return w, nil
}
