// Package shape builds uniform clusters: identical nodes of identical
// cards, grouped in order under leaf switches. The simulator's hgx:N, the
// service's WhatIf shapes, the benchmarks' clusters and the tests' all
// come from here; each names its nodes and switches its own way, which
// matters because every ordering in the planner ends on a name.
package shape
