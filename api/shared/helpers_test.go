package shared

import (
	"testing"
	"time"
)

func TestSelectsNode(t *testing.T) {
	node := map[string]string{"kubernetes.io/hostname": "w1", "node-role.kubernetes.io/worker": ""}
	for _, tc := range []struct {
		sel  map[string]string
		want bool
	}{
		{nil, true},
		{map[string]string{}, true},
		{map[string]string{"kubernetes.io/hostname": "w1"}, true},
		{map[string]string{"node-role.kubernetes.io/worker": ""}, true},
		{map[string]string{"kubernetes.io/hostname": "w2"}, false},
		{map[string]string{"node-role.kubernetes.io/master": ""}, false},
		{map[string]string{"kubernetes.io/hostname": "w1", "missing": "x"}, false},
	} {
		if got := SelectsNode(tc.sel, node); got != tc.want {
			t.Errorf("SelectsNode(%v) = %v, want %v", tc.sel, got, tc.want)
		}
	}
}

func TestRolloutSlot(t *testing.T) {
	at := time.Date(2026, 11, 24, 15, 40, 0, 0, time.UTC)
	gen, got, ok := RolloutSlot(map[string]string{RolloutSlotAnnotation: FormatRolloutSlot(3, at)})
	if !ok || gen != 3 || !got.Equal(at) {
		t.Errorf("round trip: %d %v %v", gen, got, ok)
	}
	for _, v := range []string{"", "3", "x/2026-11-24T15:40:00Z", "3/yesterday", "/2026-11-24T15:40:00Z"} {
		if _, _, ok := RolloutSlot(map[string]string{RolloutSlotAnnotation: v}); ok {
			t.Errorf("%q parsed as a grant", v)
		}
	}
	if _, _, ok := RolloutSlot(nil); ok {
		t.Error("no annotations parsed as a grant")
	}
}
