package networkmanager

import (
	"encoding/json"
	"testing"

	"github.com/godbus/dbus/v5"
)

// A neighbour as NetworkManager 1.42 reports it (lldpd on a switch port), in nmstate's form.
func TestLLDPTLVs(t *testing.T) {
	v := dbus.MakeVariant
	nb := map[string]dbus.Variant{
		"raw":                 v([]byte{1, 2}),
		"destination":         v("nearest-bridge"),
		"chassis-id-type":     v(uint32(4)),
		"chassis-id":          v("52:54:00:AB:CD:EF"),
		"port-id-type":        v(uint32(5)),
		"port-id":             v("Ethernet12"),
		"port-description":    v("uplink"),
		"system-name":         v("tor-1"),
		"system-description":  v("Debian lldpd"),
		"system-capabilities": v(uint32(1<<2 | 1<<4)),
		"ieee-802-1-vlans": v([]map[string]dbus.Variant{
			{"vid": v(uint32(10)), "name": v("vlan10")}, {"vid": v(uint32(20))}}),
		"ieee-802-1-ppvids":       v([]map[string]dbus.Variant{{"ppvid": v(uint32(5)), "flags": v(uint32(1))}}),
		"ieee-802-3-mac-phy-conf": v(map[string]dbus.Variant{"autoneg": v(uint32(1)), "pmd-autoneg-cap": v(uint32(0x6c00)), "operational-mau-type": v(uint32(16))}),
		"management-addresses": v([]map[string]dbus.Variant{
			{"address-subtype": v(uint32(1)), "address": v([]byte{192, 0, 2, 1}), "interface-number-subtype": v(uint32(2)), "interface-number": v(uint32(3))},
			{"address-subtype": v(uint32(2)), "address": v(make([]byte, 16)), "interface-number-subtype": v(uint32(2)), "interface-number": v(uint32(3))},
			{"address-subtype": v(uint32(6)), "address": v([]byte{0x52, 0x54, 0, 0xab, 0xcd, 0xef}), "interface-number-subtype": v(uint32(1)), "interface-number": v(uint32(0))},
			{"address-subtype": v(uint32(1)), "address": v([]byte{1, 2, 3}), "interface-number-subtype": v(uint32(2)), "interface-number": v(uint32(3))},
		}),
		"ieee-802-3-max-frame-size": v(uint32(1522)),
	}
	b, _ := json.Marshal(lldpTLVs(nb))
	want := `[{"system-name":"tor-1","type":5},{"system-description":"Debian lldpd","type":6},` +
		`{"system-capabilities":["MAC Bridge component","Router"],"type":7},` +
		`{"_description":"MAC address","chassis-id":"52:54:00:AB:CD:EF","chassis-id-type":4,"type":1},` +
		`{"_description":"Interface name","port-id":"Ethernet12","port-id-type":5,"type":2},` +
		`{"ieee-802-1-vlans":[{"name":"vlan10","vid":10}],"oui":"00:80:c2","subtype":3,"type":127},` +
		`{"ieee-802-3-mac-phy-conf":{"autoneg":true,"operational-mau-type":16,"pmd-autoneg-cap":27648},"oui":"00:12:0f","subtype":1,"type":127},` +
		`{"ieee-802-1-ppvids":[5],"oui":"00:80:c2","subtype":2,"type":127},` +
		`{"management-addresses":[{"address":"192.0.2.1","address-subtype":"IPv4","interface-number":3,"interface-number-subtype":2},` +
		`{"address":"::","address-subtype":"IPv6","interface-number":3,"interface-number-subtype":2},` +
		`{"address":"52:54:00:AB:CD:EF","address-subtype":"MAC","interface-number":0,"interface-number-subtype":1}],"type":8},` +
		`{"ieee-802-3-max-frame-size":1522,"oui":"00:12:0f","subtype":4,"type":127}]`
	if string(b) != want {
		t.Errorf("\n got %s\nwant %s", b, want)
	}
	if got := lldpTLVs(map[string]dbus.Variant{"raw": v([]byte{1})}); len(got) != 0 {
		t.Errorf("a neighbour with nothing nmstate shows: %v", got)
	}
	on := readLLDP(settings{"connection": {"lldp": v(int32(1))}}, map[string]dbus.Variant{"LldpNeighbors": v([]map[string]dbus.Variant{nb, {}})})
	if on == nil || !*on.Enabled || len(on.Neighbors) != 1 {
		t.Errorf("enabled with one neighbour: %+v", on)
	}
	for _, lldp := range []dbus.Variant{v(int32(0)), v(int32(-1)), {}} {
		if got := readLLDP(settings{"connection": {"lldp": lldp}}, nil); got != nil {
			t.Errorf("lldp %v: %+v, want none", lldp, got)
		}
	}
}
