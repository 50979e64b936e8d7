// Package clp solves linear programs with COIN-OR CLP, the simplex LP solver
// (EPL-2.0), through its C interface; on Debian the headers and library come
// from the coinor-libclp-dev package, which scripts/deps.sh installs.
//
// Solve and SolveContext solve one Problem in a fresh CLP model that is freed
// before they return. A Model keeps a loaded problem for re-solving after a
// bound change (warm start from the previous basis); it must be closed.
//
// CLP is thread-compatible, not thread-safe: separate models may be solved
// on separate goroutines at the same time, one model may not.
package clp
