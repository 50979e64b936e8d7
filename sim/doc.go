// Package sim is a discrete-event simulator that plays the resource manager
// for a planner: it replays a workload trace on a cluster, builds a
// model.Snapshot every scheduling cycle, calls any solver.Planner, checks the
// decision and executes it, and measures what happened to every job.
//
// The clock is virtual, in integer seconds from the trace's epoch; events are
// ordered by (time, kind, sequence), completions before arrivals at the same
// instant, and one planning cycle runs per distinct event time. The planner
// sees only what a real resource manager would know then: the jobs submitted
// so far and the running jobs' elapsed time, never an actual runtime.
package sim
