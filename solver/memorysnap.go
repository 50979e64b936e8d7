package solver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/huitian/huitian/solver/estimate"
	"github.com/huitian/huitian/solver/tune"
)

// Snapshotter is a Learner whose memory has a saved form: the owner may
// save it and later restore it into a fresh planner of the same kind and
// configuration instead of replaying everything the planner was fed.
type Snapshotter interface {
	Learner
	// MarshalMemory encodes the memory, deterministically: the same memory
	// gives the same bytes.
	MarshalMemory() ([]byte, error)
	// UnmarshalMemory replaces the memory with one MarshalMemory encoded.
	// It fails (and leaves the memory as it was) on bytes of another
	// encoding version (ErrMemoryVersion), of another planner, or invalid.
	UnmarshalMemory(b []byte) error
}

// MemoryVersion is the version of the encoding MarshalMemory writes. It
// changes whenever what the memory holds, or how, changes. Version 2 added
// the jobs told to yield and whom for; a version 1 memory is read as
// having none.
const MemoryVersion = 2

// ErrMemoryVersion says a saved memory was encoded by another version.
var ErrMemoryVersion = errors.New("solver: saved memory is of another encoding version")

// savedMemory is the saved form of memory: every field Plan, Observe and
// Decided read, maps as sorted slices.
type savedMemory struct {
	Version int    `json:"version"`
	Planner string `json:"planner"`

	History       estimate.WindowState `json:"history"`
	Tuner         tune.State           `json:"tuner"`
	FirstReserved []jobTime            `json:"firstReserved"`
	Window        []jobTime            `json:"window"`
	Yielding      []jobTime            `json:"yielding,omitempty"`   // version 2
	YieldedFor    []jobFor             `json:"yieldedFor,omitempty"` // version 2
	Preempted     []string             `json:"preempted"`
	LastNow       time.Time            `json:"lastNow"`
	LastIdle      int                  `json:"lastIdle"`
	LastBackfill  int                  `json:"lastBackfill"`
	LastBusy      int                  `json:"lastBusy"`
}

type jobFor struct {
	Job string `json:"job"`
	For string `json:"for"`
}

type jobTime struct {
	Job  string    `json:"job"`
	Time time.Time `json:"time"`
}

func sortedTimes(m map[string]time.Time) []jobTime {
	out := make([]jobTime, 0, len(m))
	for j, t := range m {
		out = append(out, jobTime{j, t})
	}
	slices.SortFunc(out, func(a, b jobTime) int { return strings.Compare(a.Job, b.Job) })
	return out
}

func timesOf(what string, s []jobTime) (map[string]time.Time, error) {
	m := make(map[string]time.Time, len(s))
	for _, jt := range s {
		if _, dup := m[jt.Job]; dup {
			return nil, fmt.Errorf("%s: job %q twice", what, jt.Job)
		}
		m[jt.Job] = jt.Time
	}
	return m, nil
}

// MarshalMemory encodes what the planner has learned (Snapshotter).
func (h *Huitian) MarshalMemory() ([]byte, error) {
	m := &h.mem
	sm := savedMemory{
		Version: MemoryVersion, Planner: h.name,
		History:       m.hist.State(),
		Tuner:         m.tuner,
		FirstReserved: sortedTimes(m.firstReserved),
		Window:        sortedTimes(m.window),
		Yielding:      sortedTimes(m.yielding),
		YieldedFor:    make([]jobFor, 0, len(m.yieldedFor)),
		Preempted:     make([]string, 0, len(m.preempted)),
		LastNow:       m.lastNow, LastIdle: m.lastIdle, LastBackfill: m.lastBackfill, LastBusy: m.lastBusy,
	}
	for j, p := range m.preempted {
		if p {
			sm.Preempted = append(sm.Preempted, j)
		}
	}
	slices.Sort(sm.Preempted)
	for j, f := range m.yieldedFor {
		sm.YieldedFor = append(sm.YieldedFor, jobFor{j, f})
	}
	slices.SortFunc(sm.YieldedFor, func(a, b jobFor) int { return strings.Compare(a.Job, b.Job) })
	b, err := json.Marshal(&sm)
	if err != nil {
		return nil, fmt.Errorf("solver: encode memory: %w", err)
	}
	return b, nil
}

// UnmarshalMemory restores a memory MarshalMemory encoded (Snapshotter).
func (h *Huitian) UnmarshalMemory(b []byte) error {
	var head struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return fmt.Errorf("solver: decode memory: %w", err)
	}
	if head.Version != MemoryVersion && head.Version != 1 {
		return fmt.Errorf("%w: %d, this planner reads %d", ErrMemoryVersion, head.Version, MemoryVersion)
	}
	var sm savedMemory
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sm); err != nil {
		return fmt.Errorf("solver: decode memory: %w", err)
	}
	if sm.Planner != h.name {
		return fmt.Errorf("solver: saved memory is of planner %q, not %q", sm.Planner, h.name)
	}
	hist, err := estimate.RestoreWindow(h.cfg.Estimate, sm.History)
	if err != nil {
		return fmt.Errorf("solver: decode memory: %w", err)
	}
	first, err := timesOf("first reserved", sm.FirstReserved)
	if err != nil {
		return fmt.Errorf("solver: decode memory: %w", err)
	}
	window, err := timesOf("window", sm.Window)
	if err != nil {
		return fmt.Errorf("solver: decode memory: %w", err)
	}
	yielding, err := timesOf("yielding", sm.Yielding)
	if err != nil {
		return fmt.Errorf("solver: decode memory: %w", err)
	}
	yieldedFor := make(map[string]string, len(sm.YieldedFor))
	for _, jf := range sm.YieldedFor {
		if _, dup := yieldedFor[jf.Job]; dup {
			return fmt.Errorf("solver: decode memory: yielded for: job %q twice", jf.Job)
		}
		yieldedFor[jf.Job] = jf.For
	}
	preempted := make(map[string]bool, len(sm.Preempted))
	for _, j := range sm.Preempted {
		preempted[j] = true
	}
	h.mem = memory{
		hist: hist, tuner: sm.Tuner, firstReserved: first, window: window, yielding: yielding, yieldedFor: yieldedFor, preempted: preempted,
		lastNow: sm.LastNow, lastIdle: sm.LastIdle, lastBackfill: sm.LastBackfill, lastBusy: sm.LastBusy,
		marks: h.mem.marks + 1, // every membership read before is stale
	}
	h.est, h.estKept = nil, 0
	return nil
}
