package main

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/godbus/dbus/v5"
)

func TestGatewayValue(t *testing.T) {
	addr := netip.MustParseAddr("192.0.2.1")
	got := gatewayValue(addr)

	// What NetworkManager does with it: store the u32 natively as in_addr_t.
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], got)
	if netip.AddrFrom4(b) != addr {
		t.Fatalf("gatewayValue(%s) = %#x, stored natively as %v", addr, got, b)
	}

	var probe [2]byte
	binary.NativeEndian.PutUint16(probe[:], 1)
	if probe[0] == 1 && got != 0x010200c0 { // little-endian host
		t.Fatalf("gatewayValue(%s) = %#x, want 0x010200c0", addr, got)
	}
}

// conn builds a connection dict as NetworkManager sends it, with the given
// vpn data items.
func conn(data map[string]string) map[string]map[string]dbus.Variant {
	c := map[string]map[string]dbus.Variant{
		"connection": {"id": dbus.MakeVariant("ipsec-test")},
		"vpn":        {"service-type": dbus.MakeVariant("org.freedesktop.NetworkManager.libreswan")},
	}
	if data != nil {
		c["vpn"]["data"] = dbus.MakeVariant(data)
	}
	return c
}

func TestRemoteGateway(t *testing.T) {
	for _, tc := range []struct {
		name string
		conn map[string]map[string]dbus.Variant
		want string // "" means an error is expected
	}{
		{"ipv4", conn(map[string]string{"right": "192.0.2.1", "leftid": "@a"}), "192.0.2.1"},
		{"fail hook is still a valid address", conn(map[string]string{"right": "192.0.2.66"}), "192.0.2.66"},
		{"hostname", conn(map[string]string{"right": "vpn.example.org"}), ""},
		{"ipv6", conn(map[string]string{"right": "2001:db8::1"}), ""},
		{"empty", conn(map[string]string{"right": ""}), ""},
		{"no right", conn(map[string]string{"left": "%defaultroute"}), ""},
		{"no data", conn(nil), ""},
		{"no vpn setting", map[string]map[string]dbus.Variant{}, ""},
		{"data of wrong type", map[string]map[string]dbus.Variant{
			"vpn": {"data": dbus.MakeVariant("right=192.0.2.1")},
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := remoteGateway(tc.conn)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("got %v, want an error", got)
				}
				return
			}
			if err != nil || got != netip.MustParseAddr(tc.want) {
				t.Fatalf("got %v, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestBusNameFromArgs(t *testing.T) {
	const def = "org.freedesktop.NetworkManager.libreswan"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, def},
		{[]string{"--bus-name", def + ".Connection_3"}, def + ".Connection_3"},
		{[]string{"--debug", "--bus-name=x.y"}, "x.y"},
		{[]string{"-bus-name", "x.y", "extra"}, "x.y"},
		{[]string{"--bus-name"}, def},
		{[]string{"bus-name", "x.y"}, def},
	} {
		if got := busNameFromArgs(tc.args, def); got != tc.want {
			t.Errorf("busNameFromArgs(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}
