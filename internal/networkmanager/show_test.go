package networkmanager

import (
	"testing"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// On the userspace datapath br-ex's kernel side is a tap NetworkManager shows as a device
// of its own: it is folded into the OVS interface, which takes its MAC address; a tap of
// another name stays.
func TestFoldTaps(t *testing.T) {
	devs := foldTaps([]device{
		{name: "br-ex", typ: state.OVSInterface, key: "br-ex"},
		{name: "br-ex", nmType: nmDeviceTypeTun, key: "br-ex", mac: "02:00:00:00:00:01"},
		{name: "br-ex", typ: state.OVSBridge, key: "br-ex,type=ovs-bridge"},
		{name: "tap0", nmType: nmDeviceTypeTun, key: "tap0", mac: "02:00:00:00:00:02"},
	})
	if len(devs) != 3 || devs[0].mac != "02:00:00:00:00:01" || devs[1].typ != state.OVSBridge || devs[2].name != "tap0" {
		t.Errorf("folded: %+v", devs)
	}
}
