package server

import (
	"math"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/huitian/huitian/model"
)

// metrics are the service's Prometheus metrics, on a registry of their own
// (no globals), served at /metrics. Gauges a planner does not report stay
// absent: they are registered, and get a series only when a planner
// reports a value.
type metrics struct {
	reg *prometheus.Registry

	// Per-cluster series exist for the first maxLabels clusters only, so
	// that clients choosing cluster ids cannot grow /metrics without bound.
	labelMu   sync.Mutex
	labelled  map[string]bool
	maxLabels int
	unlabeled prometheus.Counter

	planSeconds *prometheus.HistogramVec // policy
	decisions   *prometheus.CounterVec   // policy, kind
	fallbacks   *prometheus.CounterVec   // policy
	lpGap       *prometheus.GaugeVec     // cluster
	rpcErrors   *prometheus.CounterVec   // procedure, code
	events      *prometheus.CounterVec   // kind, result
	panics      *prometheus.CounterVec   // procedure

	storeErrors   *prometheus.CounterVec // op
	storeDegraded prometheus.Gauge

	completion   *prometheus.GaugeVec // cluster
	utilization  *prometheus.GaugeVec // cluster
	mainWait     *prometheus.GaugeVec // cluster
	exceed       *prometheus.GaugeVec // cluster
	tunerRuntime *prometheus.GaugeVec // cluster
	tunerProtect *prometheus.GaugeVec // cluster
	tunerEpsilon *prometheus.GaugeVec // cluster
	tunerHold    *prometheus.GaugeVec // cluster
	lostShare    *prometheus.GaugeVec // cluster
}

func newMetrics(cacheHitRatio func() float64, maxClusterLabels int) *metrics {
	reg := prometheus.NewRegistry()
	f := func(c prometheus.Collector) { reg.MustRegister(c) }
	gauge := func(name, help string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"cluster"})
		f(g)
		return g
	}
	m := &metrics{reg: reg, labelled: map[string]bool{}, maxLabels: maxClusterLabels}
	m.unlabeled = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "huitian_cluster_series_dropped_total",
		Help: "Per-cluster gauge updates not exported because the clusters with series of their own reached --max-cluster-labels.",
	})
	f(m.unlabeled)
	m.planSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "huitian_plan_duration_seconds", Help: "Wall time of one Plan cycle (conversion, solve, record), by policy.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"policy"})
	f(m.planSeconds)
	m.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "huitian_decisions_total",
		Help: "Decisions made, by policy and kind (start_regular, start_backfill, reservation, preempt_suspend, preempt_requeue, pending).",
	}, []string{"policy", "kind"})
	f(m.decisions)
	m.fallbacks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "huitian_plan_fallbacks_total", Help: "Cycles where the time budget ran out and the greedy pass made the plan, by policy.",
	}, []string{"policy"})
	f(m.fallbacks)
	m.lpGap = gauge("huitian_lp_gap", "Relative gap between the LP bound and the rounded plan in the cluster's last cycle that solved an LP.")
	m.rpcErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "huitian_rpc_errors_total", Help: "RPCs that ended in an error, by procedure and code.",
	}, []string{"procedure", "code"})
	f(m.rpcErrors)
	m.events = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "huitian_events_total", Help: "Job events received, by kind and result (accepted, duplicate).",
	}, []string{"kind", "result"})
	f(m.events)
	m.panics = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "huitian_panics_total", Help: "Recovered panics, by procedure.",
	}, []string{"procedure"})
	f(m.panics)
	m.storeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "huitian_store_write_errors_total", Help: "Store writes that failed (a full or failing disk), by operation (append_events, put_plan).",
	}, []string{"op"})
	f(m.storeErrors)
	m.storeDegraded = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "huitian_store_degraded", Help: "1 while the store's last write failed (events are refused, plans answered but not recorded); 0 after a write succeeds.",
	})
	f(m.storeDegraded)
	m.completion = gauge("huitian_backfill_completion_rate", "Share of backfill jobs that ended without preemption, over the tuner's window (as the planner reports it).")
	m.utilization = gauge("huitian_backfill_utilization", "Share of otherwise idle card-time that backfill used, over the tuner's window (as the planner reports it).")
	m.mainWait = gauge("huitian_main_wait_delta_seconds", "Main jobs' mean start delay past their first reserved start, over the tuner's window (as the planner reports it).")
	m.exceed = gauge("huitian_estimator_exceed_rate", "Share of recent jobs that outlived their predicted p90 (as the planner reports it).")
	m.tunerRuntime = gauge("huitian_tuner_max_backfill_runtime_seconds", "The tuner's maximum backfill runtime.")
	m.tunerProtect = gauge("huitian_tuner_protection_fraction", "The tuner's protection period as a share of a backfill job's estimated runtime.")
	m.tunerEpsilon = gauge("huitian_tuner_epsilon", "The tuner's risk tolerance.")
	m.tunerHold = gauge("huitian_tuner_hold_preemption", "1 while the tuner holds preemption for the head because the work lost to preemption is above its target.")
	m.lostShare = gauge("huitian_backfill_lost_share", "Card-seconds lost to the planner's preemptions over busy card-seconds, recent cycles (as the planner reports it).")
	f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "huitian_insight_cache_hit_ratio", Help: "Hit ratio of the hot per-cluster job-insight cache since start.",
	}, cacheHitRatio))
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// decided counts one cycle's decision.
func (m *metrics) decided(cluster string, p model.Policy, d *model.Decision, seconds float64) {
	pol := p.String()
	m.planSeconds.WithLabelValues(pol).Observe(seconds)
	count := func(kind string, n int) {
		if n > 0 {
			m.decisions.WithLabelValues(pol, kind).Add(float64(n))
		}
	}
	var regular, backfill, suspend, requeue int
	for _, s := range d.Starts {
		if s.Kind == model.Backfill {
			backfill++
		} else {
			regular++
		}
	}
	for _, p := range d.Preemptions {
		if p.Action == model.PreemptSuspend {
			suspend++
		} else {
			requeue++
		}
	}
	count("start_regular", regular)
	count("start_backfill", backfill)
	count("reservation", len(d.Reservations))
	count("preempt_suspend", suspend)
	count("preempt_requeue", requeue)
	count("pending", len(d.Pending))
	if d.Stats.Fallback {
		m.fallbacks.WithLabelValues(pol).Inc()
	}
	if (d.Stats.LPRows > 0 || d.Stats.LPCols > 0) && m.label(cluster) {
		m.lpGap.WithLabelValues(cluster).Set(d.Stats.Gap)
	}
}

// label says whether the cluster has series of its own, giving it some
// while fewer than maxLabels clusters have them; a cluster refused is
// counted.
func (m *metrics) label(cluster string) bool {
	m.labelMu.Lock()
	defer m.labelMu.Unlock()
	if m.labelled[cluster] {
		return true
	}
	if len(m.labelled) >= m.maxLabels {
		m.unlabeled.Inc()
		return false
	}
	m.labelled[cluster] = true
	return true
}

// status sets the per-cluster gauges from what a planner reports; a part it
// does not report (nil, or NaN for a measure without data) is removed, not
// zeroed.
func (m *metrics) status(cluster string, st *model.PlannerStatus) {
	if st == nil || st.Tuner == nil && st.Measures == nil {
		m.labelMu.Lock()
		has := m.labelled[cluster]
		m.labelMu.Unlock()
		if !has {
			return // nothing to set, nothing set before
		}
	} else if !m.label(cluster) {
		return
	}
	set := func(g *prometheus.GaugeVec, v float64, ok bool) {
		if ok && !math.IsNaN(v) {
			g.WithLabelValues(cluster).Set(v)
		} else {
			g.DeleteLabelValues(cluster)
		}
	}
	var t model.TunerParams
	var ms model.BackfillMeasures
	hasT, hasM := st != nil && st.Tuner != nil, st != nil && st.Measures != nil
	if hasT {
		t = *st.Tuner
	}
	if hasM {
		ms = *st.Measures
	}
	set(m.tunerRuntime, t.MaxBackfillRuntime.Seconds(), hasT)
	set(m.tunerProtect, t.ProtectFraction, hasT)
	set(m.tunerEpsilon, t.Epsilon, hasT)
	hold := 0.0
	if t.HoldPreemption {
		hold = 1
	}
	set(m.tunerHold, hold, hasT)
	set(m.lostShare, ms.LostShare, hasM)
	set(m.completion, ms.CompletionRate, hasM)
	set(m.utilization, ms.Utilization, hasM)
	set(m.mainWait, ms.MainWaitDelta.Seconds(), hasM && ms.MainJobs > 0)
	set(m.exceed, ms.EstimatorExceed, hasM)
}
