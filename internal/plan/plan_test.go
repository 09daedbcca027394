package plan

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/internal/node"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// current is a node's state as its NodeNetworkState shows it: eth0 carries the default
// route and the InternalIP, eth1 is free, br-old was made by a policy in force.
const current = `
interfaces:
- {name: eth0, type: ethernet, state: up, mtu: 1500, mac-address: "52:54:00:00:00:01",
   ipv4: {enabled: true, dhcp: false, address: [{ip: 192.0.2.11, prefix-length: 24}]}}
- {name: eth1, type: ethernet, state: up, mtu: 1500, mac-address: "52:54:00:00:00:02",
   ipv4: {enabled: false}}
- {name: br-old, type: linux-bridge, state: up, mtu: 1500,
   ipv4: {enabled: true, dhcp: false, address: [{ip: 198.51.100.1, prefix-length: 24}, {ip: 198.51.100.2, prefix-length: 24}]},
   bridge: {port: []}}
routes:
  running:
  - {destination: 0.0.0.0/0, next-hop-interface: eth0, next-hop-address: 192.0.2.254, table-id: 254}
  - {destination: 203.0.113.0/24, next-hop-interface: br-old, next-hop-address: 198.51.100.254, table-id: 254}
  config:
  - {destination: 203.0.113.0/24, next-hop-interface: br-old, next-hop-address: 198.51.100.254, table-id: 254}
`

// brOld is the policy in force that made br-old, its two addresses and its route.
const brOld = `
interfaces:
- {name: br-old, type: linux-bridge, state: up, bridge: {port: []},
   ipv4: {enabled: true, dhcp: false, address: [{ip: 198.51.100.1, prefix-length: 24}, {ip: 198.51.100.2, prefix-length: 24}]}}
routes:
  config:
  - {destination: 203.0.113.0/24, next-hop-interface: br-old, next-hop-address: 198.51.100.254}
`

func currentState(t *testing.T) state.State {
	t.Helper()
	var s state.State
	if err := yaml.Unmarshal([]byte(current), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func policy(name, desired string) node.Policy {
	return node.Policy{Name: name, Generation: 1, DesiredState: []byte(desired)}
}

func lines(r Result) []string {
	var out []string
	for _, c := range r.Changes {
		out = append(out, c.String())
	}
	return out
}

func TestForNode(t *testing.T) {
	n := Node{Name: "worker-0", Labels: map[string]string{"kubernetes.io/hostname": "worker-0"},
		InternalIPs: []netip.Addr{netip.MustParseAddr("192.0.2.11")}, Current: currentState(t),
		Capabilities: []string{"ipv4-forwarding"}}
	inForce := []node.Policy{policy("br-old", brOld)}
	for _, tc := range []struct {
		name                string
		planned             node.Policy
		changes             []string
		conflicts, refusals []string
		risks               []string
		internalIP          string
	}{
		{name: "a new bridge on the free NIC: created, the NIC enslaved, its address added",
			planned: policy("br-new", `
interfaces:
- {name: br1, type: linux-bridge, state: up, bridge: {port: [{name: eth1}]},
   ipv4: {enabled: true, dhcp: false, address: [{ip: 10.0.0.1, prefix-length: 24}]}}
- {name: eth1, type: ethernet, state: up, mtu: 9000}`),
			changes: []string{"+ br1 (linux-bridge; ports eth1; 10.0.0.1/24)", "~ eth1.controller: none → br1", "~ eth1.mtu: 1500 → 9000"}},
		{name: "a bridge over the NIC holding the node's address: the NIC's address goes",
			planned: policy("br-eth0", `{interfaces: [{name: br0, type: linux-bridge, state: up, bridge: {port: [{name: eth0}]}}]}`),
			changes: []string{"+ br0 (linux-bridge; ports eth0)", "~ eth0.controller: none → br0", "- eth0.ipv4.address: 192.0.2.11/24"},
			risks:   []string{"eth0 carries the node's default route: the change touches it"}},
		{name: "a VLAN on the NIC of the default route: made beside it, no risk",
			planned: policy("vlan", `{interfaces: [{name: eth0.100, type: vlan, state: up, vlan: {base-iface: eth0, id: 100}}]}`),
			changes: []string{"+ eth0.100 (vlan; on eth0)"}},
		{name: "what the node runs already: no change",
			planned: policy("same", `{interfaces: [{name: eth1, type: ethernet, state: up, mtu: 1500}]}`)},
		{name: "an edit that drops an address and the route: both go",
			planned: policy("br-old", `
interfaces:
- {name: br-old, type: linux-bridge, state: up, bridge: {port: []},
   ipv4: {enabled: true, dhcp: false, address: [{ip: 198.51.100.1, prefix-length: 24}]}}`),
			changes: []string{"- br-old.ipv4.address: 198.51.100.2/24",
				"- routes.config: destination=203.0.113.0/24,next-hop-interface=br-old,next-hop-address=198.51.100.254"}},
		{name: "an edit that no longer states the bridge: released",
			planned: policy("br-old", `{interfaces: [{name: eth1, type: ethernet, state: up, mtu: 1500}]}`),
			changes: []string{"< br-old: no policy states it any more: removed with its profile, unless a persistent profile makes it",
				"- routes.config: destination=203.0.113.0/24,next-hop-interface=br-old,next-hop-address=198.51.100.254"}},
		{name: "an interface removed",
			planned:   policy("rm", `{interfaces: [{name: br-old, type: linux-bridge, state: absent}]}`),
			conflicts: []string{"with br-old: spec.desiredState.interfaces[name=br-old].state: policy \"br-old\" sets \"up\", policy \"rm\" sets \"absent\""}},
		{name: "the MTU of the NIC of the default route: a risk (one per interface, the first reason)",
			planned: policy("jumbo", `{interfaces: [{name: eth0, type: ethernet, state: up, mtu: 9000}]}`),
			changes: []string{"~ eth0.mtu: 1500 → 9000"},
			risks:   []string{"eth0 carries the node's default route: the change touches it"}},
		{name: "a field the node's NetworkManager cannot apply: refused, naming the capability and what the node has",
			planned:  policy("hsr", `{interfaces: [{name: hsr0, type: hsr, state: up, hsr: {port1: eth1, port2: eth0, protocol: prp}}]}`),
			refusals: []string{"spec.desiredState.interfaces[0].type: needs hsr, which the node's NetworkManager does not have (NetworkManager 1.46 and later apply it; its NodeNetworkState lists ipv4-forwarding)"}},
		{name: "an interface holding the InternalIP: a risk, the address left out (nodes with the same change print once)",
			planned: policy("br-old", `
interfaces:
- {name: br-old, type: linux-bridge, state: up, mtu: 9000, bridge: {port: []},
   ipv4: {enabled: true, dhcp: false, address: [{ip: 198.51.100.1, prefix-length: 24}, {ip: 198.51.100.2, prefix-length: 24}]}}
routes:
  config:
  - {destination: 203.0.113.0/24, next-hop-interface: br-old, next-hop-address: 198.51.100.254}`),
			internalIP: "198.51.100.2",
			changes:    []string{"~ br-old.mtu: 1500 → 9000"},
			risks:      []string{"br-old holds the node's InternalIP: the change touches it"}},
		{name: "a default route added: a risk",
			planned: policy("gw", `
routes:
  config:
  - {destination: 0.0.0.0/0, next-hop-interface: eth1, next-hop-address: 10.0.0.254}`),
			changes: []string{"+ routes.config: destination=0.0.0.0/0,next-hop-interface=eth1,next-hop-address=10.0.0.254"},
			risks:   []string{"the change adds or drops a default route"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := n
			if tc.internalIP != "" {
				n.InternalIPs = []netip.Addr{netip.MustParseAddr(tc.internalIP)}
			}
			r, err := ForNode(Input{InForce: inForce, Planned: tc.planned, APIServer: netip.MustParseAddr("192.0.2.254"), Now: time.Now()}, n)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(lines(r), "\n"); got != strings.Join(tc.changes, "\n") {
				t.Errorf("changes:\n%s\nwant:\n%s", got, strings.Join(tc.changes, "\n"))
			}
			prefixes(t, "conflicts", r.Conflicts, tc.conflicts)
			prefixes(t, "refusals", r.Refusals, tc.refusals)
			if got := strings.Join(r.Risks, "\n"); got != strings.Join(tc.risks, "\n") {
				t.Errorf("risks:\n%s\nwant:\n%s", got, strings.Join(tc.risks, "\n"))
			}
		})
	}
}

// prefixes: each got line starts with its want line (the rest says more).
func prefixes(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %q, want %d starting %q", what, got, len(want), want)
		return
	}
	for i := range got {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("%s[%d]: %q, want it to start %q", what, i, got[i], want[i])
		}
	}
}

// TestClassify runs the engine's own verification on pairs of states and reads each line
// it gives: a change of Verify's wording fails here, not silently in a plan.
func TestClassify(t *testing.T) {
	cur := currentState(t)
	for _, tc := range []struct {
		desired string
		want    Change
	}{
		{`{interfaces: [{name: br9, type: linux-bridge, state: up, bridge: {port: [{name: eth1}]}}]}`,
			Change{Kind: Create, Path: "br9", New: "(linux-bridge; ports eth1)"}},
		{`{interfaces: [{name: br-old, type: linux-bridge, state: absent}]}`, Change{Kind: Remove, Path: "br-old"}},
		{`{interfaces: [{name: eth1, type: ethernet, state: down}]}`, Change{Kind: Set, Path: "eth1.state", Old: "up", New: "down"}},
		{`{interfaces: [{name: eth1, type: ethernet, state: up, mtu: 9000}]}`, Change{Kind: Set, Path: "eth1.mtu", Old: "1500", New: "9000"}},
		{`{interfaces: [{name: eth0, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.12, prefix-length: 24}]}}]}`,
			Change{Kind: Add, Path: "eth0.ipv4.address", New: "192.0.2.12/24"}},
		{`{routes: {config: [{destination: 198.18.0.0/15, next-hop-interface: eth0, next-hop-address: 192.0.2.1}]}}`,
			Change{Kind: Add, Path: "routes.config", New: "destination=198.18.0.0/15,next-hop-interface=eth0,next-hop-address=192.0.2.1"}},
		{`{routes: {config: [{destination: 203.0.113.0/24, state: absent}]}}`,
			Change{Kind: Drop, Path: "routes.config", Old: "destination=203.0.113.0/24,next-hop-interface=br-old,next-hop-address=198.51.100.254,table-id=254"}},
		{`{dns-resolver: {config: {server: [192.0.2.53]}}}`, Change{Kind: Set, Path: "dns-resolver.config.server", Old: "[]", New: "[192.0.2.53]"}},
	} {
		desired, err := state.Parse([]byte(tc.desired))
		if err != nil {
			t.Fatalf("%s: %v", tc.desired, err)
		}
		lines := state.Verify(desired, cur)
		if len(lines) != 1 {
			t.Errorf("%s: Verify says %q, want one line", tc.desired, lines)
			continue
		}
		if got := classify(lines[0], desired); got != tc.want {
			t.Errorf("%q read as %+v, want %+v", lines[0], got, tc.want)
		}
	}
}

func TestGroups(t *testing.T) {
	same := []Change{{Kind: Set, Path: "eth1.mtu", Old: "1500", New: "9000"}}
	var results []Result
	for _, name := range []string{"w-3", "w-1", "w-2", "w-10", "w-4", "w-5", "w-6", "w-7", "w-8", "w-9"} {
		results = append(results, Result{Node: name, Changes: same})
	}
	results = append(results, Result{Node: "w-0"}, Result{Node: "w-11", Refusals: []string{"spec.desiredState.interfaces[0].type: needs hsr"}})
	groups := Groups(results)
	if len(groups) != 3 {
		t.Fatalf("%d groups, want 3: %+v", len(groups), groups)
	}
	var text strings.Builder
	for _, g := range groups {
		text.WriteString(g.Text())
	}
	want := `w-0 (1 node): no change
w-1, w-10, w-2, w-3, w-4, w-5, w-6, w-7 and 2 more (10 nodes):
  ~ eth1.mtu: 1500 → 9000
w-11 (1 node):
  refused: spec.desiredState.interfaces[0].type: needs hsr
`
	if text.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", text.String(), want)
	}
}

// What an apply changes beyond what verification names, each found by the node and VM
// tiers' accuracy checks (test/accuracy).
func TestConsequences(t *testing.T) {
	const node = `
interfaces:
- {name: eth1, type: ethernet, state: up, mac-address: "52:54:00:00:00:02", controller: bond0}
- {name: eth2, type: ethernet, state: down, mac-address: "52:54:00:00:00:03"}
- {name: bond0, type: bond, state: up, link-aggregation: {mode: active-backup, port: [eth1]}}
- {name: vlan9, type: vlan, state: down, vlan: {base-iface: eth2, id: 9}}
- {name: ovs0, type: ovs-bridge, state: up, bridge: {port: [{name: ovs0}, {name: eth3}]}}
- {name: ovs0, type: ovs-interface, state: up}
- {name: eth3, type: ethernet, state: up}
routes:
  config:
  - {destination: 198.51.100.0/24, next-hop-address: 192.0.2.1, next-hop-interface: eth2, table-id: 254, metric: 150, cwnd: 20}
  - {destination: 198.51.200.0/24, next-hop-interface: lo, route-type: blackhole, table-id: 254}
  running:
  - {destination: 198.51.100.0/24, next-hop-address: 192.0.2.1, next-hop-interface: eth2, table-id: 254, metric: 150, cwnd: 20}
  - {destination: 198.51.200.0/24, next-hop-interface: lo, route-type: blackhole, table-id: 254}
`
	var current state.State
	if err := yaml.Unmarshal([]byte(node), &current); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, desired string
		changes       []string
	}{
		{"a down interface stated absent is removed", `{interfaces: [{name: vlan9, state: absent}]}`, []string{"- vlan9 (absent)"}},
		{"a bond removed: its port released", `{interfaces: [{name: bond0, type: bond, state: absent}]}`,
			[]string{"- bond0 (absent)", "< eth1: its controller bond0 goes: no longer a port, it runs its own profile, or none"}},
		{"an OVS bridge removed: its internal interface goes, its system port is released",
			`{interfaces: [{name: ovs0, type: ovs-bridge, state: absent}]}`,
			[]string{"< eth3: its controller ovs0 goes: no longer a port, it runs its own profile, or none", "- ovs0 (absent)", "- ovs0,type=ovs-bridge (absent)"}},
		{"a new bond's ports take its MAC address and come up", `{interfaces: [{name: bond1, type: bond, state: up, link-aggregation: {mode: balance-rr, port: [eth2]}}]}`,
			[]string{"+ bond1 (bond; ports eth2)", "~ eth2.controller: none → bond1", "~ eth2.mac-address: 52:54:00:00:00:03 → (bond1's)", "~ eth2.state: down → up"}},
		{"a veth's peer is made with it", `{interfaces: [{name: veth1, type: veth, state: up, veth: {peer: veth1p}}]}`,
			[]string{"+ veth1 (veth)", "+ veth1p (veth; peer of veth1)"}},
		{"a stated route replaces the node's of the same destination, next hop and table; a blackhole restated is the same",
			`{routes: {config: [{destination: 198.51.100.0/24, next-hop-address: 192.0.2.1, next-hop-interface: eth2, metric: 150},
			  {destination: 198.51.200.0/24, route-type: blackhole}]}}`,
			[]string{"~ routes.config: destination=198.51.100.0/24,next-hop-interface=eth2,next-hop-address=192.0.2.1,table-id=254,metric=150,cwnd=20 → destination=198.51.100.0/24,next-hop-interface=eth2,next-hop-address=192.0.2.1,metric=150"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ForNode(Input{Planned: policy("p", tc.desired)}, Node{Name: "n", Current: current})
			if err != nil || r.Failed() {
				t.Fatalf("%v %v %v", err, r.Conflicts, r.Refusals)
			}
			prefixes(t, "changes", lines(r), tc.changes)
		})
	}
}
