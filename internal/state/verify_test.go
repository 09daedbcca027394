package state

import (
	"encoding/json"
	"reflect"

	"sigs.k8s.io/yaml"

	"slices"
	"strings"
	"testing"
)

// verifyDesired states one of every field Verify compares.
const verifyDesired = `
interfaces:
- name: eth1
  type: ethernet
  profile-name: uplink
  mtu: 9000
  mac-address: "02:00:00:00:00:01"
  ipv4: {enabled: true, address: [{ip: 192.0.2.1, prefix-length: 24}]}
  ipv6: {enabled: true, dhcp: true, autoconf: true, auto-dns: false, auto-gateway: false, auto-routes: false, auto-route-metric: 48, auto-route-table-id: 200}
  lldp: {enabled: true}
  ethtool: {feature: {rx-gro: false, tx-tcp-segmentation: true}, ring: {rx: 1024}, coalesce: {rx-usecs: 30, adaptive-rx: true}, pause: {rx: false, autoneg: false}, fec: {auto: false, mode: rs}}
  ethernet:
    sr-iov:
      total-vfs: 2
      vfs:
      - {id: 1, mac-address: "02:00:00:00:01:01", spoof-check: false, trust: true, min-tx-rate: 10, max-tx-rate: 100, vlan-id: 100, qos: 3, vlan-proto: 802.1ad}
- name: bond0
  type: bond
  link-aggregation: {mode: 802.3ad, options: {miimon: "100", lacp_rate: fast}, port: [eth2, eth3]}
- name: br0
  type: linux-bridge
  bridge:
    options: {stp: {enabled: false}}
    port:
    - {name: eth4, vlan: {mode: trunk, enable-native: true, tag: 10, trunk-tags: [{id: 100}, {id-range: {min: 200, max: 202}}]}}
    - {name: eth5, vlan: {mode: access, tag: 20}}
- {name: vrf1, type: vrf, vrf: {port: [eth6], route-table-id: 10}}
- {name: eth6, type: ethernet, controller: vrf1}
- {name: eth7, type: ethernet, controller: ""}
- {name: eth1.7, type: vlan, vlan: {id: 7, base-iface: eth1}}
- {name: mv0, type: mac-vlan, mac-vlan: {base-iface: eth1, mode: bridge}}
- {name: vx0, type: vxlan, vxlan: {id: 42, base-iface: eth1, remote: 192.0.2.9}}
- {name: gone0, state: absent}
routes:
  config:
  - {destination: 198.51.100.0/24, next-hop-interface: eth1, next-hop-address: 192.0.2.254, metric: 50, table-id: 100, source: 192.0.2.1, cwnd: 20}
  - {destination: 203.0.113.0/24, state: absent}
  - {destination: 198.51.200.0/24, route-type: blackhole, vrf-name: vrf1}
dns-resolver:
  config: {server: [192.0.2.53, "2001:db8::53"], search: [example.com]}
`

// verifyCurrent is what a backend reads back when verifyDesired is in effect, spelled
// the way backends spell it (other case, ranges as single ids, extra fields).
const verifyCurrent = `
interfaces:
- name: eth1
  type: ethernet
  state: up
  profile-name: uplink
  mtu: 9000
  mac-address: "02:00:00:00:00:01"
  ipv4: {enabled: true, dhcp: false, address: [{ip: 192.0.2.1, prefix-length: 24}]}
  ipv6: {enabled: true, dhcp: true, autoconf: true, auto-dns: false, auto-gateway: false, auto-routes: false, auto-route-metric: 48, auto-route-table-id: 200, address: [{ip: "fe80::1", prefix-length: 64}]}
  lldp: {enabled: true, neighbors: [[{type: 5, system-name: tor-1}]]}
  ethtool: {feature: {rx-gro: false, tx-tcp-segmentation: true}, ring: {rx: 1024, tx: 256, rx-max: 4096}, coalesce: {rx-usecs: 30, adaptive-rx: true, tx-usecs: 0}, pause: {rx: false, tx: true, autoneg: false}, fec: {auto: false, mode: rs}}
  ethernet:
    sr-iov:
      total-vfs: 2
      vfs:
      - {id: 0, mac-address: "02:00:00:00:01:00", spoof-check: true, trust: false, min-tx-rate: 0, max-tx-rate: 0, vlan-id: 0}
      - {id: 1, mac-address: "02:00:00:00:01:01", spoof-check: false, trust: true, min-tx-rate: 10, max-tx-rate: 100, vlan-id: 100, qos: 3, vlan-proto: 802.1ad}
- name: bond0
  type: bond
  state: up
  link-aggregation: {mode: 802.3ad, options: {miimon: "100", lacp_rate: "1", updelay: "0"}, port: [eth3, eth2]}
- name: br0
  type: linux-bridge
  state: up
  bridge:
    options: {stp: {enabled: false}}
    port:
    - {name: eth4, vlan: {mode: trunk, enable-native: true, tag: 10, trunk-tags: [{id: 100}, {id: 200}, {id-range: {min: 201, max: 202}}]}}
    - {name: eth5, vlan: {mode: access, tag: 20}}
- {name: vrf1, type: vrf, state: up, vrf: {port: [eth6], route-table-id: 10}}
- {name: eth6, type: ethernet, state: up}
- {name: eth7, type: ethernet, state: up}
- {name: eth1.7, type: vlan, state: up, vlan: {id: 7, base-iface: eth1}}
- {name: mv0, type: mac-vlan, state: up, mac-vlan: {base-iface: eth1, mode: bridge}}
- {name: vx0, type: vxlan, state: up, vxlan: {id: 42, base-iface: eth1, remote: 192.0.2.9}}
routes:
  config:
  - {destination: 198.51.100.0/24, next-hop-interface: eth1, next-hop-address: 192.0.2.254, metric: 50, table-id: 100, source: 192.0.2.1, cwnd: 20}
  running:
  - {destination: 198.51.100.0/24, next-hop-interface: eth1, next-hop-address: 192.0.2.254, metric: 50, table-id: 100, source: 192.0.2.1, cwnd: 20}
  - {destination: 203.0.113.0/24, next-hop-interface: eth1, table-id: 254}
  - {destination: 198.51.200.0/24, route-type: blackhole, table-id: 10, metric: 0}
dns-resolver:
  config: {server: [192.0.2.53, "2001:db8::53"], search: [example.com]}
  running: {server: [192.0.2.53, "2001:db8::53", 192.0.2.99], search: [example.com]}
`

func TestVerifyEveryStatedField(t *testing.T) {
	desired := mustParseCurrent(t, verifyDesired)
	if diffs := Verify(desired, mustParseCurrent(t, verifyCurrent)); len(diffs) > 0 {
		t.Fatalf("the current state that has every field: %v", diffs)
	}
	for _, tc := range []struct {
		field  string
		change func(*State)
		path   string
	}{
		{"mtu", func(s *State) { *iface(s, "eth1").MTU = 1500 }, "eth1.mtu"},
		{"mac-address", func(s *State) { *iface(s, "eth1").MACAddress = "02:00:00:00:00:02" }, "eth1.mac-address"},
		{"type", func(s *State) { iface(s, "eth1.7").Type = MACVLAN }, "eth1.7.type"},
		{"up", func(s *State) { iface(s, "eth1").State = Down }, "eth1: is down"},
		{"exists", func(s *State) { s.Interfaces = s.Interfaces[1:] }, "eth1: does not exist"},
		{"absent", func(s *State) { s.Interfaces = append(s.Interfaces, Interface{Name: "gone0", Type: Dummy, State: Up}) }, "gone0: still exists"},
		{"ipv4 address", func(s *State) { iface(s, "eth1").IPv4.Address[0].PrefixLength = 25 }, "eth1.ipv4.address"},
		{"ipv4 enabled", func(s *State) { *iface(s, "eth1").IPv4.Enabled = false }, "eth1.ipv4.enabled"},
		{"ipv6 dhcp", func(s *State) { *iface(s, "eth1").IPv6.DHCP = false }, "eth1.ipv6.dhcp"},
		{"ipv6 autoconf", func(s *State) { *iface(s, "eth1").IPv6.Autoconf = false }, "eth1.ipv6.autoconf"},
		{"ipv6 auto-dns", func(s *State) { *iface(s, "eth1").IPv6.AutoDNS = true }, "eth1.ipv6.auto-dns"},
		{"ipv6 auto-gateway", func(s *State) { *iface(s, "eth1").IPv6.AutoGateway = true }, "eth1.ipv6.auto-gateway"},
		{"ipv6 auto-routes", func(s *State) { iface(s, "eth1").IPv6.AutoRoutes = nil }, "eth1.ipv6.auto-routes"},
		{"ipv6 auto-route-metric", func(s *State) { *iface(s, "eth1").IPv6.AutoRouteMetric = 100 }, "eth1.ipv6.auto-route-metric: 100, want 48"},
		{"ipv6 auto-route-metric not set", func(s *State) { iface(s, "eth1").IPv6.AutoRouteMetric = nil }, "eth1.ipv6.auto-route-metric"},
		{"profile-name", func(s *State) { iface(s, "eth1").ProfileName = nil }, "eth1.profile-name: none, want uplink"},
		{"ipv6 auto-route-table-id", func(s *State) { *iface(s, "eth1").IPv6.AutoRouteTableID = 254 }, "eth1.ipv6.auto-route-table-id: 254, want 200"},
		{"ethtool feature", func(s *State) { iface(s, "eth1").Ethtool.Feature["rx-gro"] = true }, "eth1.ethtool.feature.rx-gro: true, want false"},
		{"ethtool feature not reported", func(s *State) { iface(s, "eth1").Ethtool = nil }, "eth1.ethtool.feature.rx-gro: not reported by the device"},
		{"ethtool ring", func(s *State) { iface(s, "eth1").Ethtool.Ring["rx"] = 256 }, "eth1.ethtool.ring.rx: 256, want 1024"},
		{"ethtool ring not reported", func(s *State) { iface(s, "eth1").Ethtool.Ring = nil }, "eth1.ethtool.ring.rx: not reported by the device, want 1024"},
		{"ethtool coalesce switch", func(s *State) { iface(s, "eth1").Ethtool.Coalesce["adaptive-rx"] = 0 }, "eth1.ethtool.coalesce.adaptive-rx: 0, want 1"},
		{"ethtool pause", func(s *State) { *iface(s, "eth1").Ethtool.Pause.RX = true }, "eth1.ethtool.pause.rx: true, want false"},
		{"ethtool fec mode", func(s *State) { iface(s, "eth1").Ethtool.FEC.Mode = "baser" }, `eth1.ethtool.fec.mode: "baser", want "rs"`},
		{"ethtool fec auto", func(s *State) { *iface(s, "eth1").Ethtool.FEC.Auto = true }, "eth1.ethtool.fec.auto: true, want false"},
		{"ethtool fec not reported", func(s *State) { iface(s, "eth1").Ethtool.FEC = nil }, "eth1.ethtool.fec: not reported by the device"},
		{"lldp", func(s *State) { iface(s, "eth1").LLDP = nil }, "eth1.lldp.enabled: false, want true"},
		{"total-vfs", func(s *State) { *iface(s, "eth1").Ethernet.SRIOV.TotalVFs = 0 }, "eth1.ethernet.sr-iov.total-vfs: 0, want 2"},
		{"no sr-iov", func(s *State) { iface(s, "eth1").Ethernet = nil }, "eth1.ethernet.sr-iov: the device has no SR-IOV"},
		{"vf gone", func(s *State) { iface(s, "eth1").Ethernet.SRIOV.VFs = iface(s, "eth1").Ethernet.SRIOV.VFs[:1] }, "eth1.ethernet.sr-iov.vfs[id=1]: no such VF"},
		{"vf mac", func(s *State) { *iface(s, "eth1").Ethernet.SRIOV.VFs[1].MACAddress = "02:00:00:00:01:02" }, "eth1.ethernet.sr-iov.vfs[id=1].mac-address"},
		{"vf spoof-check", func(s *State) { *iface(s, "eth1").Ethernet.SRIOV.VFs[1].SpoofCheck = true }, "eth1.ethernet.sr-iov.vfs[id=1].spoof-check"},
		{"vf trust", func(s *State) { *iface(s, "eth1").Ethernet.SRIOV.VFs[1].Trust = false }, "eth1.ethernet.sr-iov.vfs[id=1].trust"},
		{"vf min-tx-rate", func(s *State) { *iface(s, "eth1").Ethernet.SRIOV.VFs[1].MinTxRate = 0 }, "eth1.ethernet.sr-iov.vfs[id=1].min-tx-rate"},
		{"vf max-tx-rate", func(s *State) { *iface(s, "eth1").Ethernet.SRIOV.VFs[1].MaxTxRate = 0 }, "eth1.ethernet.sr-iov.vfs[id=1].max-tx-rate"},
		{"vf vlan", func(s *State) { *iface(s, "eth1").Ethernet.SRIOV.VFs[1].VLANID = 0 }, "eth1.ethernet.sr-iov.vfs[id=1].vlan-id"},
		{"vf qos", func(s *State) { *iface(s, "eth1").Ethernet.SRIOV.VFs[1].QoS = 0 }, "eth1.ethernet.sr-iov.vfs[id=1].qos"},
		{"vf vlan-proto", func(s *State) { iface(s, "eth1").Ethernet.SRIOV.VFs[1].VLANProto = VLANProto8021Q }, "eth1.ethernet.sr-iov.vfs[id=1].vlan-proto"},
		{"bond mode", func(s *State) { SectionOf[*BondConfig](*iface(s, "bond0")).Mode = "active-backup" }, "bond0.link-aggregation.mode"},
		{"bond option", func(s *State) { SectionOf[*BondConfig](*iface(s, "bond0")).Options["miimon"] = "200" }, "bond0.link-aggregation.options.miimon"},
		{"bond option missing", func(s *State) { delete(SectionOf[*BondConfig](*iface(s, "bond0")).Options, "lacp_rate") }, "bond0.link-aggregation.options.lacp_rate"},
		{"bond ports", func(s *State) { SectionOf[*BondConfig](*iface(s, "bond0")).Port = []string{"eth2"} }, "bond0.link-aggregation.port"},
		{"bridge stp", func(s *State) { *SectionOf[*BridgeConfig](*iface(s, "br0")).Options.STP.Enabled = true }, "br0.bridge.options.stp.enabled"},
		{"bridge ports", func(s *State) {
			SectionOf[*BridgeConfig](*iface(s, "br0")).Port = SectionOf[*BridgeConfig](*iface(s, "br0")).Port[:1]
		}, "br0.bridge.port"},
		{"trunk tags", func(s *State) {
			SectionOf[*BridgeConfig](*iface(s, "br0")).Port[0].VLAN.TrunkTags = SectionOf[*BridgeConfig](*iface(s, "br0")).Port[0].VLAN.TrunkTags[:2]
		}, "br0.bridge.port[name=eth4].vlan"},
		{"native vlan", func(s *State) { *SectionOf[*BridgeConfig](*iface(s, "br0")).Port[0].VLAN.EnableNative = false }, "br0.bridge.port[name=eth4].vlan"},
		{"access tag", func(s *State) { *SectionOf[*BridgeConfig](*iface(s, "br0")).Port[1].VLAN.Tag = 21 }, "br0.bridge.port[name=eth5].vlan"},
		{"vrf table", func(s *State) { SectionOf[*VRFConfig](*iface(s, "vrf1")).RouteTableID = 11 }, "vrf1.vrf.route-table-id"},
		{"vrf ports", func(s *State) { SectionOf[*VRFConfig](*iface(s, "vrf1")).Port = nil }, "vrf1.vrf.port"},
		{"controller", func(s *State) { SectionOf[*VRFConfig](*iface(s, "vrf1")).Port = nil }, "eth6.controller: none, want vrf1"},
		{"controller none", func(s *State) {
			b := SectionOf[*BondConfig](*iface(s, "bond0"))
			b.Port = append(b.Port, "eth7")
		}, "eth7.controller: bond0, want none"},
		{"vlan id", func(s *State) { SectionOf[*VLANConfig](*iface(s, "eth1.7")).ID = 8 }, "eth1.7.vlan"},
		{"mac-vlan mode", func(s *State) { SectionOf[*MACVLANConfig](*iface(s, "mv0")).Mode = "vepa" }, "mv0.mac-vlan"},
		{"vxlan remote", func(s *State) { SectionOf[*VXLANConfig](*iface(s, "vx0")).Remote = "192.0.2.8" }, "vx0.vxlan"},
		{"route metric", func(s *State) { *s.Routes.Running[0].Metric = 51 }, "routes.config[destination=198.51.100.0/24"},
		{"route source", func(s *State) { s.Routes.Running[0].Source = "192.0.2.2" }, "routes.config[destination=198.51.100.0/24"},
		{"route cwnd", func(s *State) { s.Routes.Running[0].Cwnd = nil }, "routes.config[destination=198.51.100.0/24"},
		{"blackhole route in another table", func(s *State) { *s.Routes.Running[2].TableID = 254 }, "routes.config[destination=198.51.200.0/24"},
		{"blackhole route unicast", func(s *State) { s.Routes.Running[2].RouteType = "" }, "routes.config[destination=198.51.200.0/24"},
		{"route table", func(s *State) { *s.Routes.Running[0].TableID = 254 }, "routes.config[destination=198.51.100.0/24"},
		{"absent route", func(s *State) {
			s.Routes.Config = append(s.Routes.Config, Route{Destination: "203.0.113.0/24", NextHopInterface: "eth9", TableID: ptr(7)})
		}, "routes.config[destination=203.0.113.0/24]"},
		{"dns server", func(s *State) { s.DNSResolver.Config.Server = s.DNSResolver.Config.Server[:1] }, "dns-resolver.config.server"},
		{"dns server order", func(s *State) { s.DNSResolver.Config.Server = []string{"2001:db8::53", "192.0.2.53"} }, "dns-resolver.config.server"},
		{"dns search", func(s *State) { s.DNSResolver.Config.Search = nil }, "dns-resolver.config.search"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			current := mustParseCurrent(t, verifyCurrent)
			tc.change(&current)
			diffs := Verify(desired, current)
			found := false
			for _, d := range diffs {
				found = found || strings.HasPrefix(d, tc.path)
			}
			if !found {
				t.Errorf("a current state differing in %s alone: diffs %q, want one at %s", tc.field, diffs, tc.path)
			}
		})
	}
}

func TestVerifyClearedDNS(t *testing.T) {
	desired := mustParseCurrent(t, `dns-resolver: {config: {}}`)
	for _, tc := range []struct {
		name    string
		current string
		diffs   int
	}{
		{"nothing static left", `dns-resolver: {config: {}, running: {server: [192.0.2.99]}}`, 0},
		{"an IPv6 server left", `dns-resolver: {config: {server: ["2001:db8::53"]}}`, 1},
		{"a search domain left", `dns-resolver: {config: {search: [example.com]}}`, 1},
	} {
		if diffs := Verify(desired, mustParseCurrent(t, tc.current)); len(diffs) != tc.diffs {
			t.Errorf("%s: diffs %q, want %d", tc.name, diffs, tc.diffs)
		}
	}
}

func TestRouteSelects(t *testing.T) {
	running := Route{Destination: "203.0.113.0/24", NextHopInterface: "eth1", NextHopAddress: "192.0.2.1", Metric: ptr(100), TableID: ptr(100)}
	for _, tc := range []struct {
		absent string
		want   bool
	}{
		{`{destination: 203.0.113.0/24}`, true},
		{`{destination: 203.0.113.0/25}`, false},
		{`{next-hop-interface: eth1}`, true},
		{`{next-hop-interface: eth2}`, false},
		{`{next-hop-address: 192.0.2.1}`, true},
		{`{next-hop-address: 192.0.2.2}`, false},
		{`{destination: 203.0.113.0/24, table-id: 100}`, true},
		{`{destination: 203.0.113.0/24, table-id: 0}`, true},
		{`{destination: 203.0.113.0/24, table-id: 254}`, false},
		{`{destination: 203.0.113.0/24, metric: 5}`, true}, // nmstate never compares the metric
	} {
		s := mustParse(t, `routes: {config: [`+strings.TrimSuffix(tc.absent, "}")+`, state: absent}]}`)
		if got := s.Routes.Config[0].Selects(running); got != tc.want {
			t.Errorf("%s selects %s = %v, want %v", tc.absent, running, got, tc.want)
		}
	}
}

func TestAbsentRouteNamingNothingIsRefused(t *testing.T) {
	_, err := Parse([]byte(`routes: {config: [{state: absent, metric: 5}]}`))
	if err == nil || !strings.Contains(err.Error(), "routes.config[0]: an absent route must name") {
		t.Errorf("got %v", err)
	}
}

func iface(s *State, name string) *Interface {
	for i := range s.Interfaces {
		if s.Interfaces[i].Name == name {
			return &s.Interfaces[i]
		}
	}
	panic(name)
}

func ptr[T any](v T) *T { return &v }

// mustParseCurrent reads a state as a backend reports it: no validation, running sections.
func mustParseCurrent(t *testing.T, doc string) State {
	t.Helper()
	var s State
	if err := yaml.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestVerifyOVS(t *testing.T) {
	desired := mustParse(t, localnetDoc)
	yes, no := true, false
	current := State{
		Interfaces: []Interface{
			// The internal interface of another bridge of the same name must not stand in for it.
			{Name: "ovs-br1", Type: OVSInterface, State: Up},
			{Name: "ovs-br1", Type: OVSBridge, State: Up, Section: &BridgeConfig{
				Options: &BridgeOptions{STP: &STP{Enabled: &no}, MCastSnoopingEnable: &yes},
				Port:    []BridgePort{{Name: "eth1"}, {Name: "patch-localnet2-to-br-int"}}}},
		},
		OVN: &OVN{BridgeMappings: []BridgeMapping{{Localnet: "localnet2", Bridge: "ovs-br1"}, {Localnet: "physnet", Bridge: "br-ex"}}},
	}
	// Ports others added (OVN's patch port) and mappings others made are not differences.
	if diffs := Verify(desired, current); len(diffs) != 0 {
		t.Fatalf("converged state reported as %v", diffs)
	}
	SectionOf[*BridgeConfig](current.Interfaces[1]).Options.MCastSnoopingEnable = &no
	SectionOf[*BridgeConfig](current.Interfaces[1]).Port = SectionOf[*BridgeConfig](current.Interfaces[1]).Port[1:]
	current.OVN.BridgeMappings[0].Bridge = "br-ex"
	want := []string{
		"ovs-br1,type=ovs-bridge.bridge.options.mcast-snooping-enable: false, want true",
		"ovs-br1,type=ovs-bridge.bridge.port: [patch-localnet2-to-br-int], want eth1 among them",
		"ovn.bridge-mappings[localnet=localnet2]: br-ex, want ovs-br1",
	}
	if diffs := Verify(desired, current); !slices.Equal(diffs, want) {
		t.Errorf("diffs:\n%s\nwant:\n%s", strings.Join(diffs, "\n"), strings.Join(want, "\n"))
	}
	current.OVN = nil
	removal := mustParse(t, `ovn: {bridge-mappings: [{localnet: localnet2, state: absent}]}`)
	if diffs := Verify(removal, current); len(diffs) != 0 {
		t.Errorf("an absent mapping on a host without any: %v", diffs)
	}
	if diffs := Verify(desired, State{}); !slices.Contains(diffs, "ovn.bridge-mappings[localnet=localnet2]: none, want ovs-br1") {
		t.Errorf("unread mappings: %v", diffs)
	}
}

func TestVerifyOVSBond(t *testing.T) {
	desired := mustParse(t, `interfaces:
- name: br1
  type: ovs-bridge
  bridge:
    port:
    - {name: bond1, link-aggregation: {mode: balance-slb, bond-downdelay: 200, port: [{name: eth1}, {name: eth2}]}}`)
	delay := 200
	bond := &OVSBond{Mode: "balance-slb", DownDelay: &delay, Port: []OVSBondPort{{Name: "eth2"}, {Name: "eth1"}}}
	current := State{Interfaces: []Interface{{Name: "br1", Type: OVSBridge, State: Up, Section: &BridgeConfig{
		Port: []BridgePort{{Name: "bond1", LinkAggregation: bond}, {Name: "patch-x"}}}}}}
	if diffs := Verify(desired, current); len(diffs) != 0 {
		t.Fatalf("converged state reported as %v", diffs)
	}
	for _, tc := range []struct {
		name   string
		change func(b *BridgePort)
		want   string
	}{
		{"mode", func(b *BridgePort) { b.LinkAggregation.Mode = "active-backup" }, "br1,type=ovs-bridge.bridge.port[name=bond1].link-aggregation.mode: active-backup, want balance-slb"},
		{"a member missing", func(b *BridgePort) { b.LinkAggregation.Port = b.LinkAggregation.Port[:1] }, "br1,type=ovs-bridge.bridge.port[name=bond1].link-aggregation.port: [eth2], want [eth1 eth2]"},
		{"a member more", func(b *BridgePort) {
			b.LinkAggregation.Port = append(slices.Clone(b.LinkAggregation.Port), OVSBondPort{Name: "eth3"})
		}, "br1,type=ovs-bridge.bridge.port[name=bond1].link-aggregation.port: [eth1 eth2 eth3], want [eth1 eth2]"},
		{"delay", func(b *BridgePort) { b.LinkAggregation.DownDelay = nil }, "br1,type=ovs-bridge.bridge.port[name=bond1].link-aggregation.bond-downdelay: 0, want 200"},
		{"not a bond", func(b *BridgePort) { b.LinkAggregation = nil }, "br1,type=ovs-bridge.bridge.port[name=bond1].link-aggregation: not a bond, want mode balance-slb"},
	} {
		c := *bond
		port := BridgePort{Name: "bond1", LinkAggregation: &c}
		tc.change(&port)
		SectionOf[*BridgeConfig](current.Interfaces[0]).Port[0] = port
		if diffs := Verify(desired, current); !slices.Equal(diffs, []string{tc.want}) {
			t.Errorf("%s: %v, want %s", tc.name, diffs, tc.want)
		}
	}
}

func TestVerifyRouteRules(t *testing.T) {
	desired := mustParse(t, `route-rules: {config: [{ip-to: 172.30.0.0/16, priority: 1000}, {ip-from: 192.0.2.0/24, route-table: 200, state: absent}]}`)
	current := State{RouteRules: &RouteRules{Config: []RouteRule{
		{Family: "ipv4", IPTo: "172.30.0.0/16", Priority: ptr(1000), RouteTable: ptr(254)},
		{Family: "ipv4", IPFrom: "198.51.100.0/24", Priority: ptr(30000), RouteTable: ptr(200)},
	}}}
	if diffs := Verify(desired, current); len(diffs) != 0 {
		t.Fatalf("converged rules reported as %v", diffs)
	}
	current.RouteRules.Config[0].RouteTable = ptr(100)
	current.RouteRules.Config[1].IPFrom = "192.0.2.0/24"
	want := []string{
		"route-rules.config[ipv4 priority 1000 to 172.30.0.0/16 table 254]: missing",
		"route-rules.config[from 192.0.2.0/24 table 200 (absent)]: ipv4 priority 30000 from 192.0.2.0/24 table 200 still configured, want absent",
	}
	if diffs := Verify(desired, current); !slices.Equal(diffs, want) {
		t.Errorf("diffs:\n%s\nwant:\n%s", strings.Join(diffs, "\n"), strings.Join(want, "\n"))
	}
}

// Ring and coalesce values go through JSON (the enactment's status, a captured state) as
// nmstate writes them: counts, and coalesce's switches as booleans.
func TestEthtoolValuesJSON(t *testing.T) {
	in := EthtoolConfig{Ring: EthtoolValues{"rx": 1024}, Coalesce: EthtoolValues{"adaptive-rx": 1, "rx-usecs": 30}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"ring":{"rx":1024},"coalesce":{"adaptive-rx":true,"rx-usecs":30}}`; string(b) != want {
		t.Errorf("marshalled %s, want %s", b, want)
	}
	var out EthtoolConfig
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Errorf("round trip: %+v, want %+v", out, in)
	}
	if err := json.Unmarshal([]byte(`{"ring":{"rx":-1}}`), &out); err == nil {
		t.Error("a negative ring size unmarshalled")
	}
}
