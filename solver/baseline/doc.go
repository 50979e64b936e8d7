// Package baseline holds the heuristic planners huitian is measured
// against — FCFS, EASY, conservative, hybrid depth N and EASY-SJBF — as one
// backfill algorithm with parameters. They trust the user's time limit as
// the runtime and never preempt.
package baseline
