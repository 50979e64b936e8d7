// Package lp formulates backfill placement as a linear program and rounds
// its solution: candidates × placement options (a node, or a spread over
// a switch or the cluster, at a window level) under per-node capacities of
// nested window levels. It declares the LP solver it needs (Solver);
// solver/clp implements it. See solver/README.md for the formulation and
// how its size grows.
package lp
