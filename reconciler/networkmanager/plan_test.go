package networkmanager

import (
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/reconciler/state"

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
		pl, err := testHost(profiles(), state.State{}).plan(desired, ordered, true)
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
			pl, err := testHost(tc.profiles, tc.current).plan(m.State, ordered, true)
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
