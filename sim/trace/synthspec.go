package trace

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrSynthSpec is wrapped by every error of ParseSynthSpec.
var ErrSynthSpec = errors.New("trace: synth spec")

// ParseSynthSpec reads a synthetic workload spec such as
// "synth:jobs=1000000,seed=1,load=0.9,cards=1024,users=256". The "synth:" prefix is
// optional; jobs is required; seed defaults to 0 and load, cards and users to
// SynthOptions' defaults. Keys may not repeat.
func ParseSynthSpec(s string) (SynthOptions, error) {
	var o SynthOptions
	body := strings.TrimSpace(s)
	body = strings.TrimPrefix(body, "synth:")
	if strings.TrimSpace(body) == "" {
		return o, fmt.Errorf("%w %q: empty (want e.g. synth:jobs=1000,seed=1,load=0.9)", ErrSynthSpec, cut(s))
	}
	seen := map[string]bool{}
	for i, item := range strings.Split(body, ",") {
		key, val, ok := strings.Cut(item, "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if !ok || key == "" {
			return o, fmt.Errorf("%w: item %d %q: want key=value", ErrSynthSpec, i+1, cut(item))
		}
		if seen[key] {
			return o, fmt.Errorf("%w: key %s: given twice", ErrSynthSpec, key)
		}
		seen[key] = true
		var err error
		switch key {
		case "jobs":
			o.Jobs, err = specInt(val, 1, maxSynthJobs)
		case "seed":
			o.Seed, err = strconv.ParseUint(val, 10, 64)
			err = unwrapNum(err)
		case "load":
			o.Load, err = strconv.ParseFloat(val, 64)
			err = unwrapNum(err)
			if err == nil && !(o.Load >= minSynthLoad && o.Load <= 100) {
				err = errors.New("want in [0.001, 100]")
			}
		case "cards":
			o.Cards, err = specInt(val, 1, maxCards)
		case "users":
			o.Users, err = specInt(val, 1, 1_000_000)
		default:
			return o, fmt.Errorf("%w: unknown key %q (want jobs, seed, load, cards, users)", ErrSynthSpec, cut(key))
		}
		if err != nil {
			return o, fmt.Errorf("%w: key %s %q: %w", ErrSynthSpec, key, cut(val), err)
		}
	}
	if !seen["jobs"] {
		return o, fmt.Errorf("%w: key jobs: required", ErrSynthSpec)
	}
	return o.withDefaults(), nil
}

func specInt(s string, lo, hi int) (int, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, unwrapNum(err)
	}
	if v < int64(lo) || v > int64(hi) {
		return 0, fmt.Errorf("want %d … %d", lo, hi)
	}
	return int(v), nil
}

func cut(s string) string {
	if len(s) > 64 {
		return s[:64]
	}
	return s
}

// String is the spec that ParseSynthSpec reads back into o (with defaults filled).
func (o SynthOptions) String() string {
	o = o.withDefaults()
	load := strconv.FormatFloat(o.Load, 'g', -1, 64)
	return fmt.Sprintf("synth:jobs=%d,seed=%d,load=%s,cards=%d,users=%d", o.Jobs, o.Seed, load, o.Cards, o.Users)
}
