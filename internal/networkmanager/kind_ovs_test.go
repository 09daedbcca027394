package networkmanager

import (
	"reflect"
	"testing"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// TestOVSPortTrunks: an OVS port's trunks go to NetworkManager as it reads ranges, with
// 64-bit start and end ("t": _nm_utils_ranges_from_dbus skips a range of other types), and
// read back as they were given.
func TestOVSPortTrunks(t *testing.T) {
	one, native := 1, false
	v := &state.BridgeVLAN{Mode: "trunk", EnableNative: &native,
		TrunkTags: []state.TrunkTag{{ID: &one}, {IDRange: &state.IDRange{Min: 10, Max: 20}}}}
	s := settings{}
	setOVSPortSection(s, v)
	for _, r := range dictList(s["ovs-port"]["trunks"]) {
		for _, k := range []string{"start", "end"} {
			if sig := r[k].Signature().String(); sig != "t" {
				t.Errorf("trunk range %s is %q, want t", k, sig)
			}
		}
	}
	if got := ovsPortVLAN(s); !reflect.DeepEqual(got, v) {
		t.Errorf("read back %+v, want %+v", got, v)
	}
}
