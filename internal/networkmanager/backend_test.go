package networkmanager

import (
	"errors"
	"slices"
	"testing"

	"github.com/nmoverlay/nmoverlay/internal/backend"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// The handler acts on the seam's errors only: the engine's must reach it mapped, with
// what it needs kept, and the engine's own still reachable for its tests.
func TestBackendError(t *testing.T) {
	busy := &CheckpointBusyError{Path: "/org/freedesktop/NetworkManager/Checkpoint/7"}
	var seamBusy *backend.BusyError
	if err := BackendError(busy); !errors.As(err, &seamBusy) || seamBusy.Error() != busy.Error() || !errors.Is(err, busy) {
		t.Errorf("a held checkpoint maps to %#v, want a *backend.BusyError with its message wrapping it", err)
	}
	if !backend.NothingChanged(BackendError(busy)) {
		t.Error("a held checkpoint changed nothing")
	}

	rbErr := errors.New("checkpoint lost")
	ae := &ApplyError{Reason: "eth1: activation failed", Interfaces: []string{"eth1"}, RollbackErr: rbErr}
	var seamApply *backend.ApplyError
	err := BackendError(ae)
	if !errors.As(err, &seamApply) || seamApply.Reason != ae.Reason || !slices.Equal(seamApply.Interfaces, ae.Interfaces) ||
		seamApply.RollbackErr != rbErr || seamApply.Error() != ae.Error() || !errors.Is(err, ae) {
		t.Errorf("a change rolled back maps to %#v, want a *backend.ApplyError with its reason, interfaces, rollback error and message", err)
	}
	if backend.NothingChanged(err) {
		t.Error("a change rolled back counts as nothing changed")
	}

	other := errors.New("D-Bus: connection closed")
	if BackendError(other) != other {
		t.Error("an error the seam has no kind for is not handed on as it is")
	}
}

// Every macvlan mode nmstate names has NetworkManager's number, and back: a mode missing
// here would be written as 0 and read back as none.
func TestMACVLANModesMapped(t *testing.T) {
	for _, m := range state.MACVLANModes {
		if _, ok := macvlanMode[m]; !ok {
			t.Errorf("mac-vlan mode %q has no NetworkManager number", m)
		}
	}
	for m := range macvlanMode {
		if !slices.Contains(state.MACVLANModes, m) {
			t.Errorf("NetworkManager mode %q is not one nmstate names", m)
		}
	}
}

// Every interface kind the schema takes has its parts in this engine: a connection type
// to write it with, a device type to read it back as and, for a kind with a section, the
// writing and reading of it. A kind added to the schema alone fails here.
func TestEveryKindHasItsParts(t *testing.T) {
	unclaimed := map[uint32][]state.InterfaceType{} // the kinds a device type falls to
	for typ, k := range kinds {
		if k.claims == nil && !k.deviceless {
			unclaimed[k.deviceType] = append(unclaimed[k.deviceType], typ)
		}
	}
	for typ, k := range kinds {
		if n := len(unclaimed[k.deviceType]); n != 1 && !k.deviceless {
			t.Errorf("%s: device type %d falls to %d kinds without claims, want 1: %v", typ, k.deviceType, n, unclaimed[k.deviceType])
		}
	}
	for _, typ := range state.SupportedTypes {
		k := kinds[typ]
		if k == nil || k.connType == "" || k.deviceType == 0 && !k.deviceless {
			t.Errorf("%s: no NetworkManager connection type to write it with, or device type to read it back as", typ)
		}
	}
	for _, s := range state.Sections() {
		for _, typ := range s.Types() {
			if k := kinds[typ]; k == nil || k.write == nil || k.read == nil {
				t.Errorf("%s: its %s section is not written or not read back", typ, s.Key())
			}
		}
	}
}
