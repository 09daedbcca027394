package node

import (
	"testing"
	"time"
)

// A pass woken by a grant waits for the node's other grants: until none came for
// grantQuiet, at most grantGathering after the first.
func TestGatherWait(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	for _, tc := range []struct {
		name             string
		first, last, now time.Time
		want             time.Duration
	}{
		{"no burst", time.Time{}, time.Time{}, t0, 0},
		{"a lone grant, just in", t0, t0, t0, grantQuiet},
		{"a lone grant, quiet since", t0, t0, t0.Add(grantQuiet), 0},
		{"a lone grant, long ago", t0, t0, t0.Add(time.Hour), 0},
		{"another came 100 ms ago", t0, t0.Add(200 * ms), t0.Add(300 * ms), grantQuiet - 100*ms},
		{"a burst that keeps coming is capped", t0, t0.Add(1900 * ms), t0.Add(1950 * ms), 50 * ms},
		{"past the cap", t0, t0.Add(2500 * ms), t0.Add(2600 * ms), 0},
	} {
		if got := gatherWait(tc.first, tc.last, tc.now); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
