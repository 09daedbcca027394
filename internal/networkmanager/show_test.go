package networkmanager

import (
	"testing"

	"github.com/godbus/dbus/v5"

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

// TestForwardingRoundTrip: nmstate's ipv4 forwarding is NetworkManager's ipv4.forwarding,
// yes or no, and reads back from the applied profile; NetworkManager's default (-1) and
// auto (2) read back as nothing said.
func TestForwardingRoundTrip(t *testing.T) {
	for _, on := range []bool{true, false} {
		yes := true
		it := state.Interface{Name: "eth1", Type: state.Ethernet, IPv4: &state.IPConfig{Enabled: &yes, Forwarding: &on}}
		base := settings{"connection": {"type": dbus.MakeVariant("802-3-ethernet")}, "ipv4": {"method": dbus.MakeVariant("manual"),
			"address-data": dbus.MakeVariant([]map[string]dbus.Variant{{"address": dbus.MakeVariant("192.0.2.20"), "prefix": dbus.MakeVariant(uint32(24))}})}}
		s, err := buildProfile(it, state.Ethernet, base, "", profileExtras{}, "u")
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int32{true: 1, false: 0}[on]; s["ipv4"]["forwarding"].Value() != want {
			t.Errorf("forwarding %t: ipv4.forwarding %v, want %d", on, s["ipv4"]["forwarding"].Value(), want)
		}
		if m := s.str("ipv4", "method"); m != "manual" || len(dictList(s["ipv4"]["address-data"])) != 1 {
			t.Errorf("forwarding %t: the interface's addresses went (method %s, %v)", on, m, s["ipv4"]["address-data"])
		}
		ip := &state.IPConfig{}
		describeIP(ip, s, "ipv4")
		if ip.Forwarding == nil || *ip.Forwarding != on {
			t.Errorf("forwarding %t read back as %v", on, ip.Forwarding)
		}
	}
	for _, v := range []int32{-1, 2} {
		s := settings{"ipv4": {"method": dbus.MakeVariant("manual"), "forwarding": dbus.MakeVariant(v)}}
		ip := &state.IPConfig{}
		describeIP(ip, s, "ipv4")
		if ip.Forwarding != nil {
			t.Errorf("ipv4.forwarding %d read back as %v", v, *ip.Forwarding)
		}
	}
}
