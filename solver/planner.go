package solver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/solver/baseline"
	"github.com/huitian/huitian/solver/clp"
)

// Planner plans one cycle: a pure function of the snapshot (and, for
// planners with memory, of the state passed in with it).
type Planner interface {
	Plan(ctx context.Context, s *model.Snapshot) (*model.Decision, error)
}

// ErrUnimplemented is returned for a policy that is not built yet.
var ErrUnimplemented = errors.New("solver: policy not implemented")

// DefaultPolicy is used when a snapshot leaves the policy unspecified.
const DefaultPolicy = model.PolicyEASY

// New returns the planner for a policy.
func New(p model.Policy, depth int) (Planner, error) {
	if p == model.PolicyDefault {
		p = DefaultPolicy
	}
	if params, ok := baseline.ForPolicy(p, depth); ok {
		return baseline.New(params), nil
	}
	switch p {
	case model.PolicyHuitianGreedy:
		return NewHuitianGreedy(DefaultConfig()), nil
	case model.PolicyHuitian:
		return NewHuitian(DefaultConfig(), clp.LP{}), nil
	}
	return nil, fmt.Errorf("solver: unknown policy %d", p)
}

// NewPlacement returns the planner for a policy with end-aligned placement
// on or off (profile.Profile.SetAlignEnds): an ablation for the what-if,
// to tell what placement gives from what the policy does. By default the
// huitian planners align (Config.AlignEnds, while their history shows
// limits that order runtimes) and the baselines place by best fit alone,
// as the resource managers they stand for do; a baseline told to align
// has no history and aligns on its limits always.
func NewPlacement(p model.Policy, depth int, aligned bool) (Planner, error) {
	pl, err := New(p, depth)
	if err != nil {
		return nil, err
	}
	switch pl := pl.(type) {
	case *baseline.Planner:
		pl.P.AlignEnds = aligned
	case *Huitian:
		pl.cfg.AlignEnds = aligned
	}
	return pl, nil
}

// Ablation turns a huitian planner's mechanisms against its defaults, for
// the what-if (a policy name's +onenode, +nosat).
type Ablation struct {
	// OneNodeGangs sets Config.OneNodeGangs.
	OneNodeGangs bool
	// NoSaturation lends beyond EASY however deep the queue: no
	// Config.SaturatedBacklog.
	NoSaturation bool
}

// Ablate applies a to a huitian planner; other planners lend nothing
// beyond EASY, and a non-zero a is an error for them.
func Ablate(pl Planner, a Ablation) error {
	if a == (Ablation{}) {
		return nil
	}
	h, ok := pl.(*Huitian)
	if !ok {
		return fmt.Errorf("ablation %+v: %T is not a huitian planner", a, pl)
	}
	if a.OneNodeGangs {
		h.cfg.OneNodeGangs = true
	}
	if a.NoSaturation {
		h.cfg.SaturatedBacklog = time.Duration(math.MaxInt64)
	}
	return nil
}

// Plan validates nothing: it plans a snapshot that model.Snapshot.Validate
// accepted, with the snapshot's own policy.
func Plan(ctx context.Context, s *model.Snapshot) (*model.Decision, error) {
	pl, err := New(s.Options.Policy, s.Options.ReservationDepth)
	if err != nil {
		return nil, err
	}
	return pl.Plan(ctx, s)
}

// Learner is a planner with memory across cycles. The owner (the simulator,
// the service) reports job events as they happen and, after acting on a
// decision, the decision itself, so that what the planner learns is plain
// data fed in from outside and Plan stays a function of its inputs.
type Learner interface {
	Planner
	// Observe records a job event.
	Observe(e model.Event)
	// Decided records the decision made for a snapshot, after the owner acted on it.
	Decided(s *model.Snapshot, d *model.Decision)
}
