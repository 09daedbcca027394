package node

import (
	"testing"
	"time"
)

// A pass woken by a grant waits for the node's other grants while a selected policy still
// waits for one: until none came for grantQuiet, at most grantGathering after the first.
func TestGatherWait(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	for _, tc := range []struct {
		name             string
		first, last, now time.Time
		awaited          bool
		want             time.Duration
	}{
		{"no burst", time.Time{}, time.Time{}, t0, true, 0},
		{"a grant just in, another policy waits for its own", t0, t0, t0, true, grantQuiet},
		{"quiet since the grant", t0, t0, t0.Add(grantQuiet), true, 0},
		{"the grant came long ago", t0, t0, t0.Add(time.Hour), true, 0},
		{"another came 100 ms ago", t0, t0.Add(200 * ms), t0.Add(300 * ms), true, grantQuiet - 100*ms},
		{"a burst that keeps coming is capped", t0, t0.Add(1900 * ms), t0.Add(1950 * ms), true, 50 * ms},
		{"past the cap", t0, t0.Add(2500 * ms), t0.Add(2600 * ms), true, 0},
		{"a lone grant, no other policy waits for one", t0, t0, t0, false, 0},
		{"a burst whose policies all have their grants", t0, t0.Add(200 * ms), t0.Add(300 * ms), false, 0},
	} {
		if got := gatherWait(tc.first, tc.last, tc.now, tc.awaited); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
