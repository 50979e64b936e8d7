// Package bench builds the planning benchmarks' workloads — clusters of
// 8-card nodes under 32-node switches, a quarter of the cards busy, a deep
// queue shaped like the synthetic GPU workload — and measures planners on
// them. `go test -bench` and `huitian bench` both use it.
package bench
