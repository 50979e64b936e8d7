package modeltest

import "context"

// Countdown is a context whose deadline passes after Left calls of Err: a
// planner's budget that runs out at a chosen point of a plan,
// deterministically (no timed test). With Fail set it ends with that
// error instead: context.Canceled is a caller that gives up there.
type Countdown struct {
	context.Context
	Left int
	Fail error
}

// Err is nil while calls are left, then Fail, or context.DeadlineExceeded
// when Fail is nil.
func (c *Countdown) Err() error {
	if c.Left <= 0 {
		if c.Fail != nil {
			return c.Fail
		}
		return context.DeadlineExceeded
	}
	c.Left--
	return nil
}
