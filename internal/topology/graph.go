// Package topology draws a node's network from its NodeNetworkState (`nmoverlay
// topology`): each interface a box, built left to right from what it stands on (ports
// before their bond or bridge, a VLAN after its base, an OVS bridge after its ports, a
// VRF after the interfaces it holds), marked with its state, MTU, addresses, LLDP
// neighbour, the policies that state it, the drift reported on it, and whether its profile
// is the persistent one or one the policies keep in tmpfs. Siblings that say the same
// collapse into one box, and every label sits in its own box, so that a node with hundreds
// of interfaces still reads. Pure: the command reads the cluster.
package topology

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// Node is what the picture shows of one node.
type Node struct {
	Name    string
	Current state.State
	// Policies are, by interface name, the policies in force that state it.
	Policies map[string][]string
	// Drift are, by interface name, what its NodeNetworkState reports changed outside
	// nmoverlay there.
	Drift map[string][]string
	// Ephemeral are the interfaces whose profile is in the overlay's tmpfs layer (the
	// policies'), by name; the others run their persistent profile, or none.
	Ephemeral map[string]bool
	// Summarized is what the NodeNetworkState left out, when it did.
	Summarized string
	// About is a line under the node's name (its NetworkManager, say).
	About string
}

// box is one interface, or a collapsed group of siblings that say the same.
type box struct {
	key   string // the interface's key, or the group's first member's
	names []string
	typ   state.InterfaceType
	state state.InterfaceState
	// below are the boxes it stands on (its ports, its base); peer is a veth's peer.
	below []*box
	peer  string
	lines []line
	// persistent is false for a profile in tmpfs; drift is true where drift is reported.
	persistent, drift bool
	layer, row        int
	x, y, w, h        float64
}

type line struct {
	text  string
	class string // how it is drawn: name, detail, policy, drift
}

// graph is the node's boxes, and which stands on which.
func graph(n Node) []*box {
	byKey := map[string]*box{}
	var boxes []*box
	for _, it := range n.Current.Interfaces {
		if it.Type == state.Loopback {
			continue
		}
		b := &box{key: it.Key(), names: []string{it.Name}, typ: it.Type, state: it.State,
			persistent: !n.Ephemeral[it.Name], drift: len(n.Drift[it.Name]) > 0}
		b.lines = describe(it, n)
		byKey[b.key] = b
		boxes = append(boxes, b)
	}
	find := func(name string, ovs bool) *box {
		if ovs {
			// An OVS bridge's port is its internal interface or a system interface,
			// never the bridge itself.
			if b := byKey[name]; b != nil && b.typ != state.OVSBridge {
				return b
			}
			return nil
		}
		if b := byKey[name]; b != nil {
			return b
		}
		return byKey[name+",type="+string(state.OVSBridge)]
	}
	for _, it := range n.Current.Interfaces {
		b := byKey[it.Key()]
		if b == nil {
			continue
		}
		if br := state.SectionOf[*state.BridgeConfig](it); br != nil && it.Type == state.OVSBridge {
			for _, p := range br.Port {
				if p.LinkAggregation == nil {
					if pb := find(p.Name, true); pb != nil {
						b.below = append(b.below, pb)
					}
					continue
				}
				// An OVS bond is an OVSDB port, no interface: a box between its
				// members and the bridge.
				bond := &box{key: it.Name + "/" + p.Name, names: []string{p.Name}, typ: "ovs-bond", state: it.State,
					persistent: b.persistent, lines: []line{{p.Name + "  ovs bond", "name"}, {"mode " + p.LinkAggregation.Mode, "detail"}}}
				for _, m := range p.LinkAggregation.Port {
					if mb := find(m.Name, true); mb != nil {
						bond.below = append(bond.below, mb)
					}
				}
				boxes = append(boxes, bond)
				b.below = append(b.below, bond)
			}
			continue
		}
		for _, r := range it.References() {
			switch r.Kind {
			case state.RefPort, state.RefBase:
				if other := find(r.Name, false); other != nil && other != b {
					b.below = append(b.below, other)
				}
			case state.RefController:
				if c := find(r.Name, false); c != nil && c != b && !slices.Contains(c.below, b) {
					c.below = append(c.below, b)
				}
			}
		}
		if v := state.SectionOf[*state.VethConfig](it); v != nil {
			b.peer = v.Peer
		}
	}
	return boxes
}

// maxAddresses is how many addresses a box lists before it counts the rest.
const maxAddresses = 3

// describe is an interface's lines: its name and type; state and MTU; addresses; LLDP
// neighbour; policies; drift.
func describe(it state.Interface, n Node) []line {
	out := []line{{it.Name + "  " + string(it.Type), "name"}}
	detail := []string{string(it.State)}
	if it.MTU != nil {
		detail = append(detail, fmt.Sprintf("mtu %d", *it.MTU))
	}
	if n.Ephemeral[it.Name] {
		detail = append(detail, "tmpfs")
	}
	out = append(out, line{strings.Join(detail, " · "), "detail"})
	var addrs []string
	for _, c := range []*state.IPConfig{it.IPv4, it.IPv6} {
		if c == nil {
			continue
		}
		for _, a := range c.Address {
			if strings.HasPrefix(a.IP, "fe80:") {
				continue // every IPv6 interface has one: noise
			}
			addrs = append(addrs, fmt.Sprintf("%s/%d", a.IP, a.PrefixLength))
		}
	}
	for i, a := range addrs {
		if i == maxAddresses {
			out = append(out, line{fmt.Sprintf("+%d more", len(addrs)-maxAddresses), "detail"})
			break
		}
		out = append(out, line{a, "detail"})
	}
	if v := state.SectionOf[*state.VethConfig](it); v != nil && v.Peer != "" {
		out = append(out, line{"peer " + v.Peer, "detail"})
	}
	if s := lldpNeighbour(it); s != "" {
		out = append(out, line{"lldp " + s, "detail"})
	}
	if ps := n.Policies[it.Name]; len(ps) > 0 {
		out = append(out, line{"policy " + strings.Join(ps, ", "), "policy"})
	}
	for _, d := range n.Drift[it.Name] {
		out = append(out, line{"drift " + strings.Replace(d, "changed outside nmoverlay: ", "", 1), "drift"})
	}
	var wrapped []line
	for _, l := range out {
		for _, text := range wrap(l.text, maxChars) {
			wrapped = append(wrapped, line{text, l.class})
		}
	}
	return wrapped
}

// wrap breaks text into lines of at most n characters, at spaces where it can; the
// lines after the first are indented.
func wrap(text string, n int) []string {
	var out []string
	for r := []rune(text); ; {
		if len(r) <= n {
			return append(out, string(r))
		}
		at := n
		for i := n; i > n/2; i-- {
			if r[i] == ' ' {
				at = i
				break
			}
		}
		out = append(out, strings.TrimRight(string(r[:at]), " "))
		r = append([]rune("  "), []rune(strings.TrimLeft(string(r[at:]), " "))...)
	}
}

// lldpNeighbour is the first LLDP neighbour's system name and port, as nmstate reports
// them (a list of TLVs per neighbour).
func lldpNeighbour(it state.Interface) string {
	if it.LLDP == nil || len(it.LLDP.Neighbors) == 0 {
		return ""
	}
	var system, port string
	for _, tlv := range it.LLDP.Neighbors[0] {
		if s, ok := tlv["system-name"].(string); ok {
			system = s
		}
		if s, ok := tlv["port-id"].(string); ok {
			port = s
		}
	}
	return strings.TrimSpace(system + " " + port)
}
