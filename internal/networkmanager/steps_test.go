package networkmanager

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/internal/state"

	"github.com/nmoverlay/nmoverlay/api/field"
)

// testHost is a host as readHost would see it: each interface active on the given
// profile; current is the state read back (default routes).
func testHost(profiles map[string]settings, current state.State) *host {
	h := &host{byPath: map[dbus.ObjectPath]profile{}, owned: map[string]profile{}, devs: map[string]device{},
		current: func() (state.State, error) { return current, nil }}
	names := make([]string, 0, len(profiles))
	for name := range profiles {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		s := profiles[name]
		s.set("connection", "interface-name", name)
		p := profile{path: dbus.ObjectPath("/p/" + string(rune('a'+i))), settings: s}
		h.profiles = append(h.profiles, p)
		h.byPath[p.path] = p
		if s.owned() {
			h.owned[name] = p
		}
		h.devs[name] = device{name: name, typ: state.Ethernet, state: deviceStateActivated, profile: p.path}
	}
	return h
}

func ipProfile(v4method string, v4addr bool, v6method string, extra func(settings)) settings {
	s := settings{}
	s.set("connection", "type", "802-3-ethernet")
	s.set("ipv4", "method", v4method)
	if v4addr {
		s.set("ipv4", "address-data", []map[string]dbus.Variant{{"address": dbus.MakeVariant("192.0.2.1"), "prefix": dbus.MakeVariant(uint32(24))}})
	}
	s.set("ipv6", "method", v6method)
	if extra != nil {
		extra(s)
	}
	return s
}

func withRoute(dest string, prefix uint32, nh string) func(settings) {
	return func(s settings) {
		s.set("ipv4", "route-data", []map[string]dbus.Variant{{"dest": dbus.MakeVariant(dest), "prefix": dbus.MakeVariant(prefix), "next-hop": dbus.MakeVariant(nh)}})
	}
}

func mustParse(t *testing.T, doc string) (state.State, []state.Interface) {
	t.Helper()
	s, err := state.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	m, err := state.Merge([]state.Source{{Policy: "p", State: s}})
	if err != nil {
		t.Fatal(err)
	}
	ordered, err := state.Order(m.State)
	if err != nil {
		t.Fatal(err)
	}
	return m.State, ordered
}

func TestPlanRouteRemovalCarriers(t *testing.T) {
	profiles := func() map[string]settings {
		return map[string]settings{
			"eth1": ipProfile("manual", true, "disabled", withRoute("203.0.113.0", 24, "192.0.2.254")),
			"eth2": ipProfile("manual", true, "disabled", withRoute("198.51.100.0", 24, "192.0.2.254")),
			"eth3": ipProfile("manual", true, "disabled", nil),
		}
	}
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"by destination: the profile that holds it", `routes: {config: [{destination: 203.0.113.0/24, state: absent}]}`, []string{"eth1"}},
		{"by next hop: every profile with a route through it", `routes: {config: [{next-hop-address: 192.0.2.254, state: absent}]}`, []string{"eth1", "eth2"}},
		{"by destination and interface: that one only", `routes: {config: [{destination: 203.0.113.0/24, next-hop-interface: eth2, state: absent}]}`, nil},
		{"nothing holds it: nothing touched", `routes: {config: [{destination: 100.64.0.0/10, state: absent}]}`, nil},
	} {
		desired, ordered := mustParse(t, tc.doc)
		pl, err := testHost(profiles(), state.State{}).steps(desired, ordered, true)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, it := range pl.interfaces {
			got = append(got, it.Name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: touches %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPlanDNSCarrier(t *testing.T) {
	defaultVia := func(dev string) state.State {
		table := 254
		return state.State{Routes: &state.Routes{Running: []state.Route{{Destination: "0.0.0.0/0", NextHopInterface: dev, NextHopAddress: "192.0.2.254", TableID: &table}}}}
	}
	withDNS := func(s settings) { s.set("ipv4", "dns", []uint32{0x35_02_00_c0}) }
	owned := func(s settings) { s.set("user", "data", map[string]string{OwnerKey: OwnerValue}) }
	for _, tc := range []struct {
		name     string
		profiles map[string]settings
		current  state.State
		policies []string // the first sets DNS
		want     map[string]string
		err      string
	}{
		{"DNS-only: the current interface with the default route",
			map[string]settings{"eth0": ipProfile("manual", true, "disabled", nil), "eth9": ipProfile("manual", true, "disabled", nil)},
			defaultVia("eth9"), []string{`dns-resolver: {config: {server: [192.0.2.53]}}`}, map[string]string{"eth9": "ipv4"}, ""},
		{"the DNS policy's static interface, not another policy's",
			map[string]settings{"eth0": ipProfile("manual", true, "disabled", nil)},
			defaultVia("eth0"), []string{
				`{dns-resolver: {config: {server: [192.0.2.53]}}, interfaces: [{name: br1, type: linux-bridge, bridge: {port: []}, ipv4: {enabled: true, address: [{ip: 198.51.100.1, prefix-length: 24}]}}]}`,
				`interfaces: [{name: eth1, type: ethernet, ipv4: {enabled: true, address: [{ip: 203.0.113.1, prefix-length: 24}]}}]`},
			map[string]string{"br1": "ipv4"}, ""},
		{"DHCP with auto-dns off before DHCP alone",
			map[string]settings{},
			state.State{}, []string{`{dns-resolver: {config: {server: [192.0.2.53]}}, interfaces: [
  {name: eth1, type: ethernet, ipv4: {enabled: true, dhcp: true}},
  {name: eth2, type: ethernet, ipv4: {enabled: true, dhcp: true, auto-dns: false}}]}`},
			map[string]string{"eth2": "ipv4"}, ""},
		{"one carrier per family; static DNS elsewhere cleared",
			map[string]settings{"eth0": ipProfile("manual", true, "disabled", withDNS)},
			state.State{}, []string{`{dns-resolver: {config: {server: ["2001:db8::53", 192.0.2.53], search: [example.com]}}, interfaces: [
  {name: eth1, type: ethernet, ipv4: {enabled: true, address: [{ip: 192.0.2.1, prefix-length: 24}]}},
  {name: eth2, type: ethernet, ipv6: {enabled: true, address: [{ip: "2001:db8::1", prefix-length: 64}]}}]}`},
			map[string]string{"eth1": "ipv4", "eth2": "ipv6 search", "eth0": "cleared"}, ""},
		{"an owned carrier keeps it",
			map[string]settings{"eth2": ipProfile("manual", true, "disabled", func(s settings) { withDNS(s); owned(s) })},
			state.State{}, []string{`{dns-resolver: {config: {server: [192.0.2.53]}}, interfaces: [
  {name: eth1, type: ethernet, ipv4: {enabled: true, address: [{ip: 192.0.2.1, prefix-length: 24}]}},
  {name: eth2, type: ethernet, ipv4: {enabled: true, address: [{ip: 192.0.2.2, prefix-length: 24}]}}]}`},
			map[string]string{"eth2": "ipv4"}, ""},
		{"nowhere to put IPv6 servers: refused",
			map[string]settings{"eth0": ipProfile("manual", true, "disabled", nil)},
			defaultVia("eth0"), []string{`dns-resolver: {config: {server: ["2001:db8::53"]}}`}, nil, "IPv6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sources []state.Source
			for i, doc := range tc.policies {
				s, err := state.Parse([]byte(doc))
				if err != nil {
					t.Fatal(err)
				}
				sources = append(sources, state.Source{Policy: string(rune('a' + i)), State: s})
			}
			m, err := state.Merge(sources)
			if err != nil {
				t.Fatal(err)
			}
			ordered, err := state.Order(m.State)
			if err != nil {
				t.Fatal(err)
			}
			pl, err := testHost(tc.profiles, tc.current).steps(m.State, ordered, true)
			if tc.err != "" {
				var fe *field.Error
				if !errors.As(err, &fe) || fe.Path != "dns-resolver.config" || !strings.Contains(fe.Reason, tc.err) {
					t.Fatalf("want a dns-resolver.config error about %s, got %v", tc.err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for name, p := range pl.perIface {
				if p.dns == nil {
					continue
				}
				var what []string
				for fam, f := range []string{"ipv4", "ipv6"} {
					if len(p.dns.servers[fam]) > 0 {
						what = append(what, f)
					}
				}
				if len(p.dns.search[0])+len(p.dns.search[1]) > 0 {
					what = append(what, "search")
				}
				if len(what) == 0 {
					what = []string{"cleared"}
				}
				got[name] = strings.Join(what, " ")
			}
			if len(got) != len(tc.want) {
				t.Fatalf("DNS on %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("DNS on %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// The OpenShift documentation's br-ex policy on a host with its uplink: a bridge profile,
// an OVS port profile per port right after it, the uplink and the internal interface as
// ports of their OVS ports (by UUID: br-ex names three profiles), started bridge first.
func TestPlanOVSBridge(t *testing.T) {
	desired, err := state.Parse([]byte(`
interfaces:
- {name: enp2s0, type: ethernet, ipv4: {enabled: false}, ipv6: {enabled: false}}
- name: br-ex
  type: ovs-bridge
  bridge:
    options: {mcast-snooping-enable: true, datapath: netdev}
    port: [{name: enp2s0}, {name: br-ex, vlan: {mode: trunk, enable-native: true, tag: 5, trunk-tags: [{id: 10}, {id-range: {min: 20, max: 29}}]}}]
- {name: br-ex, type: ovs-interface, ipv4: {enabled: true, dhcp: true, auto-route-metric: 48}}
`))
	if err != nil {
		t.Fatal(err)
	}
	h := testHost(map[string]settings{"enp2s0": ipProfile("auto", false, "auto", nil)}, state.State{})
	pl := mustSteps(t, h, desired)
	var keys []string
	built := map[string]settings{}
	for _, it := range pl.interfaces {
		keys = append(keys, it.Key())
		if built[it.Key()], err = h.build(it, pl, true); err != nil {
			t.Fatal(err)
		}
	}
	if want := "br-ex,type=ovs-bridge enp2s0,type=ovs-port br-ex,type=ovs-port br-ex enp2s0"; strings.Join(keys, " ") != want {
		t.Fatalf("profiles in order %v, want %s", keys, want)
	}
	uuid := func(key string) string { return built[key].str("connection", "uuid") }
	for _, tc := range []struct{ key, typ, master, slaveType string }{
		{"br-ex,type=ovs-bridge", "ovs-bridge", "", ""},
		{"br-ex,type=ovs-port", "ovs-port", uuid("br-ex,type=ovs-bridge"), "ovs-bridge"},
		{"enp2s0,type=ovs-port", "ovs-port", uuid("br-ex,type=ovs-bridge"), "ovs-bridge"},
		{"br-ex", "ovs-interface", uuid("br-ex,type=ovs-port"), "ovs-port"},
		{"enp2s0", "802-3-ethernet", uuid("enp2s0,type=ovs-port"), "ovs-port"},
	} {
		s := built[tc.key]
		if s.str("connection", "type") != tc.typ || s.str("connection", "master") != tc.master || s.str("connection", "slave-type") != tc.slaveType {
			t.Errorf("%s: type %q master %q slave-type %q, want %q %q %q", tc.key, s.str("connection", "type"),
				s.str("connection", "master"), s.str("connection", "slave-type"), tc.typ, tc.master, tc.slaveType)
		}
		_, hasIP := s["ipv4"]
		if wantIP := tc.typ == "ovs-interface"; hasIP != wantIP {
			t.Errorf("%s: has an ipv4 section: %t, want %t", tc.key, hasIP, wantIP)
		}
	}
	if s := built["br-ex,type=ovs-bridge"]; s["ovs-bridge"]["mcast-snooping-enable"].Value() != true || s.str("ovs-bridge", "datapath-type") != "netdev" {
		t.Errorf("bridge options: %v", s["ovs-bridge"])
	}
	port := built["br-ex,type=ovs-port"]
	if port.str("ovs-port", "vlan-mode") != "native-untagged" || port["ovs-port"]["tag"].Value() != uint32(5) || len(dictList(port["ovs-port"]["trunks"])) != 2 {
		t.Errorf("port VLAN: %v", port["ovs-port"])
	}
	if s := built["br-ex"]; s.str("ovs-interface", "type") != "internal" || s.str("ipv4", "method") != "auto" || s["ipv4"]["route-metric"].Value() != int64(48) {
		t.Errorf("internal interface: %v %v", s["ovs-interface"], s["ipv4"])
	}

	acts := make([]activation, len(pl.interfaces))
	for i, it := range pl.interfaces {
		acts[i] = activation{name: it.Name, key: it.Key()}
	}
	var got [][]string
	for _, st := range stages(acts, pl) {
		var k []string
		for _, a := range st {
			k = append(k, a.key)
		}
		got = append(got, k)
	}
	want := [][]string{{"br-ex,type=ovs-bridge"}, {"enp2s0,type=ovs-port", "br-ex,type=ovs-port"}, {"br-ex", "enp2s0"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("stages %v, want %v", got, want)
	}

	// The bridge's options changed alone: activating it again takes its ports off, so its
	// ports and their interfaces are activated again after it.
	var bridgeOnly, rest []activation
	for _, a := range acts {
		if a.key == "br-ex,type=ovs-bridge" {
			bridgeOnly = append(bridgeOnly, a)
		} else {
			rest = append(rest, a)
		}
	}
	var again []string
	for _, a := range underOVSControllers(bridgeOnly, rest, pl) {
		again = append(again, a.key)
	}
	if want := "enp2s0,type=ovs-port br-ex,type=ovs-port br-ex enp2s0"; strings.Join(again, " ") != want {
		t.Errorf("activated again under the bridge: %v, want %s", again, want)
	}
	if got := underOVSControllers(rest[2:], rest[:2], pl); len(got) != 0 {
		t.Errorf("an interface activated again takes its OVS port with it: %v", got)
	}

	// Once saved, removing the bridge deletes its ports' profiles and its interfaces'
	// with it; the uplink, still named, is rebuilt on its own profile instead.
	saved := map[string]settings{}
	for key, s := range built {
		saved[key] = s
	}
	h2 := testHost(nil, state.State{})
	for i, key := range keys {
		p := profile{path: dbus.ObjectPath("/q/" + string(rune('a'+i))), settings: saved[key]}
		h2.profiles, h2.owned[key] = append(h2.profiles, p), p
	}
	removal := state.State{Interfaces: []state.Interface{{Name: "br-ex", Type: state.OVSBridge, State: state.Absent}, {Name: "enp2s0", State: state.Up}}}
	if got := h2.deletes(removal.Interfaces, false); strings.Join(got, " ") != "br-ex br-ex,type=ovs-bridge br-ex,type=ovs-port enp2s0,type=ovs-port" {
		t.Errorf("deletes %v", got)
	}
}

// mustSteps orders desired and makes its steps on h, with prune.
func mustSteps(t *testing.T, h *host, desired state.State) *applySteps {
	t.Helper()
	ordered, err := state.Order(desired)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := h.steps(desired, ordered, true)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// An OVS bond is one ovs-port profile with its mode, LACP and delays; its members are
// ports of that OVS port and start after it; the bridge's input digest leaves its ports
// out, so a bond's change does not start the bridge again.
func TestPlanOVSBond(t *testing.T) {
	doc := `
interfaces:
- name: br1
  type: ovs-bridge
  bridge:
    port:
    - {name: bond1, link-aggregation: {mode: %s, bond-updelay: 100, port: [{name: eth4}, {name: eth5}]}}
    - {name: br1}
`
	build := func(mode string) map[string]settings {
		desired, err := state.Parse([]byte(fmt.Sprintf(doc, mode)))
		if err != nil {
			t.Fatal(err)
		}
		h := testHost(nil, state.State{})
		pl := mustSteps(t, h, desired)
		built := map[string]settings{}
		var keys []string
		for _, it := range pl.interfaces {
			keys = append(keys, it.Key())
			if it.Type == "" {
				it.Type = state.Ethernet // no device in the test host to take it from
			}
			if built[it.Key()], err = h.build(it, pl, true); err != nil {
				t.Fatal(err)
			}
		}
		if want := "br1,type=ovs-bridge bond1,type=ovs-port br1,type=ovs-port br1 eth4 eth5"; strings.Join(keys, " ") != want {
			t.Fatalf("profiles in order %v, want %s", keys, want)
		}
		acts := make([]activation, len(pl.interfaces))
		for i, it := range pl.interfaces {
			acts[i] = activation{name: it.Name, key: it.Key()}
		}
		if got := stages(acts, pl); len(got) != 3 || !slices.ContainsFunc(got[2], func(a activation) bool { return a.key == "eth4" }) {
			t.Errorf("stages: the members start after their bond: %v", got)
		}
		return built
	}
	for _, tc := range []struct{ mode, bondMode, lacp string }{
		{"active-backup", "active-backup", "off"},
		{"balance-slb", "balance-slb", "off"},
		{"balance-tcp", "balance-tcp", "active"},
		{"lacp", "", "active"},
	} {
		built := build(tc.mode)
		port := built["bond1,type=ovs-port"]
		if port.str("ovs-port", "bond-mode") != tc.bondMode || port.str("ovs-port", "lacp") != tc.lacp || port["ovs-port"]["bond-updelay"].Value() != uint32(100) {
			t.Errorf("%s: ovs-port %v", tc.mode, port["ovs-port"])
		}
		for _, m := range []string{"eth4", "eth5"} {
			if s := built[m]; s.str("connection", "master") != port.str("connection", "uuid") || s.str("connection", "slave-type") != "ovs-port" {
				t.Errorf("%s: %s is not a port of the bond: %v", tc.mode, m, s["connection"])
			}
		}
		if _, ok := built["bond1"]; ok {
			t.Errorf("%s: the bond has an interface profile", tc.mode)
		}
		// Read back as the applied profile and its two interfaces.
		got := ovsPortBond(port, []string{"eth4", "eth5"})
		if got == nil || got.Mode != tc.mode || *got.UpDelay != 100 || !slices.Equal(state.BridgePort{Name: "bond1", LinkAggregation: got}.Interfaces(), []string{"eth4", "eth5"}) {
			t.Errorf("%s: read back as %+v", tc.mode, got)
		}
	}
	if ovsPortBond(settings{"ovs-port": {}}, []string{"eth2"}) != nil {
		t.Error("a port of one interface without bond settings read as a bond")
	}
	a, b := build("balance-slb"), build("active-backup")
	if a["br1,type=ovs-bridge"].userData(InputKey) != b["br1,type=ovs-bridge"].userData(InputKey) {
		t.Error("the bond's mode changed the bridge's input digest")
	}
	if a["bond1,type=ovs-port"].userData(InputKey) == b["bond1,type=ovs-port"].userData(InputKey) {
		t.Error("the bond's mode left its port's input digest unchanged")
	}
}

// Route rules go on the interface that routes their table (OpenShift's documented rules to
// main next to a route in main via eth1), on their iif, or are refused before anything
// changes; an absent rule leaves the persistent profile holding it shadowed without it.
func TestPlanRouteRules(t *testing.T) {
	withRule := func(s settings) {
		s.set("ipv4", "routing-rules", []map[string]dbus.Variant{ruleToNM(state.RouteRule{IPFrom: "203.0.113.0/24", RouteTable: ptr(300)})})
	}
	h := testHost(map[string]settings{"eth1": ipProfile("auto", false, "auto", nil), "eth2": ipProfile("manual", true, "disabled", withRule)}, state.State{})
	desired, err := state.Parse([]byte(`
interfaces:
- {name: eth1, type: ethernet, ipv4: {enabled: true, address: [{ip: 192.168.150.3, prefix-length: 24}]}}
route-rules:
  config:
  - {ip-to: 172.30.0.0/16, priority: 1000, route-table: 254}
  - {family: ipv4, iif: eth3, action: prohibit}
  - {route-table: 300, state: absent}
routes:
  config:
  - {destination: 198.51.100.0/24, next-hop-address: 192.168.150.1, next-hop-interface: eth1, table-id: 254}
`))
	if err != nil {
		t.Fatal(err)
	}
	ordered, _ := state.Order(desired)
	pl, err := h.steps(desired, ordered, true)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for name, p := range pl.perIface {
		for _, r := range p.rules {
			got[name] = append(got[name], r.Normalized().String())
		}
	}
	want := map[string][]string{
		"eth1": {"ipv4 priority 1000 to 172.30.0.0/16 table 254"},
		"eth3": {"ipv4 priority 30000 iif eth3 prohibit"},
		"eth2": {"table 300 (absent)"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("carriers %v, want %v", got, want)
	}
	eth2, err := h.build(state.Interface{Name: "eth2", State: state.Up}, pl, true)
	if err != nil {
		t.Fatal(err)
	}
	if rules := dictList(eth2["ipv4"]["routing-rules"]); len(rules) != 0 {
		t.Errorf("eth2 keeps the rule an absent rule removes: %v", rules)
	}
	eth1, _ := h.build(ordered[0], pl, true)
	if rules := profileRules(eth1); len(rules) != 1 || rules[0].String() != "ipv4 priority 1000 to 172.30.0.0/16 table 254" {
		t.Errorf("eth1's rules read back: %v", rules)
	}

	lonely, _ := state.Parse([]byte(`route-rules: {config: [{ip-from: 192.0.2.0/24, route-table: 200}]}`))
	_, err = h.steps(lonely, nil, true)
	var fe *field.Error
	if !errors.As(err, &fe) || fe.Path != "route-rules.config[0]" || !strings.Contains(fe.Reason, "no interface can carry") {
		t.Errorf("a rule with nowhere to go: %v", err)
	}
}

func ptr(i int) *int { return &i }

// InfiniBand where the node has none, or not the adapter a partition names: refused before
// any change, saying so; an identified port is found by its 20-byte address.
func TestInfiniBandDevices(t *testing.T) {
	ibMAC := "20:00:55:04:01:FE:80:00:00:00:00:00:00:00:02:C9:02:00:23:13:92"
	ethOnly := &host{devs: map[string]device{"eth1": {name: "eth1", typ: state.Ethernet, real: true, mac: "52:54:00:00:00:01"}}}
	withIB := &host{devs: map[string]device{
		"eth1":    {name: "eth1", typ: state.Ethernet, real: true, mac: "52:54:00:00:00:01"},
		"ibp27s0": {name: "ibp27s0", typ: state.InfiniBand, real: true, mac: strings.ToLower(ibMAC)},
	}}
	published := `interfaces: [{name: ib-storage, type: infiniband, state: up, identifier: mac-address, mac-address: "` + ibMAC + `",
  infiniband: {mode: datagram, pkey: "0xffff"}, ipv4: {enabled: true, address: [{ip: 100.125.3.4, prefix-length: 16}]}}]`
	for _, tc := range []struct {
		name string
		h    *host
		doc  string
		want string // the error, or the interface's name once resolved
	}{
		{"OpenShift's IPoIB example, no InfiniBand here", ethOnly, published, "interfaces[name=ib-storage]: no InfiniBand device here"},
		{"OpenShift's IPoIB example, the adapter found by its address", withIB, published, "ibp27s0"},
		{"a partition of an adapter the node lacks", withIB, `interfaces: [{name: ib1.8001, type: infiniband, infiniband: {pkey: "0x8001", base-iface: ib1}}]`,
			`interfaces[name=ib1.8001].infiniband.base-iface: no InfiniBand device "ib1" here`},
		{"a partition of the adapter", withIB, `interfaces: [{name: ibp27s0.8001, type: infiniband, infiniband: {pkey: "0x8001", base-iface: ibp27s0}}]`, "ibp27s0.8001"},
		{"an absent one needs no adapter", ethOnly, `interfaces: [{name: ib0, type: infiniband, state: absent}]`, "ib0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := state.Parse([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			got, err := tc.h.resolveIdentifiers(s)
			switch {
			case err != nil && err.Error() != tc.want:
				t.Errorf("error %q, want %q", err, tc.want)
			case err == nil && got.Interfaces[0].Name != tc.want:
				t.Errorf("resolved to %s, want %s", got.Interfaces[0].Name, tc.want)
			}
		})
	}
	// The profile: the port's own link section, the address to match it by, the partition.
	s, _ := state.Parse([]byte(`interfaces: [{name: ibp27s0.8001, type: infiniband, mtu: 2044, infiniband: {mode: connected, pkey: "0x8001", base-iface: ibp27s0}}]`))
	p, err := buildProfile(s.Interfaces[0], state.InfiniBand, nil, "", profileExtras{}, "u")
	if err != nil {
		t.Fatal(err)
	}
	if p.str("connection", "type") != "infiniband" || p.str("infiniband", "transport-mode") != "connected" ||
		p["infiniband"]["p-key"].Value() != int32(0x8001) || p.str("infiniband", "parent") != "ibp27s0" ||
		p["infiniband"]["mtu"].Value() != uint32(2044) || p["802-3-ethernet"] != nil {
		t.Errorf("profile %v", p)
	}
}

// planned is h's plan for doc with prune; nil when it fails, as wantErr (non-empty) says
// it must, with wantErr in its message.
func planned(t *testing.T, h *host, doc, wantErr string) *applySteps {
	t.Helper()
	desired, ordered := mustParse(t, doc)
	pl, err := h.steps(desired, ordered, true)
	switch {
	case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
		t.Fatalf("err %v, want %q", err, wantErr)
	case wantErr != "":
		return nil
	case err != nil:
		t.Fatal(err)
	}
	return pl
}

// A port that names its controller (controller:) is planned as a port of it, whether the
// controller is in the desired state or only on the node; what has no ports is refused.
func TestPlanPortNamingController(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		kind      string // the port's slave-type; "" for none
		err       string
	}{
		{"a bond in the state", `interfaces: [{name: bond0, type: bond, link-aggregation: {mode: active-backup}}, {name: eth1, controller: bond0}]`, "bond", ""},
		{"a bridge on the node", `interfaces: [{name: eth1, controller: br0}]`, "bridge", ""},
		{"a VRF on the node", `interfaces: [{name: eth1, controller: vrf0}]`, "vrf", ""},
		{"a port of none", `interfaces: [{name: eth1, controller: ""}]`, "", ""},
		{"an ethernet", `interfaces: [{name: eth1, controller: eth2}]`, "", `"eth2" is of type ethernet, which has no ports`},
		{"nothing of that name", `interfaces: [{name: eth1, controller: nope0}]`, "", `"nope0" is neither in the desired state nor on the node`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := testHost(map[string]settings{"eth1": ipProfile("manual", true, "disabled", nil), "eth2": ipProfile("manual", true, "disabled", nil)}, state.State{})
			h.devs["br0"] = device{name: "br0", typ: state.LinuxBridge}
			h.devs["vrf0"] = device{name: "vrf0", typ: state.VRF}
			pl := planned(t, h, tc.doc, tc.err)
			if pl == nil {
				return
			}
			port := pl.perIface["eth1"].port
			switch {
			case tc.kind == "" && port != nil:
				t.Errorf("eth1 planned as a port of %s, want none", port.controller)
			case tc.kind != "" && (port == nil || port.kind != tc.kind):
				t.Errorf("eth1 planned as %+v, want a %s port", port, tc.kind)
			}
		})
	}
}

// A route in a VRF with no next hop goes on the VRF's profile, in the VRF's table: the
// desired state's VRF, else the node's.
func TestPlanRouteInVRF(t *testing.T) {
	node := state.State{Interfaces: []state.Interface{{Name: "vrf0", Type: state.VRF, State: state.Up, Section: &state.VRFConfig{RouteTableID: 100}}}}
	for _, tc := range []struct {
		name, doc string
		table     int
		err       string
	}{
		{"the node's VRF", `routes: {config: [{destination: 198.51.200.0/24, route-type: blackhole, vrf-name: vrf0}]}`, 100, ""},
		{"the state's VRF", `interfaces: [{name: vrf0, type: vrf, state: up, vrf: {route-table-id: 200, port: [eth1]}}]
routes: {config: [{destination: 198.51.200.0/24, route-type: blackhole, vrf-name: vrf0}]}`, 200, ""},
		{"no such VRF", `routes: {config: [{destination: 198.51.200.0/24, route-type: blackhole, vrf-name: vrf9}]}`, 0, "no VRF vrf9 in the desired state or on the node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := testHost(map[string]settings{"eth1": ipProfile("manual", true, "disabled", nil)}, node)
			pl := planned(t, h, tc.doc, tc.err)
			if pl == nil {
				return
			}
			routes := pl.perIface["vrf0"].routes
			if len(routes) != 1 || routes[0].TableID == nil || *routes[0].TableID != tc.table || routes[0].RouteType != "blackhole" {
				t.Errorf("vrf0 carries %+v, want the blackhole route in table %d", routes, tc.table)
			}
		})
	}
}
