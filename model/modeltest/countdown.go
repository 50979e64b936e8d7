package modeltest

import "context"

// Countdown is a context whose deadline passes after Left calls of Err: a
// planner's budget that runs out at a chosen point of a plan,
// deterministically (no timed test).
type Countdown struct {
	context.Context
	Left int
}

// Err is nil while calls are left, then context.DeadlineExceeded.
func (c *Countdown) Err() error {
	if c.Left <= 0 {
		return context.DeadlineExceeded
	}
	c.Left--
	return nil
}
