// Package server is huitian's planning service: PlannerService over Connect,
// gRPC and gRPC-Web on one port, with a durable per-cluster event log, the
// last plan's per-job insight, Prometheus metrics, health and reflection.
//
// One Server plans several clusters. Each cluster keeps one planner per
// (policy, reservation depth); a planner with memory (solver.Learner) is fed
// every event the cluster stores, in stored order, and every decision it
// makes. On start, a fresh Learner is restored from its saved memory (when
// it has one, solver.Snapshotter) and replays the cluster's stored log
// after it, so its memory after a restart equals its memory before.
//
// Lock order: Server.mu, then cluster.mu; the store's own locks are below
// both. Only Server.mu guards the cluster map; cluster.mu guards a
// cluster's planners and serializes its stored writes, so that stored order
// is delivery order.
package server
