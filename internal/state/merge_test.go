package state

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func mustParse(t *testing.T, doc string) State {
	t.Helper()
	s, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func names(its []Interface) string {
	n := make([]string, len(its))
	for i, it := range its {
		n[i] = it.Name
	}
	return strings.Join(n, " ")
}

func TestMergeUnionAndOwners(t *testing.T) {
	a := Source{"a-mtu", mustParse(t, `interfaces: [{name: eth1, type: ethernet, mtu: 9000}]`)}
	b := Source{"b-ip", mustParse(t, `
interfaces: [{name: eth1, type: ethernet, ipv4: {enabled: true, address: [{ip: 192.0.2.1, prefix-length: 24}]}}]
routes: {config: [{destination: 198.51.100.0/24, next-hop-address: 192.0.2.254, next-hop-interface: eth1}]}
dns-resolver: {config: {server: [192.0.2.53]}}`)}
	c := Source{"c-same-dns", mustParse(t, `dns-resolver: {config: {server: [192.0.2.53]}}`)}
	m1, err := Merge([]Source{a, b, c})
	if err != nil {
		t.Fatal(err)
	}
	m2, err := Merge([]Source{c, b, a})
	if err != nil {
		t.Fatal(err)
	}
	j1, _ := json.Marshal(m1)
	j2, _ := json.Marshal(m2)
	if string(j1) != string(j2) {
		t.Errorf("merge depends on source order:\n%s\n%s", j1, j2)
	}
	eth1 := m1.State.Interfaces[0]
	if *eth1.MTU != 9000 || eth1.IPv4.Address[0].IP != "192.0.2.1" {
		t.Errorf("union lost a field: %+v", eth1)
	}
	if got := strings.Join(m1.Owners["eth1"], ","); got != "a-mtu,b-ip" {
		t.Errorf("owners of eth1 = %s", got)
	}
	if got := strings.Join(m1.Owners["dns-resolver"], ","); got != "b-ip,c-same-dns" {
		t.Errorf("owners of dns = %s", got)
	}
}

func TestMergeConflicts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		a, b     string
		path     string
		policies string
	}{
		{"same field, other value",
			`interfaces: [{name: eth1, type: ethernet, mtu: 9000}]`,
			`interfaces: [{name: eth1, type: ethernet, mtu: 1500}]`,
			"interfaces[name=eth1].mtu", "p1,p2"},
		{"up and absent",
			`interfaces: [{name: bond0, type: bond, link-aggregation: {mode: active-backup, port: [eth1]}}]`,
			`interfaces: [{name: bond0, state: absent}]`,
			"interfaces[name=bond0].state", "p1,p2"},
		{"dns",
			`dns-resolver: {config: {server: [192.0.2.53]}}`,
			`dns-resolver: {config: {server: [192.0.2.54]}}`,
			"dns-resolver.config", "p1,p2"},
		{"route added and removed",
			`routes: {config: [{destination: 10.0.0.0/8, next-hop-interface: eth1}]}`,
			`routes: {config: [{destination: 10.0.0.0/8, next-hop-interface: eth1, state: absent}]}`,
			"routes.config[destination=10.0.0.0/8,next-hop-interface=eth1]", "p1,p2"},
		{"route removed by destination alone",
			`routes: {config: [{destination: 10.0.0.0/8, next-hop-interface: eth1}]}`,
			`routes: {config: [{destination: 10.0.0.0/8, state: absent}]}`,
			"routes.config[destination=10.0.0.0/8,next-hop-interface=eth1]", "p1,p2"},
		{"one port, two controllers",
			`interfaces: [{name: bond0, type: bond, link-aggregation: {mode: active-backup, port: [eth1]}}]`,
			`interfaces: [{name: br0, type: linux-bridge, bridge: {port: [{name: eth1}]}}]`,
			"interfaces[name=br0].bridge.port", "p1,p2"},
		{"a port naming a controller another lists it in",
			`interfaces: [{name: bond0, type: bond, link-aggregation: {mode: active-backup, port: [eth1]}}]`,
			`interfaces: [{name: eth1, controller: br0}]`,
			"interfaces[name=eth1].controller", "p1,p2"},
		{"vlan on a base another policy removes",
			`interfaces: [{name: bond0, state: absent}]`,
			`interfaces: [{name: bond0.5, type: vlan, vlan: {id: 5, base-iface: bond0}}]`,
			"interfaces[name=bond0.5].vlan.base-iface", "p1,p2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Merge([]Source{{"p1", mustParse(t, tc.a)}, {"p2", mustParse(t, tc.b)}})
			var cs Conflicts
			if !errors.As(err, &cs) || len(cs) == 0 {
				t.Fatalf("want conflicts, got %v", err)
			}
			if cs[0].Path != tc.path || strings.Join(cs[0].Policies, ",") != tc.policies {
				t.Errorf("got %v, want path %s and policies %s", err, tc.path, tc.policies)
			}
			if !strings.Contains(err.Error(), `"p1"`) || !strings.Contains(err.Error(), `"p2"`) {
				t.Errorf("the message must name both policies: %v", err)
			}
			undoes := strings.Contains(tc.b, "absent") && !strings.Contains(tc.name, "vlan on")
			if got := strings.Contains(err.Error(), "delete the policy that made the change"); got != undoes {
				t.Errorf("names the way out (deleting the policy) = %v, want %v: %v", got, undoes, err)
			}
		})
	}
}

// A port naming its controller joins the ports another policy gives it, as it would
// joining them on the node after that policy; the other policy's state is unchanged.
func TestMergePortNamingController(t *testing.T) {
	bridge := mustParse(t, `interfaces: [{name: br0, type: linux-bridge, bridge: {port: [{name: eth1}]}}]`)
	m, err := Merge([]Source{{"p1", bridge}, {"p2", mustParse(t, `interfaces: [{name: eth2, type: ethernet, controller: br0}]`)}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range m.State.Interfaces {
		if it.Name == "br0" {
			got = it.portNames()
		}
	}
	if !slices.Equal(got, []string{"eth1", "eth2"}) {
		t.Errorf("br0's ports: %v, want [eth1 eth2]", got)
	}
	if ports := bridge.Interfaces[0].portNames(); !slices.Equal(ports, []string{"eth1"}) {
		t.Errorf("the bridge policy's own state changed: %v", ports)
	}
}

func TestMergeReplacingRoutesInOnePolicy(t *testing.T) {
	m, err := Merge([]Source{{"p1", mustParse(t, `routes: {config: [
  {destination: 10.0.0.0/8, state: absent},
  {destination: 10.0.0.0/8, next-hop-interface: eth2, next-hop-address: 192.0.2.1}]}`)}})
	if err != nil {
		t.Fatalf("one policy removing and adding routes to one destination is nmstate's replace: %v", err)
	}
	if len(m.State.Routes.Config) != 2 {
		t.Errorf("routes %v, want both", m.State.Routes.Config)
	}
}

func TestMergeDNSInterfaces(t *testing.T) {
	m, err := Merge([]Source{
		{"storage", mustParse(t, `interfaces: [{name: eth1.20, type: vlan, vlan: {id: 20, base-iface: eth1}, ipv4: {enabled: true, address: [{ip: 192.0.2.5, prefix-length: 24}]}}]`)},
		{"bridge", mustParse(t, `
interfaces: [{name: br1, type: linux-bridge, bridge: {port: [{name: eth2}]}, ipv4: {enabled: true, address: [{ip: 198.51.100.5, prefix-length: 24}]}}]
routes: {config: [{destination: 0.0.0.0/0, next-hop-interface: br1, next-hop-address: 198.51.100.1}]}
dns-resolver: {config: {server: [198.51.100.53]}}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.State.DNSResolver.Interfaces; !slices.Equal(got, []string{"br1"}) {
		t.Errorf("DNS may go on %v, want only the DNS policy's [br1]", got)
	}
}

func TestOrder(t *testing.T) {
	// Named against their dependencies: a VLAN policy "a-vlan" on a bond from "z-bond",
	// a bridge "a-br" over that VLAN, a VRF enslaving the bridge.
	vlan := Source{"a-vlan", mustParse(t, `interfaces: [{name: bond0.10, type: vlan, vlan: {id: 10, base-iface: bond0}}]`)}
	bridge := Source{"a-br", mustParse(t, `interfaces: [{name: br10, type: linux-bridge, bridge: {port: [{name: bond0.10}]}}]`)}
	vrf := Source{"b-vrf", mustParse(t, `interfaces: [{name: avrf, type: vrf, vrf: {port: [br10], route-table-id: 10}}]`)}
	bond := Source{"z-bond", mustParse(t, `interfaces: [{name: bond0, type: bond, link-aggregation: {mode: 802.3ad, port: [eth1, eth2]}}, {name: eth1, type: ethernet}, {name: eth2, type: ethernet}]`)}
	m, err := Merge([]Source{vlan, bridge, vrf, bond})
	if err != nil {
		t.Fatal(err)
	}
	ordered, err := Order(m.State)
	if err != nil {
		t.Fatal(err)
	}
	got := names(ordered)
	pos := map[string]int{}
	for i, it := range ordered {
		pos[it.Name] = i
	}
	for _, before := range [][2]string{{"bond0", "eth1"}, {"bond0", "eth2"}, {"bond0", "bond0.10"}, {"br10", "bond0.10"}, {"avrf", "br10"}} {
		if pos[before[0]] > pos[before[1]] {
			t.Errorf("%s must come before %s: %s", before[0], before[1], got)
		}
	}
	if want := "avrf bond0 br10 bond0.10 eth1 eth2"; got != want {
		t.Errorf("order %q, want %q", got, want)
	}

	removal := mustParse(t, `interfaces: [{name: bond0, state: absent}, {name: bond0.10, state: absent}, {name: eth9, type: ethernet}]`)
	removal.Interfaces[1].Section = &VLANConfig{ID: 10, BaseIface: "bond0"} // as known from the current state
	ordered, err = Order(removal)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(ordered); got != "bond0.10 bond0 eth9" {
		t.Errorf("removals: %q, want the VLAN removed before its bond, then the rest", got)
	}
}

func TestOrderCycle(t *testing.T) {
	s := State{Interfaces: []Interface{
		{Name: "v1", Type: VLAN, Section: &VLANConfig{ID: 1, BaseIface: "v2"}},
		{Name: "v2", Type: VLAN, Section: &VLANConfig{ID: 2, BaseIface: "v1"}},
	}}
	if _, err := Order(s); err == nil || !strings.Contains(err.Error(), "v1, v2") {
		t.Errorf("cycle not reported: %v", err)
	}
}

func TestDefaultGateway(t *testing.T) {
	m := func(v int) *int { return &v }
	s := State{Routes: &Routes{Running: []Route{
		{Destination: "0.0.0.0/0", NextHopAddress: "192.0.2.254", Metric: m(100), TableID: m(254)},
		{Destination: "0.0.0.0/0", NextHopAddress: "192.0.2.99", Metric: m(10), TableID: m(254)},
		{Destination: "0.0.0.0/0", NextHopAddress: "192.0.2.1", Metric: m(1), TableID: m(100)}, // another table
		{Destination: "::/0", NextHopAddress: "2001:db8::1", Metric: m(1)},
		{Destination: "198.51.100.0/24", NextHopAddress: "192.0.2.7", Metric: m(0)},
	}}}
	if got := DefaultGateway(s).String(); got != "192.0.2.99" {
		t.Errorf("DefaultGateway = %s, want the lowest-metric IPv4 default in the main table", got)
	}
	s.Routes.Running = s.Routes.Running[3:]
	if got := DefaultGateway(s).String(); got != "2001:db8::1" {
		t.Errorf("IPv6 fallback = %s", got)
	}
	if DefaultGateway(State{}).IsValid() {
		t.Error("no routes, no gateway")
	}
}

// A VLAN on a bridge that is also that bridge's port orders (port after controller), but
// the kernel refuses it: Order reports it, naming both.
func TestOrderPortBuiltOnItsController(t *testing.T) {
	s := State{Interfaces: []Interface{
		{Name: "br0", Type: LinuxBridge, State: Up, Section: &BridgeConfig{Port: []BridgePort{{Name: "br0.10"}, {Name: "eth1"}}}},
		{Name: "br0.10", Type: VLAN, State: Up, Section: &VLANConfig{ID: 10, BaseIface: "br0"}},
		{Name: "mv0", Type: MACVLAN, State: Up, Section: &MACVLANConfig{BaseIface: "br0.10", Mode: "bridge"}},
	}}
	_, err := Order(s)
	if err == nil || !strings.Contains(err.Error(), "br0.10 is built on br0 and is also its port") {
		t.Errorf("a VLAN that is a port of its own base bridge: %v", err)
	}
	// Through a chain: a MAC-VLAN on a VLAN of the bridge, as the bridge's port.
	SectionOf[*BridgeConfig](s.Interfaces[0]).Port = []BridgePort{{Name: "mv0"}}
	if _, err := Order(s); err == nil || !strings.Contains(err.Error(), "mv0 is built on br0") {
		t.Errorf("a port built on its controller through a chain: %v", err)
	}
	// A VLAN on the bridge that is not its port is fine.
	SectionOf[*BridgeConfig](s.Interfaces[0]).Port = []BridgePort{{Name: "eth1"}}
	if _, err := Order(s); err != nil {
		t.Errorf("a VLAN on a bridge: %v", err)
	}
}

func TestMergeOVS(t *testing.T) {
	// br-ex and its internal interface are two interfaces of one name; a second policy
	// describes the bridge only.
	a := Source{"br-ex", mustParse(t, brExDoc)}
	b := Source{"snooping", mustParse(t, `interfaces: [{name: br-ex, type: ovs-bridge, description: uplink bridge}]`)}
	m, err := Merge([]Source{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(m.State.Interfaces); got != "enp2s0 br-ex br-ex" {
		t.Errorf("interfaces: %s", got)
	}
	br := m.State.Interfaces[1]
	if br.Type != OVSBridge || *br.Description != "uplink bridge" || !*SectionOf[*BridgeConfig](br).Options.MCastSnoopingEnable {
		t.Errorf("bridge not merged: %+v", br)
	}
	if iface := m.State.Interfaces[2]; iface.Type != OVSInterface || iface.Description != nil {
		t.Errorf("the bridge's description went to its interface: %+v", iface)
	}
	if got := strings.Join(m.Owners["br-ex,type=ovs-bridge"], ","); got != "br-ex,snooping" {
		t.Errorf("owners of the bridge: %s", got)
	}
	if got := strings.Join(m.Owners["br-ex"], ","); got != "br-ex" {
		t.Errorf("owners of the interface: %s", got)
	}

	// Mappings: a union by localnet; one localnet mapped twice differently, or mapped by
	// one policy and removed by another, is a conflict naming both.
	for _, tc := range []struct{ x, y, reason string }{
		{`ovn: {bridge-mappings: [{localnet: net1, bridge: br1}]}`, `ovn: {bridge-mappings: [{localnet: net1, bridge: br2}]}`, `maps it to "br1", policy "y" to "br2"`},
		{`ovn: {bridge-mappings: [{localnet: net1, bridge: br1}]}`, `ovn: {bridge-mappings: [{localnet: net1, state: absent}]}`, "cannot undo another"},
	} {
		_, err := Merge([]Source{{"x", mustParse(t, tc.x)}, {"y", mustParse(t, tc.y)}})
		var c Conflicts
		if !errors.As(err, &c) || c[0].Path != "ovn.bridge-mappings[localnet=net1]" || !strings.Contains(c[0].Reason, tc.reason) || !slices.Equal(c[0].Policies, []string{"x", "y"}) {
			t.Errorf("%s + %s: %v", tc.x, tc.y, err)
		}
	}
	m, err = Merge([]Source{
		{"x", mustParse(t, `ovn: {bridge-mappings: [{localnet: net1, bridge: br1, state: present}, {localnet: old, state: absent}]}`)},
		{"y", mustParse(t, `ovn: {bridge-mappings: [{localnet: net1, bridge: br1}, {localnet: net2, bridge: br2}, {localnet: old, bridge: br9, state: absent}]}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []BridgeMapping{{"net1", "br1", ""}, {"old", "", "absent"}, {"net2", "br2", ""}}
	if !slices.Equal(m.State.OVN.BridgeMappings, want) || strings.Join(m.Owners["ovn"], ",") != "x,y" {
		t.Errorf("mappings %+v owners %v", m.State.OVN.BridgeMappings, m.Owners["ovn"])
	}
}

func TestMergeRouteRules(t *testing.T) {
	a := Source{"a", mustParse(t, `route-rules: {config: [{ip-to: 172.30.0.0/16, priority: 1000}]}`)}
	b := Source{"b", mustParse(t, `route-rules: {config: [{ip-to: 172.30.0.0/16, priority: 1000, route-table: 254}, {ip-from: 192.0.2.0/24, route-table: 200}]}`)}
	m, err := Merge([]Source{b, a})
	if err != nil {
		t.Fatal(err)
	}
	// The same rule stated with and without its default table is one rule.
	if len(m.State.RouteRules.Config) != 2 || strings.Join(m.Owners["route-rules"], ",") != "a,b" {
		t.Errorf("rules %+v owners %v", m.State.RouteRules.Config, m.Owners["route-rules"])
	}
	c := Source{"c", mustParse(t, `route-rules: {config: [{route-table: 200, state: absent}]}`)}
	_, err = Merge([]Source{a, b, c})
	var conflicts Conflicts
	if !errors.As(err, &conflicts) || conflicts[0].Path != "route-rules.config[ipv4 priority 30000 from 192.0.2.0/24 table 200]" ||
		!slices.Equal(conflicts[0].Policies, []string{"b", "c"}) || !strings.Contains(conflicts[0].Reason, "cannot undo another") {
		t.Errorf("a rule one policy adds and another removes: %v", err)
	}
}
