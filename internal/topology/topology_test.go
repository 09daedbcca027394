package topology

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/api/shared"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// parse reads a state as a NodeNetworkState shows it (not as a policy states it).
func parse(t *testing.T, doc string) state.State {
	t.Helper()
	var s state.State
	if err := yaml.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// A baremetal worker: two NICs in a bond, VLANs on it, a bridge on one VLAN, OVN's br-ex
// over a third NIC, a VRF, veth pairs and 64 alike NICs (VFs).
const worker = `
interfaces:
- {name: lo, type: loopback, state: up}
- {name: eno1, type: ethernet, state: up, mtu: 9000}
- {name: eno2, type: ethernet, state: up, mtu: 9000}
- {name: bond0, type: bond, state: up, mtu: 9000, link-aggregation: {mode: 802.3ad, port: [eno1, eno2]}}
- {name: bond0.100, type: vlan, state: up, vlan: {base-iface: bond0, id: 100}}
- {name: bond0.200, type: vlan, state: up, vlan: {base-iface: bond0, id: 200},
   ipv4: {enabled: true, address: [{ip: 192.0.2.10, prefix-length: 24}]}}
- {name: br100, type: linux-bridge, state: up, bridge: {port: [{name: bond0.100}]},
   ipv4: {enabled: true, address: [{ip: 198.51.100.1, prefix-length: 24}]}}
- {name: eno3, type: ethernet, state: up,
   lldp: {enabled: true, neighbors: [[{type: 5, system-name: tor-1}, {type: 2, port-id: Ethernet12}]]}}
- {name: br-ex, type: ovs-bridge, state: up, bridge: {port: [{name: eno3}, {name: br-ex}]}}
- {name: br-ex, type: ovs-interface, state: up, ipv4: {enabled: true, address: [{ip: 10.0.0.5, prefix-length: 16}]}}
- {name: vrf-blue, type: vrf, state: up, vrf: {route-table-id: 100, port: [bond0.200]}}
- {name: veth0, type: veth, state: up, veth: {peer: veth1}}
- {name: veth1, type: veth, state: up, veth: {peer: veth0}}
- {name: eno4, type: ethernet, state: down}
`

func workerNode(t *testing.T, vfs int) Node {
	doc := worker
	for i := range vfs {
		doc += fmt.Sprintf("- {name: ens1f0v%d, type: ethernet, state: up, mtu: 1500}\n", i)
	}
	return Node{Name: "worker-0", Current: parse(t, doc),
		Policies:  map[string][]string{"br100": {"bridge-100"}, "bond0.100": {"bridge-100"}},
		Drift:     map[string][]string{"bond0.200": {"vlan-200: changed outside nmoverlay: bond0.200.ipv4"}},
		Ephemeral: map[string]bool{"br100": true, "bond0.100": true}}
}

func byName(boxes []*box) map[string]*box {
	out := map[string]*box{}
	for _, b := range boxes {
		out[b.names[0]+"|"+string(b.typ)] = b
	}
	return out
}

func TestLayout(t *testing.T) {
	boxes, _, _ := layout(graph(workerNode(t, 64)))
	got := byName(boxes)
	for _, tc := range []struct {
		box   string
		layer int
		below []string
	}{
		{"eno1|ethernet", 0, nil},
		{"bond0|bond", 1, []string{"eno1", "eno2"}},
		{"bond0.100|vlan", 2, []string{"bond0"}},
		{"br100|linux-bridge", 3, []string{"bond0.100"}},
		{"vrf-blue|vrf", 3, []string{"bond0.200"}},
		{"br-ex|ovs-interface", 0, nil},
		{"br-ex|ovs-bridge", 1, []string{"eno3", "br-ex"}},
		{"veth0|veth", 0, nil},
	} {
		b := got[tc.box]
		if b == nil {
			t.Errorf("%s: no box", tc.box)
			continue
		}
		var below []string
		for _, d := range b.below {
			below = append(below, d.names[0])
		}
		if b.layer != tc.layer || strings.Join(below, ",") != strings.Join(tc.below, ",") {
			t.Errorf("%s: layer %d below %v, want %d %v", tc.box, b.layer, below, tc.layer, tc.below)
		}
	}
	if got["lo|loopback"] != nil {
		t.Error("lo is drawn")
	}
	vfs := got["ens1f0v0|ethernet"]
	if vfs == nil || len(vfs.names) != 64 || vfs.lines[0].text != "ens1f0v0–63  64 × ethernet" {
		t.Fatalf("the 64 alike NICs are not one box: %+v", vfs)
	}
	// Alike but with an address, a neighbour or drift of their own: not collapsed.
	for _, name := range []string{"eno3|ethernet", "bond0.200|vlan", "eno4|ethernet"} {
		if b := got[name]; b == nil || len(b.names) != 1 {
			t.Errorf("%s collapsed", name)
		}
	}
}

// No two boxes overlap, however many interfaces; every line fits its box.
func TestLayoutNoOverlap(t *testing.T) {
	doc := worker
	for i := range 200 {
		doc += fmt.Sprintf("- {name: bond0.%d, type: vlan, state: up, vlan: {base-iface: bond0, id: %d}, ipv4: {enabled: true, address: [{ip: 10.1.%d.1, prefix-length: 24}]}}\n", 1000+i, 1000+i, i)
		if i%3 == 0 {
			doc += fmt.Sprintf("- {name: br%d, type: linux-bridge, state: up, bridge: {port: [{name: bond0.%d}]}}\n", i, 1000+i)
		}
	}
	boxes, w, h := layout(graph(Node{Name: "big", Current: parse(t, doc)}))
	if len(boxes) < 250 {
		t.Fatalf("%d boxes", len(boxes))
	}
	for i, a := range boxes {
		if a.x < 0 || a.y < 0 || a.x+a.w > w+0.01 || a.y+a.h > h+0.01 {
			t.Errorf("%v outside the picture (%.0f×%.0f): %.0f,%.0f %.0f×%.0f", a.names, w, h, a.x, a.y, a.w, a.h)
		}
		for _, l := range a.lines {
			if float64(min(len([]rune(l.text)), maxChars))*charWidth+2*padding > a.w+0.01 {
				t.Errorf("%v: %q is wider than its box", a.names, l.text)
			}
		}
		for _, b := range boxes[i+1:] {
			if a.x < b.x+b.w && b.x < a.x+a.w && a.y < b.y+b.h && b.y < a.y+a.h {
				t.Errorf("%v and %v overlap", a.names, b.names)
			}
		}
	}
}

func TestSVGMarks(t *testing.T) {
	var b strings.Builder
	if err := SVG(&b, workerNode(t, 4)); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	for _, want := range []string{
		`<g class="iface tmpfs" data-names="br100">`,
		`<text class="policy" x="`, `>policy bridge-100</text>`,
		`<g class="iface drift" data-names="bond0.200">`,
		`>drift vlan-200: bond0.200.ipv4</text>`,
		`<g class="iface down" data-names="eno4">`,
		`>lldp tor-1 Ethernet12</text>`,
		`>peer veth1</text>`,
		`>up · mtu 9000</text>`,
		`>192.0.2.10/24</text>`,
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("the picture lacks %s", want)
		}
	}
}

func TestWrap(t *testing.T) {
	got := wrap("policy a-very-long-policy-name, another-very-long-policy-name, a-third", 40)
	want := []string{"policy a-very-long-policy-name,", "  another-very-long-policy-name, a-third"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("wrap: %q, want %q", got, want)
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{[]string{"veth3", "veth1", "veth2", "veth7"}, "veth1–3,7"},
		{[]string{"ens1f0v0", "ens1f0v1", "ens1f1v0"}, "ens1f0v0–1, ens1f1v0"},
		{[]string{"a1", "a3", "a5", "a7", "a9"}, "a1,3,… (5)"},
		{[]string{"eth0", "eth01"}, "eth0, eth01"},
		{[]string{"veth0a", "veth1a", "veth0b", "veth1b"}, "veth0–1a, veth0–1b"},
		{[]string{"foo", "bar", "baz", "qux"}, "bar, baz, … +2"},
	} {
		if got := Names(tc.names); got != tc.want {
			t.Errorf("Names(%v) = %q, want %q", tc.names, got, tc.want)
		}
	}
}

func TestFromStatus(t *testing.T) {
	nns := &v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: "worker-0"}}
	nns.Status.CurrentState = shared.State{Raw: []byte(`{"interfaces":[{"name":"eth1","type":"ethernet","state":"up"},
		{"name":"eth1.100","type":"vlan","state":"up","vlan":{"base-iface":"eth1","id":100}}]}`)}
	nns.Status.HostNetworkManagerVersion = "1.46.0"
	nns.Status.Drift = []string{"vlan: changed outside nmoverlay: eth1.100.ipv4.address: 10.0.0.1/24 missing (has none); routes.config[x]: missing"}
	nns.Status.Overlay = &v1beta1.OverlayStatus{Ephemeral: []v1beta1.EphemeralProfile{
		{File: "eth1.100.nmconnection", Change: "added", Interface: "eth1.100", Owned: true},
		{File: "gone.nmconnection", Change: "deleted", Interface: "eth1"}}}
	enactment := func(policy, desired string) v1beta1.NodeNetworkConfigurationEnactment {
		e := v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{shared.PolicyLabel: policy}}}
		e.Status.DesiredState = shared.State{Raw: []byte(desired)}
		return e
	}
	n, err := FromStatus(nns, []v1beta1.NodeNetworkConfigurationEnactment{
		enactment("vlan", `{"interfaces":[{"name":"eth1.100","type":"vlan","state":"up","vlan":{"base-iface":"eth1","id":100}},
			{"name":"br1","type":"linux-bridge","state":"up","bridge":{"port":[{"name":"eth1.100"}]}}]}`),
		enactment("cleanup", `{"interfaces":[{"name":"eth1.200","state":"absent"}]}`),
		enactment("mtu", `{"interfaces":[{"name":"eth1","mtu":9000},{"name":"eth1.100","mtu":9000}]}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(n.Policies); got != "map[br1:[vlan] eth1:[mtu] eth1.100:[vlan mtu]]" {
		t.Errorf("policies %s", got)
	}
	if got := fmt.Sprint(n.Drift); got != "map[eth1.100:[vlan: eth1.100.ipv4.address: 10.0.0.1/24 missing (has none)]]" {
		t.Errorf("drift %s", got)
	}
	if got := fmt.Sprint(n.Ephemeral); got != "map[eth1.100:true]" {
		t.Errorf("ephemeral %s", got)
	}
	if n.About != "NetworkManager 1.46.0 · drift vlan: routes.config[x]: missing" {
		t.Errorf("about %q", n.About)
	}
}
