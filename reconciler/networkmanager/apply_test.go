package networkmanager

import (
	"testing"
	"time"
)

func TestApplyOptionsTimeouts(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		in                   ApplyOptions
		activation, rollback time.Duration
		fails                bool
	}{
		{"defaults", ApplyOptions{}, DefaultActivationTimeout, DefaultActivationTimeout + 60*time.Second, false},
		{"a short rollback timeout halves the activation wait", ApplyOptions{RollbackTimeout: 6 * time.Second}, 3 * time.Second, 6 * time.Second, false},
		{"activation as long as the rollback", ApplyOptions{RollbackTimeout: 30 * time.Second, ActivationTimeout: 30 * time.Second}, 0, 0, true},
		{"activation longer than the rollback", ApplyOptions{RollbackTimeout: 30 * time.Second, ActivationTimeout: 60 * time.Second}, 0, 0, true},
		{"both given, in order", ApplyOptions{RollbackTimeout: 90 * time.Second, ActivationTimeout: 60 * time.Second}, 60 * time.Second, 90 * time.Second, false},
	} {
		got, err := tc.in.withDefaults()
		if (err != nil) != tc.fails {
			t.Errorf("%s: error %v, want failure %v", tc.name, err, tc.fails)
			continue
		}
		if !tc.fails && (got.ActivationTimeout != tc.activation || got.RollbackTimeout != tc.rollback) {
			t.Errorf("%s: activation %s rollback %s, want %s and %s", tc.name, got.ActivationTimeout, got.RollbackTimeout, tc.activation, tc.rollback)
		}
	}
}
