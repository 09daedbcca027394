package node

import (
	"testing"
	"time"
)

func TestNextSpacing(t *testing.T) {
	const least, most = 5 * time.Second, 20 * time.Second
	for _, tc := range []struct {
		name         string
		spacing, gap time.Duration
		want         time.Duration
	}{
		{name: "a write right at its spacing: changes keep coming", spacing: least, gap: least, want: 2 * least},
		{name: "doubled again while they keep coming", spacing: 10 * time.Second, gap: 11 * time.Second, want: most},
		{name: "never past most", spacing: most, gap: most, want: most},
		{name: "a write after a short rest still counts as the same burst", spacing: 10 * time.Second, gap: 29 * time.Second, want: most},
		{name: "at rest most past the spacing: back to least", spacing: 10 * time.Second, gap: 30 * time.Second, want: least},
		{name: "at rest long after: least", spacing: most, gap: time.Hour, want: least},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextSpacing(tc.spacing, tc.gap, least, most); got != tc.want {
				t.Errorf("nextSpacing(%v, %v) = %v, want %v", tc.spacing, tc.gap, got, tc.want)
			}
		})
	}
}
