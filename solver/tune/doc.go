// Package tune is the adaptive controller of backfill: from a sliding
// window of backfill outcomes, main-job waits and per-cycle capacity it
// computes the three measures (backfill completion rate, backfill
// utilization, change in main-job wait) and moves the maximum backfill
// runtime, the protection fraction and the risk bound ε within bounds; it
// holds preemption for the head while the work lost to preemption is above
// its target share of the busy card-seconds.
// Its state is plain data that the planner's owner keeps.
package tune
