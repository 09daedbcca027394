package state

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/nmoverlay/nmoverlay/api/field"
)

// Policies as administrators write them for kubernetes-nmstate (its user guide's
// examples and common day-2 shapes): each must parse unchanged.
var validDocs = map[string]string{
	"bond with vlan": `
interfaces:
- name: bond0
  type: bond
  state: up
  ipv4:
    enabled: false
  link-aggregation:
    mode: active-backup
    options:
      miimon: '140'
    port:
    - eth1
    - eth2
- name: bond0.102
  type: vlan
  state: up
  ipv4:
    address:
    - ip: 10.10.10.2
      prefix-length: 24
    dhcp: false
    enabled: true
  vlan:
    base-iface: bond0
    id: 102
`,
	"linux bridge": `
interfaces:
- name: br1
  type: linux-bridge
  state: up
  ipv4:
    dhcp: true
    enabled: true
  bridge:
    options:
      stp:
        enabled: false
    port:
    - name: eth1
`,
	"static ip, routes and dns": `
dns-resolver:
  config:
    search:
    - example.com
    server:
    - 8.8.8.8
    - 2001:4860:4860::8888
routes:
  config:
  - destination: 0.0.0.0/0
    metric: 150
    next-hop-address: 192.168.1.1
    next-hop-interface: eth1
    table-id: 254
  - destination: 198.51.100.0/24
    next-hop-interface: eth1
    state: absent
interfaces:
- name: eth1
  description: uplink
  type: ethernet
  state: up
  mtu: 9000
  ipv4:
    address:
    - ip: 192.168.1.20
      prefix-length: 24
    dhcp: false
    enabled: true
  ipv6:
    enabled: true
    autoconf: false
    dhcp: false
    address:
    - ip: 2001:db8::20
      prefix-length: 64
  lldp:
    enabled: true
`,
	"bridge trunk with ports alias": `
interfaces:
- name: br-trunk
  type: linux-bridge
  mtu: 9000
  state: up
  ipv4: {enabled: false}
  ipv6: {enabled: false}
  bridge:
    options: {stp: {enabled: false}}
    ports:
    - name: bond1
      vlan:
        mode: trunk
        trunk-tags:
        - id: 315
        - id-range: {min: 3700, max: 3799}
    - name: eth3
      vlan:
        mode: access
        tag: 100
`,
	"dhcp with auto settings": `
interfaces:
- name: eth1
  type: ethernet
  state: up
  ipv4:
    enabled: true
    dhcp: true
    auto-dns: false
    auto-gateway: false
    auto-routes: true
  ipv6:
    enabled: true
    dhcp: true
    autoconf: true
`,
	"mac-vlan, vxlan, vrf, veth, dummy": `
interfaces:
- name: mv0
  type: mac-vlan
  state: up
  mac-vlan: {base-iface: eth1, mode: bridge, promiscuous: true}
- name: vx0
  type: vxlan
  state: up
  vxlan: {id: 100, base-iface: eth1, remote: 192.0.2.50, destination-port: 4789}
- name: vrf0
  type: vrf
  state: up
  vrf: {port: [eth2], route-table-id: 100}
- name: veth0
  type: veth
  state: up
  veth: {peer: veth0p}
- name: dummy0
  type: dummy
  state: up
  mac-address: "02:00:00:00:00:01"
`,
	"removal and down": `
interfaces:
- name: bond9
  state: absent
- name: eth5
  type: ethernet
  state: down
`,
	"empty": ``,
	// OpenShift Virtualization's VF example (modules/virt-example-vf-host-services.adoc).
	"sr-iov VFs": `
interfaces:
- name: ens1f0
  type: ethernet
  state: up
  ethernet:
    sr-iov:
      total-vfs: 4
      drivers-autoprobe: true
      vfs:
      - {id: 0, trust: true, vlan-id: 100, qos: 3, vlan-proto: 802.1ad}
      - {id: 1, mac-address: 02:00:00:00:00:01, spoof-check: false, min-tx-rate: 10, max-tx-rate: 100}
`,
}

func TestParseValid(t *testing.T) {
	for name, doc := range validDocs {
		t.Run(name, func(t *testing.T) {
			s, err := Parse([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			// Round trip: what we understood serialises back in the same schema.
			out, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Parse(out)
			if err != nil {
				t.Fatalf("re-parse of %s: %v", out, err)
			}
			out2, _ := json.Marshal(again)
			if string(out) != string(out2) {
				t.Errorf("round trip changed the state:\n%s\n%s", out, out2)
			}
		})
	}
}

func TestParseFields(t *testing.T) {
	s, err := Parse([]byte(validDocs["bond with vlan"]))
	if err != nil {
		t.Fatal(err)
	}
	bond, vlan := s.Interfaces[0], s.Interfaces[1]
	if SectionOf[*BondConfig](bond).Mode != "active-backup" || SectionOf[*BondConfig](bond).Options["miimon"] != "140" ||
		strings.Join(SectionOf[*BondConfig](bond).Port, ",") != "eth1,eth2" || *bond.IPv4.Enabled {
		t.Errorf("bond: %+v %+v", SectionOf[*BondConfig](bond), bond.IPv4)
	}
	if SectionOf[*VLANConfig](vlan).ID != 102 || SectionOf[*VLANConfig](vlan).BaseIface != "bond0" || vlan.IPv4.Address[0] != (Address{IP: "10.10.10.2", PrefixLength: 24}) {
		t.Errorf("vlan: %+v %+v", SectionOf[*VLANConfig](vlan), vlan.IPv4)
	}
	s, _ = Parse([]byte(`interfaces: [{name: b0, link-aggregation: {mode: 802.3ad, port: [e1]}}]`))
	if s.Interfaces[0].Type != Bond {
		t.Errorf("type not inferred from link-aggregation: %q", s.Interfaces[0].Type)
	}
}

// invalidDocs: each document, its expected field path and a part of the reason.
var invalidDocs = []struct {
	name, doc, path, reason string
}{
	{"not yaml", "interfaces: [", "desiredState", "not valid YAML"},
	{"VF beyond total-vfs", "interfaces: [{name: ens1f0, type: ethernet, ethernet: {sr-iov: {total-vfs: 2, vfs: [{id: 2, trust: true}]}}}]",
		"interfaces[0].ethernet.sr-iov.vfs[0].id", "VF 2 does not exist with total-vfs 2"},
	{"VF listed twice", "interfaces: [{name: ens1f0, type: ethernet, ethernet: {sr-iov: {vfs: [{id: 1}, {id: 1}]}}}]",
		"interfaces[0].ethernet.sr-iov.vfs[1].id", "VF 1 is listed twice"},
	{"VF qos without a VLAN", "interfaces: [{name: ens1f0, type: ethernet, ethernet: {sr-iov: {vfs: [{id: 0, qos: 3}]}}}]",
		"interfaces[0].ethernet.sr-iov.vfs[0]", "give vlan-id"},
	{"VF vlan-proto", "interfaces: [{name: ens1f0, type: ethernet, ethernet: {sr-iov: {vfs: [{id: 0, vlan-id: 5, vlan-proto: qinq}]}}}]",
		"interfaces[0].ethernet.sr-iov.vfs[0].vlan-proto", `"qinq" is not one of 802.1q, 802.1ad`},
	{"VF rates crossed", "interfaces: [{name: ens1f0, type: ethernet, ethernet: {sr-iov: {vfs: [{id: 0, min-tx-rate: 200, max-tx-rate: 100}]}}}]",
		"interfaces[0].ethernet.sr-iov.vfs[0].min-tx-rate", "200 is above max-tx-rate 100"},
	{"VF MAC", "interfaces: [{name: ens1f0, type: ethernet, ethernet: {sr-iov: {vfs: [{id: 0, mac-address: '00:11'}]}}}]",
		"interfaces[0].ethernet.sr-iov.vfs[0].mac-address", "not an Ethernet MAC address"},
	{"sr-iov on a bond", "interfaces: [{name: bond0, type: bond, link-aggregation: {mode: active-backup}, ethernet: {sr-iov: {total-vfs: 2}}}]",
		"interfaces[0].ethernet", "not a bond's"},
	{"ipv6 forwarding", "interfaces: [{name: eth1, type: ethernet, ipv6: {enabled: true, forwarding: true}}]",
		"interfaces[0].ipv6.forwarding", "unknown field"},
	{"ipv4 forwarding not a boolean", "interfaces: [{name: eth1, type: ethernet, ipv4: {enabled: true, forwarding: 'yes'}}]",
		"interfaces[0].ipv4.forwarding", "must be true or false"},
	{"ipsec without right", "interfaces: [{name: hosta_conn, type: ipsec, libreswan: {left: 192.0.2.251}}]", "interfaces[0].libreswan.right", "required"},
	{"ipsec type", "interfaces: [{name: c, type: ipsec, libreswan: {right: 192.0.2.252, type: tunel}}]",
		"interfaces[0].libreswan.type", `"tunel" is not one of tunnel, transport`},
	{"ipsec hostaddrfamily", "interfaces: [{name: c, type: ipsec, libreswan: {right: 192.0.2.252, hostaddrfamily: inet}}]",
		"interfaces[0].libreswan.hostaddrfamily", `"inet" is not one of ipv4, ipv6`},
	{"ipsec-interface a boolean", "interfaces: [{name: c, type: ipsec, libreswan: {right: 192.0.2.252, ipsec-interface: true}}]",
		"interfaces[0].libreswan.ipsec-interface", "must be yes, no or an unsigned integer"},
	{"ipsec-interface a word", "interfaces: [{name: c, type: ipsec, libreswan: {right: 192.0.2.252, ipsec-interface: maybe}}]",
		"interfaces[0].libreswan.ipsec-interface", `"maybe" must be yes, no or an unsigned integer`},
	{"ipsec-interface negative", "interfaces: [{name: c, type: ipsec, libreswan: {right: 192.0.2.252, ipsec-interface: -1}}]",
		"interfaces[0].libreswan.ipsec-interface", "-1 is out of range"},
	{"dpddelay negative", "interfaces: [{name: c, type: ipsec, libreswan: {right: 192.0.2.252, dpddelay: -1}}]",
		"interfaces[0].libreswan.dpddelay", "out of range"},
	{"dpdtimeout not a number", "interfaces: [{name: c, type: ipsec, libreswan: {right: 192.0.2.252, dpdtimeout: 0xzz}}]",
		"interfaces[0].libreswan.dpdtimeout", "not an unsigned integer (decimal or 0x hex)"},
	{"leftmodecfgclient not a boolean", "interfaces: [{name: c, type: ipsec, libreswan: {right: 192.0.2.252, leftmodecfgclient: 'yes'}}]",
		"interfaces[0].libreswan.leftmodecfgclient", "must be true or false"},
	{"psk not a string", "interfaces: [{name: c, type: ipsec, libreswan: {right: 192.0.2.252, psk: 12}}]",
		"interfaces[0].libreswan.psk", "must be a string"},
	{"psk hidden by nmstate", "interfaces: [{name: c, type: ipsec, libreswan: {right: 192.0.2.252, psk: <_password_hid_by_nmstate>}}]",
		"interfaces[0].libreswan.psk", "placeholder for a hidden secret"},
	{"ipsec with an MTU", "interfaces: [{name: c, type: ipsec, mtu: 1400, libreswan: {right: 192.0.2.252}}]",
		"interfaces[0].mtu", "no link of its own"},
	{"libreswan on an ethernet", "interfaces: [{name: eth1, type: ethernet, libreswan: {right: 192.0.2.252}}]",
		"interfaces[0].libreswan", "only for type ipsec"},
	{"libreswan unknown key", "interfaces: [{name: c, type: ipsec, libreswan: {right: 192.0.2.252, require-id-reply: true}}]",
		"interfaces[0].libreswan.require-id-reply", "unknown field"},
	{"identifier without its MAC", "interfaces: [{name: uplink, identifier: mac-address}]", "interfaces[0].mac-address", "required with identifier: mac-address"},
	{"identifier by PCI address without one", "interfaces: [{name: uplink, identifier: pci-address}]", "interfaces[0].pci-address", "required with identifier: pci-address"},
	{"pci-address not one", "interfaces: [{name: uplink, identifier: pci-address, pci-address: '01:00.0'}]", "interfaces[0].pci-address", "not a PCI address"},
	{"pci-address not a string", "interfaces: [{name: uplink, identifier: pci-address, pci-address: 1}]", "interfaces[0].pci-address", "must be a string"},
	{"ethernet speed", "interfaces: [{name: eth1, type: ethernet, ethernet: {speed: 1000}}]",
		"interfaces[0].ethernet.speed", "not supported by nmoverlay"},
	{"top level list", "- a\n- b", "desiredState", "must be a mapping"},
	{"unknown top-level key", "interface: []", "desiredState.interface", "unknown field"},
	{"unsupported top-level key", "ovs-db: {external_ids: {}}", "desiredState.ovs-db", "not supported by nmoverlay"},
	{"rule family", "route-rules: {config: [{ip-from: 192.0.2.0/24, family: ipv6, route-table: 200}]}", "route-rules.config[0].ip-from", "is ipv4 but family is ipv6"},
	{"rule addresses of two families", "route-rules: {config: [{ip-from: 192.0.2.0/24, ip-to: '2001:db8::/64'}]}", "route-rules.config[0].ip-to", "is ipv6 but ip-from is ipv4"},
	{"rule without family", "route-rules: {config: [{fwmark: 16, route-table: 200}]}", "route-rules.config[0].family", "required when the rule names neither"},
	{"rule action", "route-rules: {config: [{ip-to: 192.0.2.0/24, action: drop}]}", "route-rules.config[0].action", "not one of blackhole, unreachable, prohibit"},
	{"rule fwmark", "route-rules: {config: [{ip-to: 192.0.2.0/24, fwmark: '0xzz'}]}", "route-rules.config[0].fwmark", "not a 32-bit unsigned integer"},
	{"rule address", "route-rules: {config: [{ip-to: 192.0.2.0/33}]}", "route-rules.config[0].ip-to", "not an address or a prefix"},
	{"absent rule naming nothing", "route-rules: {config: [{state: absent}]}", "route-rules.config[0]", "would remove them all"},
	{"netplan schema", "network: {version: 2, ethernets: {eth1: {dhcp4: true}}}", "desiredState.network", "netplan's schema"},
	{"static hostname", "hostname: {config: n1}", "hostname.config", "/etc/hostname, which outlives a boot"},
	{"running hostname", "hostname: {running: n1}", "hostname.running", "CAP_SYS_ADMIN"},
	{"interfaces not a list", "interfaces: {name: eth1}", "interfaces", "must be a list"},
	{"interface not a mapping", "interfaces: [eth1]", "interfaces[0]", "must be a mapping"},
	{"missing name", "interfaces: [{type: ethernet}]", "interfaces[0].name", "required"},
	{"name too long", "interfaces: [{name: averyveryverylongname, type: dummy}]", "interfaces[0].name", "longer than 15"},
	{"name with slash", "interfaces: [{name: a/b, type: dummy}]", "interfaces[0].name", "contains '/'"},
	{"duplicate name", "interfaces: [{name: eth1, type: ethernet}, {name: eth1, type: ethernet}]", "interfaces[1].name", "also interfaces[0]"},
	{"unknown type", "interfaces: [{name: x, type: etherent}]", "interfaces[0].type", "unknown interface type"},
	{"unsupported type", "interfaces: [{name: team0, type: team}]", "interfaces[0].type", "not supported by nmoverlay"},
	{"infiniband mode", "interfaces: [{name: ib0, type: infiniband, infiniband: {mode: stream}}]", "interfaces[0].infiniband.mode", `"stream" is not one of datagram, connected`},
	{"infiniband pkey", "interfaces: [{name: ib0.8001, type: infiniband, infiniband: {pkey: '0x10000', base-iface: ib0}}]", "interfaces[0].infiniband.pkey", "not a partition key"},
	{"infiniband address as an Ethernet one", "interfaces: [{name: ib0, type: infiniband, identifier: mac-address, mac-address: '02:00:00:00:00:01'}]", "interfaces[0].mac-address", "not an IP-over-InfiniBand hardware address"},
	{"hsr over one port twice", "interfaces: [{name: hsr0, type: hsr, hsr: {port1: eth1, port2: eth1, multicast-spec: 0}}]",
		"interfaces[0].hsr.port2", `"eth1" is port1 too`},
	{"hsr over itself", "interfaces: [{name: hsr0, type: hsr, hsr: {port1: hsr0, port2: eth1, multicast-spec: 0}}]",
		"interfaces[0].hsr.port1", "cannot be its own port"},
	{"hsr without a port", "interfaces: [{name: hsr0, type: hsr, hsr: {port1: eth1, multicast-spec: 0}}]",
		"interfaces[0].hsr.port2", "required"},
	{"ipvlan private and vepa", "interfaces: [{name: ipvlan0, type: ipvlan, ipvlan: {base-iface: eth1, private: true, vepa: true}}]",
		"interfaces[0].ipvlan.vepa", "private or VEPA, not both"},
	{"ipvlan mode", "interfaces: [{name: ipvlan0, type: ipvlan, ipvlan: {base-iface: eth1, mode: l4}}]",
		"interfaces[0].ipvlan.mode", `"l4" is not one of l2, l3, l3s`},
	{"bond ports-config of no port", "interfaces: [{name: bond0, type: bond, link-aggregation: {mode: active-backup, port: [eth1], ports-config: [{name: eth2, queue-id: 1}]}}]",
		"interfaces[0].link-aggregation.ports-config[0].name", `"eth2" is not one of the bond's ports [eth1]`},
	{"bond ports-config twice", "interfaces: [{name: bond0, type: bond, link-aggregation: {mode: active-backup, port: [eth1], ports-config: [{name: eth1}, {name: eth1}]}}]",
		"interfaces[0].link-aggregation.ports-config[1].name", `"eth1" is configured twice`},
	{"bond ports-config without a name", "interfaces: [{name: bond0, type: bond, link-aggregation: {mode: active-backup, port: [eth1], ports-config: [{queue-id: 1}]}}]",
		"interfaces[0].link-aggregation.ports-config[0].name", "required"},
	{"ovs bond without ports", "interfaces: [{name: br1, type: ovs-bridge, bridge: {port: [{name: bond1, link-aggregation: {mode: balance-slb}}]}}]", "interfaces[0].bridge.port[0].link-aggregation.port", "required"},
	{"ovs bond of one", "interfaces: [{name: br1, type: ovs-bridge, bridge: {port: [{name: bond1, link-aggregation: {mode: balance-slb, port: [{name: eth1}]}}]}}]", "interfaces[0].bridge.port[0].link-aggregation.port", "two ports or more"},
	{"ovs bond mode", "interfaces: [{name: br1, type: ovs-bridge, bridge: {port: [{name: bond1, link-aggregation: {mode: 802.3ad, port: [{name: eth1}, {name: eth2}]}}]}}]", "interfaces[0].bridge.port[0].link-aggregation.mode", "not an OVS bond mode"},
	{"ovs bond member twice", "interfaces: [{name: br1, type: ovs-bridge, bridge: {port: [{name: bond1, link-aggregation: {mode: lacp, port: [{name: eth1}, {name: eth1}]}}]}}]", "interfaces[0].bridge.port[0].link-aggregation.port[1]", "listed twice"},
	{"ovs bond named as an interface", "interfaces: [{name: eth3, type: ethernet}, {name: br1, type: ovs-bridge, bridge: {port: [{name: eth3, link-aggregation: {mode: lacp, port: [{name: eth1}, {name: eth2}]}}]}}]", "interfaces[1].bridge.port[0].name", "is also interfaces[0]"},
	{"ovs bond of an internal interface", "interfaces: [{name: br1, type: ovs-bridge, bridge: {port: [{name: bond1, link-aggregation: {mode: lacp, port: [{name: eth1}, {name: br1}]}}]}}]", "interfaces[0].bridge.port[0].link-aggregation.port[1]", "internal interface"},
	{"ovs bond member of two", "interfaces: [{name: br1, type: ovs-bridge, bridge: {port: [{name: bond1, link-aggregation: {mode: lacp, port: [{name: eth1}, {name: eth2}]}}]}}, {name: b0, type: bond, link-aggregation: {mode: active-backup, port: [eth2]}}]", "interfaces[1].link-aggregation.port", "already a port of \"br1\""},
	{"ovs bond ovs-db NetworkManager's key", "interfaces: [{name: br1, type: ovs-bridge, bridge: {port: [{name: bond1, link-aggregation: {mode: lacp, ovs-db: {external_ids: {NM.x: b}}, port: [{name: eth1}, {name: eth2}]}}]}}]", "interfaces[0].bridge.port[0].link-aggregation.ovs-db.external_ids.NM.x", "NetworkManager's own key"},
	{"bond on a linux bridge port", "interfaces: [{name: br0, type: linux-bridge, bridge: {port: [{name: bond1, link-aggregation: {mode: lacp}}]}}]", "interfaces[0].bridge.port[0].link-aggregation", "unknown field"},
	{"dpdk", "interfaces: [{name: br1, type: ovs-bridge, bridge: {port: [{name: d0}]}}, {name: d0, type: ovs-interface, dpdk: {devargs: '0000:00:01.0'}}]", "interfaces[1].dpdk", "DPDK"},
	{"ovs fail-mode", "interfaces: [{name: br1, type: ovs-bridge, bridge: {options: {fail-mode: open}, port: [{name: eth1}]}}]", "interfaces[0].bridge.options.fail-mode", "not one of secure, standalone"},
	{"ovs option on a linux bridge", "interfaces: [{name: br1, type: linux-bridge, bridge: {options: {mcast-snooping-enable: true}}}]", "interfaces[0].bridge.options.mcast-snooping-enable", "unknown field"},
	{"ovs bridge address", "interfaces: [{name: br1, type: ovs-bridge, ipv4: {enabled: true, dhcp: true}, bridge: {port: [{name: eth1}]}}]", "interfaces[0].ipv4", "no IP configuration of its own"},
	{"ovs bridge mtu", "interfaces: [{name: br1, type: ovs-bridge, mtu: 9000, bridge: {port: [{name: eth1}]}}]", "interfaces[0].mtu", "not a kernel interface"},
	{"ovs-interface without bridge", "interfaces: [{name: ovs0, type: ovs-interface, ipv4: {enabled: true, dhcp: true}}]", "interfaces[0].name", "no OVS bridge's port"},
	{"two ovs bridges of one name", "interfaces: [{name: br1, type: ovs-bridge}, {name: br1, type: ovs-bridge}]", "interfaces[1].name", "also interfaces[0]"},
	{"patch on ethernet", "interfaces: [{name: eth1, type: ethernet, patch: {peer: p1}}]", "interfaces[0].patch", "only for type ovs-interface"},
	{"mapping without bridge", "ovn: {bridge-mappings: [{localnet: net1}]}", "ovn.bridge-mappings[0].bridge", "required"},
	{"mapping localnet comma", "ovn: {bridge-mappings: [{localnet: 'a,b', bridge: br1}]}", "ovn.bridge-mappings[0].localnet", "not a localnet network name"},
	{"mapping state", "ovn: {bridge-mappings: [{localnet: net1, bridge: br1, state: up}]}", "ovn.bridge-mappings[0].state", "not present or absent"},
	{"mapping twice", "ovn: {bridge-mappings: [{localnet: net1, bridge: br1}, {localnet: net1, bridge: br2}]}", "ovn.bridge-mappings[1].localnet", "map each localnet once"},
	{"bad state", "interfaces: [{name: eth1, type: ethernet, state: enabled}]", "interfaces[0].state", "not one of up, down, absent"},
	{"typo in key", "interfaces: [{name: eth1, type: ethernet, ipv4: {adress: []}}]", "interfaces[0].ipv4.adress", "unknown field"},
	{"mtu string", "interfaces: [{name: eth1, type: ethernet, mtu: big}]", "interfaces[0].mtu", "must be an integer"},
	{"mtu out of range", "interfaces: [{name: eth1, type: ethernet, mtu: 70000}]", "interfaces[0].mtu", "70000 is out of range 68..65536"},
	{"copy-mac-from and mac-address", `interfaces: [{name: br1, type: linux-bridge, copy-mac-from: eth1, mac-address: "02:00:00:00:00:01"}]`,
		"interfaces[0].copy-mac-from", "not both"},
	{"route cwnd 0", "routes: {config: [{destination: 198.51.100.0/24, next-hop-interface: eth1, cwnd: 0}]}", "routes.config[0].cwnd", "0 is out of range 1..4294967295"},
	{"route cwnd string", "routes: {config: [{destination: 198.51.100.0/24, next-hop-interface: eth1, cwnd: big}]}", "routes.config[0].cwnd", "must be an integer"},
	{"route source not ip", "routes: {config: [{destination: 198.51.100.0/24, next-hop-interface: eth1, source: 192.0.2}]}", "routes.config[0].source", "not an IP address"},
	{"route source other family", "routes: {config: [{destination: 198.51.100.0/24, next-hop-interface: eth1, source: '2001:db8::1'}]}", "routes.config[0].source", "different IP families"},
	{"macsec cak short", "interfaces: [{name: macsec0, type: macsec, macsec: {base-iface: eth1, mka-cak: 50b7, mka-ckn: f2b4}}]", "interfaces[0].macsec.mka-cak", "not a key of 32 hexadecimal characters"},
	{"macsec ckn odd", "interfaces: [{name: macsec0, type: macsec, macsec: {base-iface: eth1, mka-cak: 50b71a8ef0bd5751ea76de6d6c98c03a, mka-ckn: f2b}}]", "interfaces[0].macsec.mka-ckn", "not a name of 2 to 64 hexadecimal characters"},
	{"macsec cak alone", "interfaces: [{name: macsec0, type: macsec, macsec: {base-iface: eth1, mka-cak: 50b71a8ef0bd5751ea76de6d6c98c03a}}]", "interfaces[0].macsec", "together, or neither"},
	{"macsec no key", "interfaces: [{name: macsec0, type: macsec, macsec: {base-iface: eth1, encrypt: true}}]", "interfaces[0].macsec.mka-cak", "or from 802.1X"},
	{"macsec cak number", "interfaces: [{name: macsec0, type: macsec, macsec: {base-iface: eth1, mka-cak: 5, mka-ckn: f2b4}}]", "interfaces[0].macsec.mka-cak", "must be a string, got a number"},
	{"macsec port", "interfaces: [{name: macsec0, type: macsec, macsec: {base-iface: eth1, mka-cak: 50b71a8ef0bd5751ea76de6d6c98c03a, mka-ckn: f2b4, port: 65535}}]", "interfaces[0].macsec.port", "65535 is out of range 0..65534"},
	{"macsec validation", "interfaces: [{name: macsec0, type: macsec, macsec: {base-iface: eth1, mka-cak: 50b71a8ef0bd5751ea76de6d6c98c03a, mka-ckn: f2b4, validation: lax}}]", "interfaces[0].macsec.validation", "not one of disabled, check, strict"},
	{"macsec offload", "interfaces: [{name: macsec0, type: macsec, macsec: {base-iface: eth1, mka-cak: 50b71a8ef0bd5751ea76de6d6c98c03a, mka-ckn: f2b4, offload: nic}}]", "interfaces[0].macsec.offload", "not one of off, phy, mac"},
	{"macsec encrypt", "interfaces: [{name: macsec0, type: macsec, macsec: {base-iface: eth1, mka-cak: 50b71a8ef0bd5751ea76de6d6c98c03a, mka-ckn: f2b4, encrypt: 'yes'}}]", "interfaces[0].macsec.encrypt", "must be true or false"},
	{"route type", "routes: {config: [{destination: 198.51.100.0/24, route-type: drop, vrf-name: vrf0}]}", "routes.config[0].route-type", "not one of blackhole, unreachable, prohibit"},
	{"blackhole with a next hop", "routes: {config: [{destination: 198.51.100.0/24, route-type: blackhole, vrf-name: vrf0, next-hop-address: 192.0.2.1}]}", "routes.config[0].next-hop-address", "a blackhole route has no next hop"},
	{"blackhole on an interface", "routes: {config: [{destination: 198.51.100.0/24, route-type: prohibit, next-hop-interface: eth1}]}", "routes.config[0].next-hop-interface", "give their VRF with vrf-name"},
	{"blackhole on lo and a VRF", "routes: {config: [{destination: 198.51.100.0/24, route-type: unreachable, next-hop-interface: lo, vrf-name: vrf0}]}", "routes.config[0].next-hop-interface", "or on lo's, not both"},
	{"loopback not lo", "interfaces: [{name: lo1, type: loopback}]", "interfaces[0].name", "the loopback interface is lo"},
	{"loopback down", "interfaces: [{name: lo, type: loopback, state: down}]", "interfaces[0].state", "lo cannot be taken down"},
	{"loopback ipv4 off", "interfaces: [{name: lo, type: loopback, ipv4: {enabled: false}}]", "interfaces[0].ipv4.enabled", "ipv4 cannot be disabled on it"},
	{"loopback dhcp", "interfaces: [{name: lo, type: loopback, ipv6: {enabled: true, autoconf: true}}]", "interfaces[0].ipv6", "static addresses only"},
	{"loopback mac", "interfaces: [{name: lo, type: loopback, mac-address: '00:11:22:33:44:55'}]", "interfaces[0].mac-address", "no link-layer address"},
	{"loopback a port", "interfaces: [{name: lo, type: loopback, controller: br0}]", "interfaces[0].controller", "lo cannot be a port"},
	{"loopback mtu", "interfaces: [{name: lo, type: loopback, mtu: -1}]", "interfaces[0].mtu", "out of range"},
	{"vrf-name not a VRF", "interfaces: [{name: br0, type: linux-bridge}]\nroutes: {config: [{destination: 198.51.100.0/24, route-type: blackhole, vrf-name: br0}]}", "routes.config[0].vrf-name", "is not a VRF"},
	{"vrf-name and another table", "interfaces: [{name: vrf0, type: vrf, vrf: {route-table-id: 100}}]\nroutes: {config: [{destination: 198.51.100.0/24, route-type: blackhole, vrf-name: vrf0, table-id: 200}]}", "routes.config[0].table-id", "VRF vrf0's route table is 100"},
	{"vrf-name on an absent route", "routes: {config: [{destination: 198.51.100.0/24, vrf-name: vrf0, state: absent}]}", "routes.config[0].vrf-name", "by table-id"},
	{"ovs-db on an ethernet", "interfaces: [{name: eth1, type: ethernet, ovs-db: {external_ids: {a: b}}}]", "interfaces[0].ovs-db", "only an Open vSwitch bridge or interface has an OVSDB row (this is of type ethernet)"},
	{"ovs-db NetworkManager's key", "interfaces: [{name: br1, type: ovs-bridge, ovs-db: {external_ids: {NM.connection.uuid: x}}, bridge: {port: [{name: eth1}]}}]", "interfaces[0].ovs-db.external_ids.NM.connection.uuid", "NetworkManager's own key"},
	{"ovs-db column not a mapping", "interfaces: [{name: br1, type: ovs-bridge, ovs-db: {other_config: 3}, bridge: {port: [{name: eth1}]}}]", "interfaces[0].ovs-db.other_config", "must be a mapping"},
	{"ovs-db value a list", "interfaces: [{name: br1, type: ovs-bridge, ovs-db: {other_config: {a: [1]}}, bridge: {port: [{name: eth1}]}}]", "interfaces[0].ovs-db.other_config.a", "must be a string, number or boolean"},
	{"ovs-db unknown column", "interfaces: [{name: br1, type: ovs-bridge, ovs-db: {options: {a: b}}, bridge: {port: [{name: eth1}]}}]", "interfaces[0].ovs-db.options", "unknown field"},
	{"controller itself", "interfaces: [{name: eth1, type: ethernet, controller: eth1}]", "interfaces[0].controller", "cannot be its own controller"},
	{"controller not a name", "interfaces: [{name: eth1, type: ethernet, controller: 3}]", "interfaces[0].controller", "must be a string"},
	{"controller and another's list", "interfaces: [{name: br0, type: linux-bridge, bridge: {port: [{name: eth1}]}}, {name: eth1, type: ethernet, controller: bond0}]",
		"interfaces[1].controller", `"br0" lists it as its port; an interface has one controller`},
	{"no controller, but listed", `interfaces: [{name: bond0, type: bond, link-aggregation: {mode: active-backup, port: [eth1]}}, {name: eth1, type: ethernet, controller: ""}]`,
		"interfaces[1].controller", "makes it a port of none"},
	{"controller listing its ports without it", "interfaces: [{name: bond0, type: bond, link-aggregation: {mode: active-backup, port: [eth2]}}, {name: eth1, type: ethernet, controller: bond0}]",
		"interfaces[1].controller", "lists its ports without it"},
	{"controller an ovs bridge", "interfaces: [{name: br1, type: ovs-bridge, bridge: {port: [{name: eth2}]}}, {name: eth1, type: ethernet, controller: br1}]",
		"interfaces[1].controller", "is an OVS bridge"},
	{"controller removed", "interfaces: [{name: bond0, state: absent}, {name: eth1, type: ethernet, controller: bond0}]",
		"interfaces[1].controller", "is removed by interfaces[0]"},
	{"copy-mac-from itself", "interfaces: [{name: br1, type: linux-bridge, copy-mac-from: br1}]", "interfaces[0].copy-mac-from", "is this interface"},
	{"negative route metric", "interfaces: [{name: eth1, type: ethernet, ipv4: {enabled: true, dhcp: true, auto-route-metric: -1}}]",
		"interfaces[0].ipv4.auto-route-metric", "out of range 0..4294967295"},
	{"mac address", "interfaces: [{name: eth1, type: ethernet, mac-address: 'zz:00'}]", "interfaces[0].mac-address", "not an Ethernet MAC"},
	{"ipv4 address not ip", "interfaces: [{name: eth1, type: ethernet, ipv4: {enabled: true, address: [{ip: 300.1.1.1, prefix-length: 24}]}}]", "interfaces[0].ipv4.address[0].ip", "not an IP address"},
	{"ipv6 address under ipv4", "interfaces: [{name: eth1, type: ethernet, ipv4: {enabled: true, address: [{ip: '2001:db8::1', prefix-length: 24}]}}]", "interfaces[0].ipv4.address[0].ip", "not an IPv4 address"},
	{"prefix too long", "interfaces: [{name: eth1, type: ethernet, ipv4: {enabled: true, address: [{ip: 192.0.2.1, prefix-length: 33}]}}]", "interfaces[0].ipv4.address[0].prefix-length", "33 is out of range 0..32"},
	{"missing prefix", "interfaces: [{name: eth1, type: ethernet, ipv6: {enabled: true, address: [{ip: '2001:db8::1'}]}}]", "interfaces[0].ipv6.address[0].prefix-length", "required"},
	{"dhcp while disabled", "interfaces: [{name: eth1, type: ethernet, ipv4: {enabled: false, dhcp: true}}]", "interfaces[0].ipv4.dhcp", "true while enabled is false"},
	{"autoconf under ipv4", "interfaces: [{name: eth1, type: ethernet, ipv4: {enabled: true, autoconf: true}}]", "interfaces[0].ipv4.autoconf", "not supported"},
	{"enabled not bool", "interfaces: [{name: eth1, type: ethernet, ipv4: {enabled: 'yes please'}}]", "interfaces[0].ipv4.enabled", "must be true or false"},
	{"vlan id out of range", "interfaces: [{name: v1, type: vlan, vlan: {id: 5000, base-iface: eth1}}]", "interfaces[0].vlan.id", "5000 is out of range 1..4094"},
	{"vlan without base", "interfaces: [{name: v1, type: vlan, vlan: {id: 10}}]", "interfaces[0].vlan.base-iface", "required"},
	{"vlan section on ethernet", "interfaces: [{name: eth1, type: ethernet, vlan: {id: 10, base-iface: eth0}}]", "interfaces[0].vlan", "only for type vlan"},
	{"bond mode", "interfaces: [{name: b0, type: bond, link-aggregation: {mode: fastest, port: [eth1]}}]", "interfaces[0].link-aggregation.mode", "not a bond mode"},
	{"bond without mode", "interfaces: [{name: b0, type: bond, link-aggregation: {port: [eth1]}}]", "interfaces[0].link-aggregation.mode", "required"},
	{"bond port twice", "interfaces: [{name: b0, type: bond, link-aggregation: {mode: active-backup, port: [eth1, eth1]}}]", "interfaces[0].link-aggregation.port[1]", "listed twice"},
	{"port of two controllers", "interfaces: [{name: b0, type: bond, link-aggregation: {mode: active-backup, port: [eth1]}}, {name: br0, type: linux-bridge, bridge: {port: [{name: eth1}]}}]", "interfaces[1].bridge.port", "already a port of \"b0\""},
	{"bridge port vlan tag", "interfaces: [{name: br0, type: linux-bridge, bridge: {port: [{name: eth1, vlan: {mode: access, tag: 4095}}]}}]", "interfaces[0].bridge.port[0].vlan.tag", "4095 is out of range 1..4094"},
	{"trunk without tags", "interfaces: [{name: br0, type: linux-bridge, bridge: {port: [{name: eth1, vlan: {mode: trunk}}]}}]", "interfaces[0].bridge.port[0].vlan.trunk-tags", "required in trunk mode"},
	{"trunk range reversed", "interfaces: [{name: br0, type: linux-bridge, bridge: {port: [{name: eth1, vlan: {mode: trunk, trunk-tags: [{id-range: {min: 20, max: 10}}]}}]}}]", "interfaces[0].bridge.port[0].vlan.trunk-tags[0].id-range", "min 20 is above max 10"},
	{"port and ports", "interfaces: [{name: br0, type: linux-bridge, bridge: {port: [], ports: []}}]", "interfaces[0].bridge.ports", "not both"},
	{"vrf reserved table", "interfaces: [{name: vrf0, type: vrf, vrf: {port: [eth1], route-table-id: 254}}]", "interfaces[0].vrf.route-table-id", "reserves"},
	{"vrf without table", "interfaces: [{name: vrf0, type: vrf, vrf: {port: [eth1]}}]", "interfaces[0].vrf.route-table-id", "required"},
	{"macvlan mode", "interfaces: [{name: mv0, type: mac-vlan, mac-vlan: {base-iface: eth1, mode: everything}}]", "interfaces[0].mac-vlan.mode", "not one of"},
	{"vxlan id", "interfaces: [{name: vx0, type: vxlan, vxlan: {id: 16777216, remote: 192.0.2.1}}]", "interfaces[0].vxlan.id", "out of range 0..16777215"},
	{"vxlan port", "interfaces: [{name: vx0, type: vxlan, vxlan: {id: 1, remote: 192.0.2.1, destination-port: 70000}}]", "interfaces[0].vxlan.destination-port", "out of range 1..65535"},
	{"vxlan remote", "interfaces: [{name: vx0, type: vxlan, vxlan: {id: 1, remote: somewhere}}]", "interfaces[0].vxlan.remote", "not an IP address"},
	{"veth self", "interfaces: [{name: v0, type: veth, veth: {peer: v0}}]", "interfaces[0].veth.peer", "cannot peer with itself"},
	{"vlan on removed base", "interfaces: [{name: bond0, state: absent}, {name: bond0.10, type: vlan, vlan: {id: 10, base-iface: bond0}}]", "interfaces[1].vlan.base-iface", "removed by interfaces[0]"},
	{"unsupported iface key", "interfaces: [{name: eth1, type: ethernet, dispatch: {post-activation: x}}]", "interfaces[0].dispatch", "not supported by nmoverlay"},
	{"ethtool ring", "interfaces: [{name: eth1, type: ethernet, ethtool: {ring: {rx: -1}}}]", "interfaces[0].ethtool.ring.rx", "out of range"},
	{"ethtool ring key", "interfaces: [{name: eth1, type: ethernet, ethtool: {ring: {rx-pending: 256}}}]", "interfaces[0].ethtool.ring.rx-pending", "unknown field"},
	{"ethtool coalesce switch", "interfaces: [{name: eth1, type: ethernet, ethtool: {coalesce: {adaptive-tx: 1}}}]", "interfaces[0].ethtool.coalesce.adaptive-tx", "true or false"},
	{"ethtool pause", "interfaces: [{name: eth1, type: ethernet, ethtool: {pause: {rx: 'off'}}}]", "interfaces[0].ethtool.pause.rx", "true or false"},
	{"ethtool fec mode", "interfaces: [{name: eth1, type: ethernet, ethtool: {fec: {mode: RS}}}]", "interfaces[0].ethtool.fec.mode", "one of off, rs, baser, llrs"},
	{"ethtool fec choosing nothing", "interfaces: [{name: eth1, type: ethernet, ethtool: {fec: {auto: false}}}]", "interfaces[0].ethtool.fec", "needs a mode unless auto is true"},
	{"ethtool unknown feature", "interfaces: [{name: eth1, type: ethernet, ethtool: {feature: {rx-checksums: false}}}]", "interfaces[0].ethtool.feature.rx-checksums", "unknown field"},
	{"ethtool feature not a boolean", "interfaces: [{name: eth1, type: ethernet, ethtool: {feature: {rx-gro: maybe}}}]", "interfaces[0].ethtool.feature.rx-gro", "true or false"},
	{"route destination", "routes: {config: [{destination: 10.0.0.0/33, next-hop-interface: eth1}]}", "routes.config[0].destination", "not a prefix"},
	{"route host bits", "routes: {config: [{destination: 10.0.0.1/8, next-hop-interface: eth1}]}", "routes.config[0].destination", "host bits set"},
	{"route family mismatch", "routes: {config: [{destination: 10.0.0.0/8, next-hop-address: '2001:db8::1', next-hop-interface: eth1}]}", "routes.config[0].next-hop-address", "different IP families"},
	{"route metric negative", "routes: {config: [{destination: 10.0.0.0/8, next-hop-interface: eth1, metric: -1}]}", "routes.config[0].metric", "out of range"},
	{"route without interface", "routes: {config: [{destination: 10.0.0.0/8, next-hop-address: 192.0.2.1}]}", "routes.config[0].next-hop-interface", "required"},
	{"route state", "routes: {config: [{destination: 10.0.0.0/8, next-hop-interface: eth1, state: present}]}", "routes.config[0].state", "only route state is absent"},
	{"bridge forward mask of STP frames", "interfaces: [{name: br0, type: linux-bridge, bridge: {options: {group-forward-mask: 1}}}]", "interfaces[0].bridge.options.group-forward-mask", "bit 0, 1 or 2 set"},
	{"bridge forward mask too wide", "interfaces: [{name: br0, type: linux-bridge, bridge: {options: {group-forward-mask: 65536}}}]", "interfaces[0].bridge.options.group-forward-mask", "65536 is out of range 0..65535"},
	{"bridge ageing negative", "interfaces: [{name: br0, type: linux-bridge, bridge: {options: {mac-ageing-time: -1}}}]", "interfaces[0].bridge.options.mac-ageing-time", "out of range 0..1000000"},
	{"bridge snooping not a boolean", "interfaces: [{name: br0, type: linux-bridge, bridge: {options: {multicast-snooping: 'yes'}}}]", "interfaces[0].bridge.options.multicast-snooping", "must be true or false"},
	{"stp forward delay", "interfaces: [{name: br0, type: linux-bridge, bridge: {options: {stp: {forward-delay: 40}}}}]", "interfaces[0].bridge.options.stp.forward-delay", "40 is out of range 2..30"},
	{"stp hello time", "interfaces: [{name: br0, type: linux-bridge, bridge: {options: {stp: {hello-time: 'two'}}}}]", "interfaces[0].bridge.options.stp.hello-time", "must be an integer"},
	{"stp max age", "interfaces: [{name: br0, type: linux-bridge, bridge: {options: {stp: {max-age: 5}}}}]", "interfaces[0].bridge.options.stp.max-age", "5 is out of range 6..40"},
	{"stp timers on an ovs bridge", "interfaces: [{name: br1, type: ovs-bridge, bridge: {options: {stp: {enabled: true, hello-time: 2}}, port: [{name: eth1}]}}]", "interfaces[0].bridge.options.stp.hello-time", "not supported by nmoverlay"},
	{"port stp priority", "interfaces: [{name: br0, type: linux-bridge, bridge: {port: [{name: eth1, stp-priority: 64}]}}]", "interfaces[0].bridge.port[0].stp-priority", "64 is out of range 0..63"},
	{"port path cost", "interfaces: [{name: br0, type: linux-bridge, bridge: {port: [{name: eth1, stp-path-cost: 0}]}}]", "interfaces[0].bridge.port[0].stp-path-cost", "0 is out of range 1..65535"},
	{"port hairpin not a boolean", "interfaces: [{name: br0, type: linux-bridge, bridge: {port: [{name: eth1, stp-hairpin-mode: 1}]}}]", "interfaces[0].bridge.port[0].stp-hairpin-mode", "must be true or false"},
	{"port stp on an ovs bridge", "interfaces: [{name: br1, type: ovs-bridge, bridge: {port: [{name: eth1, stp-priority: 16}]}}]", "interfaces[0].bridge.port[0].stp-priority", "unknown field"},
	{"vxlan learning not a boolean", "interfaces: [{name: vx0, type: vxlan, vxlan: {id: 1, remote: 192.0.2.1, learning: 'no'}}]", "interfaces[0].vxlan.learning", "must be true or false"},
	{"dns option", "dns-resolver: {config: {server: [192.0.2.53], options: [rotate, turbo]}}", "dns-resolver.config.options[1]", `"turbo" is not a resolver option`},
	{"dns option number", "dns-resolver: {config: {server: [192.0.2.53], options: ['ndots:many']}}", "dns-resolver.config.options[0]", `"ndots:many" is not a resolver option`},
	{"dns options not a list", "dns-resolver: {config: {options: rotate}}", "dns-resolver.config.options", "must be a list"},
	{"wait-ip", "interfaces: [{name: eth1, type: ethernet, wait-ip: ipv5}]", "interfaces[0].wait-ip", `"ipv5" is not one of any, ipv4, ipv6, ipv4+ipv6`},
	{"wait-ip on a disabled family", "interfaces: [{name: eth1, type: ethernet, wait-ip: ipv4+ipv6, ipv6: {enabled: false}}]", "interfaces[0].wait-ip", "waits for an ipv6 address while ipv6 is disabled"},
	{"macvtap mode", "interfaces: [{name: mvt0, type: mac-vtap, mac-vtap: {base-iface: eth1, mode: everything}}]", "interfaces[0].mac-vtap.mode", "not one of"},
	{"macvtap section on a macvlan", "interfaces: [{name: mv0, type: mac-vlan, mac-vtap: {base-iface: eth1, mode: vepa}}]", "interfaces[0].mac-vtap", "only for type mac-vtap"},
	{"route rules running", "route-rules: {running: []}", "route-rules.running", "current state"},
	{"vlan 802.1ad", "interfaces: [{name: v1, type: vlan, vlan: {id: 10, base-iface: eth1, protocol: 802.1ad}}]", "interfaces[0].vlan.protocol", "802.1ad is not applied yet"},
	{"vlan protocol", "interfaces: [{name: v1, type: vlan, vlan: {id: 10, base-iface: eth1, protocol: qinq}}]", "interfaces[0].vlan.protocol", `"qinq" is not one of 802.1q, 802.1ad`},
	{"ovs fail-mode mistyped", "interfaces: [{name: br1, type: ovs-bridge, bridge: {options: {fail-mode: Secure}, port: [{name: eth1}]}}]", "interfaces[0].bridge.options.fail-mode", "not one of secure, standalone"},
	{"dns server", "dns-resolver: {config: {server: [dns.example.com]}}", "dns-resolver.config.server[0]", "not an IP address"},
	{"dns search", "dns-resolver: {config: {search: ['a b']}}", "dns-resolver.config.search[0]", "not a domain name"},
}

// The OpenShift documentation's OVS policies, as written there
// (modules/configuring-localnet-switched-topology.adoc,
// modules/creating-manifest-file-customized-br-ex-bridge.adoc).
const (
	localnetDoc = `
interfaces:
- name: ovs-br1
  description: |-
    A dedicated OVS bridge with eth1 as a port
    allowing all VLANs and untagged traffic
  type: ovs-bridge
  state: up
  bridge:
    allow-extra-patch-ports: true
    options:
      stp: false
      mcast-snooping-enable: true
    port:
    - name: eth1
ovn:
  bridge-mappings:
  - localnet: localnet2
    bridge: ovs-br1
    state: present
`
	brExDoc = `
interfaces:
- name: enp2s0
  type: ethernet
  state: up
  ipv4:
    enabled: false
  ipv6:
    enabled: false
- name: br-ex
  type: ovs-bridge
  state: up
  ipv4:
    enabled: false
    dhcp: false
  ipv6:
    enabled: false
    dhcp: false
  bridge:
    options:
      mcast-snooping-enable: true
    port:
    - name: enp2s0
    - name: br-ex
- name: br-ex
  type: ovs-interface
  state: up
  copy-mac-from: enp2s0
  ipv4:
    enabled: true
    dhcp: true
    auto-route-metric: 48
  ipv6:
    enabled: true
    dhcp: true
    auto-route-metric: 48
`
)

// kubernetes-nmstate's published OVS examples (docs/examples/ovs-bridge.yaml and
// ovs-bridge-iface.yaml), their fields as written there.
var publishedOVS = []string{`
interfaces:
- name: br1
  description: an OVS bridge with a NIC as its port
  type: ovs-bridge
  state: up
  bridge:
    options:
      stp: false
    port:
    - name: eth1
`, `
interfaces:
- name: ovs0
  type: ovs-interface
  state: up
  ipv4:
    dhcp: true
    enabled: true
- name: br1
  description: an OVS bridge with a NIC and an internal interface as its ports
  type: ovs-bridge
  state: up
  bridge:
    options:
      stp: true
    port:
    - name: eth1
    - name: ovs0
`}

func TestParseOVSDocs(t *testing.T) {
	for i, doc := range publishedOVS {
		s, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("published example %d: %v", i, err)
		}
		br := s.Interfaces[slices.IndexFunc(s.Interfaces, func(it Interface) bool { return it.Type == OVSBridge })]
		if SectionOf[*BridgeConfig](br).Options.STP == nil || *SectionOf[*BridgeConfig](br).Options.STP.Enabled != (i == 1) {
			t.Errorf("published example %d: stp %+v", i, SectionOf[*BridgeConfig](br).Options.STP)
		}
	}

	s, err := Parse([]byte(localnetDoc))
	if err != nil {
		t.Fatal(err)
	}
	br := s.Interfaces[0]
	if br.Type != OVSBridge || br.Key() != "ovs-br1,type=ovs-bridge" || !*SectionOf[*BridgeConfig](br).AllowExtraPatchPorts ||
		*SectionOf[*BridgeConfig](br).Options.STP.Enabled || !*SectionOf[*BridgeConfig](br).Options.MCastSnoopingEnable || SectionOf[*BridgeConfig](br).Port[0].Name != "eth1" {
		t.Errorf("localnet bridge: %+v %+v", br, br.Section)
	}
	if s.OVN == nil || len(s.OVN.BridgeMappings) != 1 || s.OVN.BridgeMappings[0] != (BridgeMapping{"localnet2", "ovs-br1", "present"}) {
		t.Errorf("mappings: %+v", s.OVN)
	}

	s, err = Parse([]byte(brExDoc))
	if err != nil {
		t.Fatal(err)
	}
	ordered, keys := orderedKeys(t, s)
	// The bridge first, then its ports: the uplink and the internal interface of its name.
	if keys != "br-ex,type=ovs-bridge br-ex enp2s0" {
		t.Errorf("order: %v", keys)
	}
	if iface := ordered[1]; iface.Type != OVSInterface || *iface.CopyMACFrom != "enp2s0" || *iface.IPv4.AutoRouteMetric != 48 {
		t.Errorf("br-ex interface: %+v", iface)
	}
}

// A port that names its controller comes after it, as one its controller lists does.
func TestOrderPortNamingController(t *testing.T) {
	s, err := Parse([]byte(`interfaces:
- {name: eth1, type: ethernet, controller: bond0}
- {name: bond0, type: bond, link-aggregation: {mode: active-backup}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, keys := orderedKeys(t, s); keys != "bond0 eth1" {
		t.Errorf("order: %v", keys)
	}
}

// orderedKeys orders s's interfaces, and says their keys in that order.
func orderedKeys(t *testing.T, s State) ([]Interface, string) {
	t.Helper()
	ordered, err := Order(s)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, len(ordered))
	for i, it := range ordered {
		keys[i] = it.Key()
	}
	return ordered, strings.Join(keys, " ")
}

// An OVS bond as OpenShift Virtualization documents it (virt-creating-ovs-bridge-mapping-
// localnet): the bond's members are the bridge's interfaces, ordered after it, and the
// bond itself is no interface.
func TestParseOVSBond(t *testing.T) {
	s, err := Parse([]byte(`interfaces:
- {name: eno1, type: ethernet, state: up, mtu: 9000}
- {name: eno2, type: ethernet, state: up, mtu: 9000}
- name: br1
  type: ovs-bridge
  state: up
  bridge:
    options: {stp: false}
    port:
    - name: bond1
      link-aggregation:
        mode: balance-slb
        bond-updelay: 100
        port: [{name: eno1}, {name: eno2}]
      vlan: {mode: access, tag: 10}
    - name: br1
- {name: br1, type: ovs-interface, state: up, ipv4: {enabled: false}}
`))
	if err != nil {
		t.Fatal(err)
	}
	bond := SectionOf[*BridgeConfig](s.Interfaces[2]).Port[0]
	if bond.LinkAggregation == nil || bond.LinkAggregation.Mode != "balance-slb" || *bond.LinkAggregation.UpDelay != 100 ||
		!slices.Equal(bond.Interfaces(), []string{"eno1", "eno2"}) || *bond.VLAN.Tag != 10 {
		t.Errorf("bond: %+v %+v", bond, bond.LinkAggregation)
	}
	if _, keys := orderedKeys(t, s); keys != "br1,type=ovs-bridge br1 eno1 eno2" {
		t.Errorf("order: %v", keys)
	}
	// Renamed by identifier: mac-address, a member keeps its place in its bond.
	renamed := s.Renamed("eno2", "enp7s0")
	if got := SectionOf[*BridgeConfig](renamed.Interfaces[2]).Port[0].Interfaces(); !slices.Equal(got, []string{"eno1", "enp7s0"}) {
		t.Errorf("renamed members: %v", got)
	}
	if got := SectionOf[*BridgeConfig](s.Interfaces[2]).Port[0].Interfaces(); !slices.Equal(got, []string{"eno1", "eno2"}) {
		t.Errorf("renaming changed the original: %v", got)
	}
}

// The route rules of OpenShift's documentation (modules/virt-routes-route-rules.adoc: rules
// to main for the cluster's service networks) and of nmstate's own tests (suppress-prefix-
// length, a hex fwmark), with their defaults filled in as NetworkManager needs them.
func TestParseRouteRules(t *testing.T) {
	s := mustParse(t, `
interfaces:
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: true, dhcp: false, address: [{ip: 192.168.150.3, prefix-length: 24}]}}
route-rules:
  config:
  - {ip-to: 172.30.0.0/16, priority: 1000, route-table: 254}
  - {ip-to: 'fd03::/64', priority: 1000, route-table: 254}
  - {ip-from: 192.0.2.1, suppress-prefix-length: 0, route-table: 200, fwmark: '0x30', fwmask: 0x10}
  - {family: ipv6, iif: eth1, action: blackhole}
  - {route-table: 300, state: absent}
routes:
  config:
  - {destination: 198.51.100.0/24, metric: 150, next-hop-address: 192.168.150.1, next-hop-interface: eth1, table-id: 254}
`)
	rules := s.RouteRules.Config
	if len(rules) != 5 || rules[1].IsIPv6() != true || rules[0].IsIPv6() {
		t.Fatalf("rules: %+v", rules)
	}
	for i, want := range []string{
		"ipv4 priority 1000 to 172.30.0.0/16 table 254",
		"ipv6 priority 1000 to fd03::/64 table 254",
		"ipv4 priority 30000 from 192.0.2.1/32 fwmark 0x30/0x10 table 200 suppress_prefixlength 0",
		"ipv6 priority 30000 iif eth1 blackhole",
		"table 300 (absent)",
	} {
		if got := rules[i].Normalized().String(); got != want {
			t.Errorf("rule %d: %q, want %q", i, got, want)
		}
	}
	if full := (RouteRule{IPTo: "10.0.0.0/8", FWMark: ptr(1), FWMask: ptr(0xffffffff)}); !full.Same(RouteRule{IPTo: "10.0.0.0/8", FWMark: ptr(1)}) {
		t.Errorf("a mask of the whole mark is the kernel's default, and reads back as none")
	}
	if !rules[4].Selects(RouteRule{IPTo: "10.0.0.0/8", RouteTable: ptr(300)}) || rules[4].Selects(rules[2]) {
		t.Errorf("an absent rule selects by the fields it states")
	}
}

func TestParseInvalid(t *testing.T) {
	if len(invalidDocs) < 30 {
		t.Fatalf("only %d invalid documents", len(invalidDocs))
	}
	for _, tc := range invalidDocs {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.doc))
			var errs field.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("want field errors, got %v", err)
			}
			if len(s.Interfaces) != 0 || s.Routes != nil || s.DNSResolver != nil || s.OVN != nil {
				t.Errorf("a rejected document must yield nothing to apply, got %+v", s)
			}
			for _, e := range errs {
				if e.Path == tc.path && strings.Contains(e.Reason, tc.reason) {
					return
				}
			}
			t.Errorf("want %s: ...%s..., got %v", tc.path, tc.reason, err)
		})
	}
}

// TestParseNeeds: a field that needs a capability is listed with its path once given, and
// only then.
func TestParseNeeds(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want []Need
	}{
		{`interfaces: [{name: bond0, type: bond, link-aggregation: {mode: active-backup, port: [eth1, eth2],
  ports-config: [{name: eth1, queue-id: 1}, {name: eth2, priority: 2}]}}]`,
			[]Need{{Path: "interfaces[0].link-aggregation.ports-config[1].priority", Capability: CapabilityBondPortPriority}}},
		{`interfaces: [{name: bond0, type: bond, link-aggregation: {mode: active-backup, port: [eth1], ports-config: [{name: eth1, queue-id: 1}]}}]`, nil},
		{`interfaces: [{name: eth1, type: ethernet}, {name: hsr0, type: hsr, hsr: {port1: eth1, port2: eth2, multicast-spec: 0}},
  {name: ipvlan0, type: ipvlan, state: down, ipvlan: {base-iface: eth1}}]`,
			[]Need{{Path: "interfaces[1].type", Capability: CapabilityHSR}, {Path: "interfaces[2].type", Capability: CapabilityIPVLAN}}},
		{`interfaces: [{name: hsr0, type: hsr, state: absent}]`, nil},
		{`interfaces: [{name: eth1, type: ethernet, ipv4: {enabled: true, forwarding: false}}]`,
			[]Need{{Path: "interfaces[0].ipv4.forwarding", Capability: CapabilityIPv4Forwarding}}},
		{`interfaces: [{name: eth1, type: ethernet, ethtool: {fec: {auto: false, mode: rs}}}]`,
			[]Need{{Path: "interfaces[0].ethtool.fec", Capability: CapabilityEthtoolFEC}}},
		// A typed route in a VRF goes on the VRF's profile, with no address; elsewhere on lo's.
		{`routes: {config: [{destination: 198.51.100.0/24, route-type: blackhole}, {destination: 198.51.200.0/24, route-type: blackhole, vrf-name: vrf0}]}`,
			[]Need{{Path: "routes.config[1].route-type", Capability: CapabilityRouteWithoutAddress}}},
	} {
		_, needs, err := ParseNeeds([]byte(tc.doc))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(needs, tc.want) {
			t.Errorf("%s:\n got %v\nwant %v", tc.doc, needs, tc.want)
		}
	}
}
