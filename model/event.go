package model

import "time"

// EventKind is what happened to a job.
type EventKind uint8

const (
	EventUnspecified EventKind = iota
	// EventStarted: the resource manager started the job.
	EventStarted
	// EventFinished: the job ended; Exit says how.
	EventFinished
	// EventPreempted: the job yielded its cards; Action says how.
	EventPreempted
	// EventProgress: the job reported how far it is (Progress in [0,1]).
	EventProgress
)

var eventNames = [...]string{"unspecified", "started", "finished", "preempted", "progress"}

func (k EventKind) String() string {
	if int(k) < len(eventNames) {
		return eventNames[k]
	}
	return "event(?)"
}

// ExitState is how a job ended.
type ExitState uint8

const (
	ExitUnspecified ExitState = iota
	ExitCompleted
	ExitFailed
	// ExitKilledAtLimit: the resource manager killed it at its time limit.
	ExitKilledAtLimit
)

var exitNames = [...]string{"unspecified", "completed", "failed", "killed-at-limit"}

func (e ExitState) String() string {
	if int(e) < len(exitNames) {
		return exitNames[e]
	}
	return "exit(?)"
}

// Event is one fact about a job that a planner with memory learns from.
// The resource manager (or the simulator) reports events; the planner never
// sees the future.
type Event struct {
	Kind  EventKind
	JobID string
	Time  time.Time
	// Job is the job's specification; required for EventStarted and
	// EventFinished, optional otherwise.
	Job   *Job
	Alloc AllocKind // for EventStarted and EventFinished
	// Start is when the job (last) started, for EventFinished and EventPreempted.
	Start    time.Time
	Exit     ExitState     // for EventFinished
	Action   PreemptAction // for EventPreempted
	Progress float64       // for EventProgress
}

// Key identifies an event for idempotent delivery: the same job, kind and
// time is the same event.
func (e *Event) Key() string {
	return e.JobID + "\x00" + e.Kind.String() + "\x00" + e.Time.UTC().Format(time.RFC3339Nano)
}
