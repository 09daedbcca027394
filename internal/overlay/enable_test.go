package overlay

import (
	"context"
	"strings"
	"testing"

	"github.com/nmoverlay/nmoverlay/internal/paths"
)

func TestDecideEnable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		marker  *Degraded
		entries int
		want    EnableAction
		why     string
	}{
		{"verified at boot", nil, 0, EnableNothing, "in use"},
		{"verified at boot, policies applied since", nil, 3, EnableNothing, "in use"},
		{"helper installed after NetworkManager started", &Degraded{Reason: paths.ReasonNotVerified}, 0, EnableSetUp, "has not verified"},
		{"setup failed at boot, fixed since", &Degraded{Reason: "upper-on-tmpfs: /run/x is not on tmpfs"}, 0, EnableSetUp, "upper-on-tmpfs"},
		{"enabled, NetworkManager not restarted", &Degraded{Reason: ReasonRestartPending}, 0, EnableSetUp, "until it restarts"},
		{"something wrote into the unused tmpfs layer", &Degraded{Reason: paths.ReasonNotVerified}, 1, EnableRefuse, "holds 1 entries"},
		{"restart pending with files in the layer", &Degraded{Reason: ReasonRestartPending}, 2, EnableRefuse, "reboot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := DecideEnable(tc.marker, tc.entries)
			if got != tc.want || !strings.Contains(why, tc.why) {
				t.Errorf("DecideEnable = %s, %q; want %s, containing %q", got, why, tc.want, tc.why)
			}
		})
	}
}

func TestClearBridgeMappingsWithoutOpenVSwitch(t *testing.T) {
	removed, err := ClearBridgeMappings(context.Background(), t.TempDir()+"/db.sock")
	if removed != nil || err != nil {
		t.Errorf("no ovsdb-server: %v, %v; want nothing to do", removed, err)
	}
}
