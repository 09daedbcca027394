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

// The digest that tells whether the state changed is by content: the API server gives
// the state back with its keys in its own order.
func TestStateSum(t *testing.T) {
	ours := []byte(`{"interfaces":[{"name":"eth0","mtu":1500,"type":"ethernet"}],"routes":{"running":[]}}`)
	for _, tc := range []struct {
		name  string
		other []byte
		same  bool
	}{
		{"the same", ours, true},
		{"keys in another order, other spacing", []byte(`{"routes": {"running": []}, "interfaces": [{"type": "ethernet", "mtu": 1500, "name": "eth0"}]}`), true},
		{"a value changed", []byte(`{"interfaces":[{"name":"eth0","mtu":9000,"type":"ethernet"}],"routes":{"running":[]}}`), false},
		{"an interface more", []byte(`{"interfaces":[{"name":"eth0","mtu":1500,"type":"ethernet"},{"name":"eth1"}],"routes":{"running":[]}}`), false},
		{"nothing", nil, false},
		{"not JSON", []byte(`{"interfaces":`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stateSum(tc.other) == stateSum(ours); got != tc.same {
				t.Errorf("same digest: %v, want %v", got, tc.same)
			}
		})
	}
	if stateSum(nil) != stateSum([]byte{}) {
		t.Error("no state has one digest")
	}
}
