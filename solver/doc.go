// Package solver plans one scheduling cycle: Plan(ctx, snapshot) → Decision.
// It is pure: no clock, no I/O, no goroutines, no package-level state. The
// same snapshot gives the same decision. See README.md for the cycle and
// its words.
package solver
