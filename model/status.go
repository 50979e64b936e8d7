package model

import "time"

// PlannerStatus is what a planner with memory can say about itself between
// cycles: the adaptive controller's parameters and the backfill measures
// over its window. A nil part means the planner does not have it (the
// baselines have neither). The service reports it as is and never fills in
// a part the planner did not give.
type PlannerStatus struct {
	Tuner    *TunerParams
	Measures *BackfillMeasures
}

// TunerParams are the adaptive controller's current settings.
type TunerParams struct {
	MaxBackfillRuntime time.Duration
	// ProtectFraction is the protection period as a share of a backfill
	// job's estimated runtime, in [0, 1].
	ProtectFraction float64
	// Epsilon is the controller's risk tolerance, in [0, 1].
	Epsilon float64
	// HoldPreemption: the work lost to preemption is above its target, so
	// no backfill job is made to yield for the head (beyond an overrun
	// window) until it is back below.
	HoldPreemption bool
}

// BackfillMeasures say whether backfill works, over the tuner's window. A
// measure without data is NaN.
type BackfillMeasures struct {
	CompletionRate  float64       // backfill jobs that ended without preemption, [0, 1]
	Utilization     float64       // share of otherwise idle card-time backfill used, [0, 1]
	MainWaitDelta   time.Duration // main jobs' mean start delay past their first reservation
	EstimatorExceed float64       // share of recent jobs that outlived their predicted p90, [0, 1]
	LostShare       float64       // card-seconds lost to the planner's preemptions over busy card-seconds, recent cycles, ≥ 0
	BackfillJobs    int
	MainJobs        int
}

// RuntimeEstimate says how a planner estimates a job's runtime, for the
// user's view.
type RuntimeEstimate struct {
	// Source is the history level the estimate rests on, e.g.
	// "user+class+cards", "class", "all", or "limit" (the user's time limit).
	Source     string
	Samples    int     // finished jobs the estimate rests on
	Quantile   float64 // the runtime quantile the planner plans with
	Unreliable bool    // the estimator erred too often here, so the limit is used
}

// FragmentSummary is the idle capacity of one class in one cycle.
type FragmentSummary struct {
	Class       FragmentClass
	Cards       int
	Nodes       int
	CardSeconds float64 // within the planning horizon
}
