package solver

import "testing"

func TestBetween(t *testing.T) {
	found := []durStart{{dur: 100, t: 50}, {dur: 300, t: 50}, {dur: 600, t: 90}, {dur: 900, t: neverStarts}}
	for _, tc := range []struct {
		name       string
		found      []durStart
		dur, after int64
		want       int64
		known      bool
	}{
		{"nothing found decides nothing", nil, 10, 1, 0, false},
		{"the same runtime has its answer", found, 600, 1, 90, true},
		{"between two that agree", found, 200, 1, 50, true},
		{"between two that differ", found, 400, 1, 0, false},
		{"shorter than one answered with after", found[:1], 60, 50, 50, true},
		{"shorter than one answered later than after", found[:1], 60, 1, 0, false},
		{"longer than every one found", found[:3], 700, 1, 0, false},
		{"longer than one that never starts", found, 1000, 1, neverStarts, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, known := between(tc.found, tc.dur, tc.after)
			if known != tc.known || known && got != tc.want {
				t.Errorf("between(%v, %d, %d) = %d, %v; want %d, %v", tc.found, tc.dur, tc.after, got, known, tc.want, tc.known)
			}
		})
	}
}
