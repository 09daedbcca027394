package state

import "fmt"

// A Capability is what of nmstate's schema only some nodes can apply: a setting that
// NetworkManager gained in a later version than others run, or a plugin a node may lack.
// The state marks the fields that need one (the tag option needs=CAPABILITY); each backend
// says which capabilities a node has, and refuses on that node a policy that needs one it
// lacks, naming it.
type Capability string

// The capabilities fields can need.
const (
	// CapabilityBondPortPriority: a bond port's priority (ports-config[].priority).
	CapabilityBondPortPriority Capability = "bond-port-priority"
	// CapabilityHSR and CapabilityIPVLAN: interfaces of those types.
	CapabilityHSR    Capability = "hsr"
	CapabilityIPVLAN Capability = "ipvlan"
	// CapabilityLibreswan: IPsec interfaces, which NetworkManager applies through its
	// libreswan VPN plugin (NetworkManager-libreswan), a package not every node has.
	CapabilityLibreswan Capability = "libreswan"
	// CapabilityMACsec: MACsec interfaces, whose keys NetworkManager agrees through
	// wpa_supplicant (MACsec Key Agreement).
	CapabilityMACsec Capability = "macsec"
	// CapabilityMACsecOffload: a MACsec interface's offload (macsec.offload).
	CapabilityMACsecOffload Capability = "macsec-offload"
	// CapabilityEthtoolFEC: a port's forward error correction (ethtool.fec-mode).
	CapabilityEthtoolFEC Capability = "ethtool-fec"
	// CapabilityIPv4Forwarding: an interface's IPv4 forwarding (ipv4.forwarding).
	CapabilityIPv4Forwarding Capability = "ipv4-forwarding"
	// CapabilityRouteWithoutAddress: a route on a profile with no address of its family
	// (a blackhole route on its VRF's profile).
	CapabilityRouteWithoutAddress Capability = "route-without-address"
)

// Capabilities are every capability a field can need, in a stable order.
var Capabilities = []Capability{CapabilityBondPortPriority, CapabilityEthtoolFEC, CapabilityHSR, CapabilityIPv4Forwarding, CapabilityIPVLAN, CapabilityLibreswan,
	CapabilityMACsec, CapabilityMACsecOffload, CapabilityRouteWithoutAddress}

// needer is a section only some nodes can apply: an interface of its types needs the
// capability.
type needer interface{ needs() Capability }

// typeNeeds lists the interfaces of s whose type needs a capability, but for those being
// removed (which needs nothing of the node).
func typeNeeds(s State) []Need {
	var out []Need
	for i, it := range s.Interfaces {
		if it.State == Absent {
			continue
		}
		for _, key := range sectionKeys {
			sec := sectionFor(key)
			if n, ok := sec.(needer); ok && fits(sec, it.Type) {
				out = append(out, Need{Path: fmt.Sprintf("interfaces[%d].type", i), Capability: n.needs()})
			}
		}
	}
	return out
}

// routeNeeds lists the typed routes in a VRF: they go on the VRF's profile, which has no
// address (a typed route elsewhere goes on lo's, which has the loopback address).
func routeNeeds(s State) []Need {
	if s.Routes == nil {
		return nil
	}
	var out []Need
	for i, r := range s.Routes.Config {
		if r.RouteType != "" && r.VRFName != "" && r.State != "absent" {
			out = append(out, Need{Path: fmt.Sprintf("routes.config[%d].route-type", i), Capability: CapabilityRouteWithoutAddress})
		}
	}
	return out
}

// Need is one field a desired state gives that needs a capability.
type Need struct {
	Path       string
	Capability Capability
}

// ParseNeeds is Parse, with the fields the state gives that need a capability: the
// interfaces whose type needs one, then the other fields, then the routes in a VRF that
// need one, each in document order.
func ParseNeeds(doc []byte) (State, []Need, error) {
	return parse(doc)
}
