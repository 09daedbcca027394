package main

import "testing"

func TestAfterBurst(t *testing.T) {
	for _, tc := range []struct {
		name              string
		working           bool
		allocated         uint64
		wantWorking, trim bool
	}{
		{name: "idle stays idle", allocated: 0},
		{name: "a little allocation is idle", allocated: burstBytes - 1},
		{name: "a burst starts: not yet", allocated: 10 << 20, wantWorking: true},
		{name: "a burst goes on", working: true, allocated: 10 << 20, wantWorking: true},
		{name: "a burst ends: trim once", working: true, allocated: 4 << 10, trim: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			working, trim := afterBurst(tc.working, tc.allocated)
			if working != tc.wantWorking || trim != tc.trim {
				t.Errorf("afterBurst(%v, %d) = %v, %v; want %v, %v", tc.working, tc.allocated, working, trim, tc.wantWorking, tc.trim)
			}
		})
	}
}
