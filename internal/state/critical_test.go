package state

import (
	"maps"
	"net/netip"
	"testing"
)

func TestCriticalInterfaces(t *testing.T) {
	current, err := Parse([]byte(`
interfaces:
- {name: br-ex, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.10, prefix-length: 24}]}}
- {name: bond0.100, type: vlan, state: up, vlan: {base-iface: bond0, id: 100},
   ipv6: {enabled: true, address: [{ip: "2001:db8::10", prefix-length: 64}]}}
- {name: eth3, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 198.51.100.3, prefix-length: 24}]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	// A shown state's running routes (a desired state's are ignored when parsed).
	table := func(n int) *int { return &n }
	current.Routes = &Routes{Running: []Route{
		{Destination: "0.0.0.0/0", NextHopAddress: "192.0.2.1", NextHopInterface: "br-ex", TableID: table(254)},
		{Destination: "0.0.0.0/0", NextHopAddress: "198.51.100.1", NextHopInterface: "eth3", TableID: table(100)},
		{Destination: "192.0.2.0/24", NextHopInterface: "br-ex"},
		{Destination: "203.0.113.0/24", NextHopInterface: "eth3", TableID: table(254)},
		{Destination: "203.0.113.128/25", NextHopInterface: "bond0.100", TableID: table(254)},
		{Destination: "203.0.113.200/32", RouteType: "blackhole", TableID: table(254)},
	}}
	for _, tc := range []struct {
		name      string
		api       netip.Addr
		internals []netip.Addr
		want      map[string]string
	}{
		{"default route only", netip.Addr{}, nil, map[string]string{"br-ex": "br-ex carries the node's default route"}},
		{"the API server's most specific route, not a blackhole", netip.MustParseAddr("203.0.113.200"), nil, map[string]string{
			"br-ex":     "br-ex carries the node's default route",
			"bond0.100": "bond0.100 carries the node's route to the API server 203.0.113.200"}},
		{"the API server through the default route", netip.MustParseAddr("10.0.0.1"), nil, map[string]string{
			"br-ex": "br-ex carries the node's default route"}},
		{"InternalIPs of both families", netip.Addr{}, []netip.Addr{netip.MustParseAddr("2001:db8::10"), netip.MustParseAddr("198.51.100.3")},
			map[string]string{"br-ex": "br-ex carries the node's default route",
				"bond0.100": "bond0.100 holds the node's InternalIP 2001:db8::10", "eth3": "eth3 holds the node's InternalIP 198.51.100.3"}},
	} {
		if got := CriticalInterfaces(current, tc.api, tc.internals); !maps.Equal(got, tc.want) {
			t.Errorf("%s:\n got %v\nwant %v", tc.name, got, tc.want)
		}
	}
	if got := CriticalInterfaces(State{}, netip.MustParseAddr("10.0.0.1"), nil); len(got) != 0 {
		t.Errorf("no routes: %v", got)
	}
}
