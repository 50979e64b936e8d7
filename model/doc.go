// Package model holds huitian's domain types — clusters, cards, jobs,
// allocations, snapshots and decisions — with their invariants and
// validation. It does no I/O and reads no clock.
package model
