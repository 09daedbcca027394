package state

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/nmoverlay/nmoverlay/api/field"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// sectionDocs put a key into every section the decoder reads, so that each section's
// unknown-key message (with its list of known keys) and each refused key's reason is
// pinned. %s is replaced by the key and its value.
var sectionDocs = []string{
	"{%s}",
	"interfaces: [{name: eth1, type: ethernet, %s}]",
	"interfaces: [{name: eth1, type: ethernet, ipv4: {%s}}]",
	"interfaces: [{name: eth1, type: ethernet, ipv6: {%s}}]",
	"interfaces: [{name: eth1, type: ethernet, ipv4: {address: [{ip: 192.0.2.1, prefix-length: 24, %s}]}}]",
	"interfaces: [{name: eth1, type: ethernet, lldp: {%s}}]",
	"interfaces: [{name: eth1, type: ethernet, ethernet: {%s}}]",
	"interfaces: [{name: eth1, type: ethernet, ethernet: {sr-iov: {%s}}}]",
	"interfaces: [{name: eth1, type: ethernet, ethernet: {sr-iov: {vfs: [{id: 0, %s}]}}}]",
	"interfaces: [{name: eth1, type: ethernet, ethtool: {%s}}]",
	"interfaces: [{name: eth1, type: ethernet, ethtool: {pause: {%s}}}]",
	"interfaces: [{name: eth1, type: ethernet, ethtool: {ring: {%s}}}]",
	"interfaces: [{name: eth1, type: ethernet, ethtool: {coalesce: {%s}}}]",
	"interfaces: [{name: b0, type: bond, link-aggregation: {mode: active-backup, %s}}]",
	"interfaces: [{name: b0, type: bond, link-aggregation: {mode: active-backup, port: [eth1], ports-config: [{name: eth1, %s}]}}]",
	"interfaces: [{name: v0, type: vlan, vlan: {id: 1, base-iface: eth1, %s}}]",
	"interfaces: [{name: br0, type: linux-bridge, bridge: {%s}}]",
	"interfaces: [{name: br0, type: linux-bridge, bridge: {options: {%s}}}]",
	"interfaces: [{name: br0, type: linux-bridge, bridge: {options: {stp: {%s}}}}]",
	"interfaces: [{name: br0, type: linux-bridge, bridge: {port: [{name: eth1, %s}]}}]",
	"interfaces: [{name: br0, type: linux-bridge, bridge: {port: [{name: eth1, vlan: {mode: trunk, trunk-tags: [{id: 1}], %s}}]}}]",
	"interfaces: [{name: br0, type: linux-bridge, bridge: {port: [{name: eth1, vlan: {mode: trunk, trunk-tags: [{%s}]}}]}}]",
	"interfaces: [{name: br0, type: linux-bridge, bridge: {port: [{name: eth1, vlan: {mode: trunk, trunk-tags: [{id-range: {min: 1, max: 2, %s}}]}}]}}]",
	"interfaces: [{name: br0, type: ovs-bridge, bridge: {%s}}]",
	"interfaces: [{name: br0, type: ovs-bridge, bridge: {options: {%s}}}]",
	"interfaces: [{name: br0, type: ovs-bridge, bridge: {options: {stp: {%s}}}}]",
	"interfaces: [{name: br0, type: ovs-bridge, bridge: {port: [{name: eth1, %s}]}}]",
	"interfaces: [{name: br0, type: ovs-bridge, bridge: {port: [{name: bond1, link-aggregation: {mode: lacp, port: [{name: eth1}, {name: eth2}], %s}}]}}]",
	"interfaces: [{name: br0, type: ovs-bridge, bridge: {port: [{name: bond1, link-aggregation: {mode: lacp, port: [{name: eth1, %s}, {name: eth2}]}}]}}]",
	"interfaces: [{name: p0, type: ovs-interface, patch: {peer: p1, %s}}]",
	"interfaces: [{name: vrf0, type: vrf, vrf: {route-table-id: 100, %s}}]",
	"interfaces: [{name: mv0, type: mac-vlan, mac-vlan: {base-iface: eth1, mode: vepa, %s}}]",
	"interfaces: [{name: vx0, type: vxlan, vxlan: {id: 1, remote: 192.0.2.1, %s}}]",
	"interfaces: [{name: ve0, type: veth, veth: {peer: ve1, %s}}]",
	"interfaces: [{name: ib0, type: infiniband, infiniband: {mode: datagram, %s}}]",
	"interfaces: [{name: hsr0, type: hsr, hsr: {port1: eth1, port2: eth2, multicast-spec: 40, %s}}]",
	"interfaces: [{name: ipvlan0, type: ipvlan, ipvlan: {base-iface: eth1, %s}}]",
	"interfaces: [{name: macsec0, type: macsec, macsec: {base-iface: eth1, mka-cak: 50b71a8ef0bd5751ea76de6d6c98c03a, mka-ckn: f2b4, %s}}]",
	"interfaces: [{name: conn0, type: ipsec, libreswan: {right: 192.0.2.252, %s}}]",
	"routes: {%s}",
	"routes: {config: [{destination: 10.0.0.0/8, next-hop-interface: eth1, %s}]}",
	"route-rules: {%s}",
	"route-rules: {config: [{ip-to: 10.0.0.0/8, %s}]}",
	"dns-resolver: {%s}",
	"dns-resolver: {config: {%s}}",
	"ovn: {%s}",
	"ovn: {bridge-mappings: [{localnet: n1, bridge: br1, %s}]}",
	"hostname: {%s}",
}

// probeKeys are put into each of sectionDocs: a key no section has, keys some sections
// refuse, and nmstate keys of the wrong type.
var probeKeys = []string{
	"zz-unknown: 1",
	"ovs-db: {}", "dispatch: {}", "running: []", "config: x", "options: [a]", "forwarding: true", "autoconf: true",
	"dhcp-client-id: ll", "valid-life-time: 1s", "speed: 1000", "fec: {}", "ports-config: []", "protocol: 802.1q",
	"group-forward-mask: 0", "forward-delay: 15", "stp-priority: 32", "learning: false", "route-type: blackhole",
	"weight: 1", "cwnd: 1", "controller: br0", "alt-names: []", "min-mtu: 68", "pci-address: x", "accept-all-mac-addresses: true",
	"enabled: 3", "mtu: x", "id: x", "port: x", "ports: x", "mode: 7", "stp: 3", "stp: true", "peer: 3", "pkey: true", "pkey: '0xffff'",
	"tag: 0", "min: 0", "name: 3", "rx: x", "feature: {rx-gro: 1}", "neighbors: [x]", "bridge-mappings: x", "state: up", "state: absent",
	"fwmark: -1", "fwmask: '0x10'", "priority: -1", "suppress_prefixlength: 200", "server: x", "search: [3]", "metric: x",
	"total-vfs: 70000", "vlan-proto: '802.1AD'", "datapath: dpdk", "fail-mode: secure", "rstp: 1", "bond-updelay: -1",
	"identifier: name", "identifier: x", "type: team", "type: ipsec", "type: nope", "description: 3", "profile-name: 3",
	"copy-mac-from: 3", "mac-address: 3", "dhcp: 1", "address: x", "auto-route-metric: x", "trunk-tags: x", "id-range: x",
	"allow-extra-patch-ports: 1", "link-aggregation: x", "vlan: x", "vfs: x", "interfaces: x", "mcast-snooping-enable: x",
	"adaptive-rx: 1", "rx-frames: true", "rx-max: 9", "queue-id: 65536", "queue-id: x", "priority: 2147483648", "priority: x",
	"port1: 3", "multicast-spec: 256", "multicast-spec: x", "protocol: hsr3", "supervision-address: x", "mode: l4", "private: 1", "vepa: x", "route-table-id: x", "remote: 3", "destination-port: x", "base-iface: 3",
	"promiscuous: 3", "localnet: 3", "bridge: 3", "destination: 3", "table-id: x", "ip-to: 3", "action: 3", "family: 3",
	"iif: 3", "route-table: x", "ethernet: x", "ethtool: x", "lldp: x", "ipv4: x", "sr-iov: x", "pause: x", "ring: x",
	"coalesce: x", "infiniband: x", "patch: x", "veth: x", "vxlan: x", "mac-vlan: x", "vrf: x",
	"libreswan: x", "right: 3", "psk: 3", "psk: secret-value", "dpddelay: x", "dpdtimeout: '0x1e'", "ipsec-interface: 'yes'",
	"ipsec-interface: '4294967296'", "leftmodecfgclient: 1", "hostaddrfamily: ipv5", "require-id-on-certificate: x",
}

// TestParseMessages pins every message the decoder and the validation give, for the
// invalid documents and for every section with each of probeKeys: a change of a path
// or a reason shows in the golden file's diff (go test -run TestParseMessages -update).
func TestParseMessages(t *testing.T) {
	var out strings.Builder
	say := func(name, doc string) {
		_, err := Parse([]byte(doc))
		var errs field.Errors
		if err != nil && !errors.As(err, &errs) {
			t.Fatalf("%s: not field errors: %v", name, err)
		}
		lines := make([]string, len(errs))
		for i, e := range errs {
			lines[i] = "  " + e.Error()
		}
		slices.Sort(lines)
		fmt.Fprintf(&out, "%s\n%s\n", doc, strings.Join(lines, "\n"))
	}
	for _, tc := range invalidDocs {
		say(tc.name, tc.doc)
	}
	for _, tmpl := range sectionDocs {
		for _, kv := range probeKeys {
			say(tmpl, fmt.Sprintf(tmpl, kv))
		}
	}
	const golden = "testdata/messages.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		shown := 0
		for i := 0; i < max(len(gl), len(wl)) && shown < 20; i++ {
			g, w := at(gl, i), at(wl, i)
			if g != w {
				t.Errorf("line %d:\n got %s\nwant %s", i+1, g, w)
				shown++
			}
		}
	}
}

func at(l []string, i int) string {
	if i < len(l) {
		return l[i]
	}
	return "<end>"
}
