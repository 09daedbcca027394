// Package state is the network state model: the nmstate schema that kubernetes-nmstate
// users write in desiredState (the subset nmoverlay supports), parsed and validated with
// errors that name the field path, merged across the policies of one node, ordered by
// dependency, and compared with the current state. No I/O.
package state

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// State is a network state in nmstate's schema: a desired state parsed from a policy,
// or a current state reported by a backend.
type State struct {
	_ struct{} `key:"ovs-db" refused:"the Open_vSwitch table's external_ids and other_config are not applied yet: they are outside every NetworkManager profile, so no checkpoint would roll them back (an OVS bridge's, bond's or interface's ovs-db is applied)"`
	_ struct{} `key:"dispatch" refused:"dispatch scripts are not supported"`
	// A policy written for seed 000's netplan backend.
	_ struct{} `key:"network" refused:"this is netplan's schema (network: {version: 2, ...}); this node's backend is networkmanager, which takes nmstate's (interfaces, routes, ...): spec.backend: netplan in the NMState CR selects the netplan backend"`

	Interfaces  []Interface  `json:"interfaces,omitempty"`
	Routes      *Routes      `json:"routes,omitempty"`
	DNSResolver *DNSResolver `json:"dns-resolver,omitempty"`
	RouteRules  *RouteRules  `json:"route-rules,omitempty"`
	OVN         *OVN         `json:"ovn,omitempty"`
	_           hostname     `key:"hostname"`
}

// hostname is nmstate's hostname section, every field of which nmoverlay refuses. The
// running (transient) hostname is the kernel's: setting it takes CAP_SYS_ADMIN, which the
// handler does not hold, and systemd-hostnamed, which could set it for the handler, keeps
// a static hostname over any transient one and needs polkit to authorize a caller without
// that capability.
type hostname struct {
	_ struct{} `key:"config" refused:"the static hostname is /etc/hostname, which outlives a boot and is the MachineConfig's: nmoverlay changes nothing persistent"`
	_ struct{} `key:"running" refused:"setting the hostname takes CAP_SYS_ADMIN, which the handler does not hold (it changes the node through NetworkManager, with NET_RAW alone)"`
}

// RouteRules is the route-rules section: policy routing.
type RouteRules struct {
	Config []RouteRule `json:"config,omitempty"`
	_      struct{}    `key:"running" refused:"route-rules.running is current state; desired rules go in route-rules.config"`
}

// RouteRule is one policy routing rule. State absent removes the rules it selects, every
// field it leaves out a wildcard.
type RouteRule struct {
	Family     string `json:"family,omitempty"` // ipv4 or ipv6; implied by ip-from or ip-to
	IPFrom     string `json:"ip-from,omitempty"`
	IPTo       string `json:"ip-to,omitempty"`
	Priority   *int   `json:"priority,omitempty" nmstate:"range=0..u32"`
	RouteTable *int   `json:"route-table,omitempty" nmstate:"range=0..u32"`
	FWMark     *int   `json:"fwmark,omitempty" nmstate:"via=hex32"`
	FWMask     *int   `json:"fwmask,omitempty" nmstate:"via=hex32"`
	IIF        string `json:"iif,omitempty"`
	// Action is blackhole, unreachable or prohibit; none looks the route-table up.
	Action               string `json:"action,omitempty"`
	SuppressPrefixLength *int   `json:"suppress-prefix-length,omitempty" nmstate:"alias=suppress_prefixlength,range=0..128"`
	State                string `json:"state,omitempty"` // "" or "absent"
}

// RouteRuleActions are the actions nmstate names.
var RouteRuleActions = []string{"blackhole", "unreachable", "prohibit"}

// Defaults NetworkManager needs stated, as nmstate fills them in: a rule's priority, and
// the table a rule without an action looks up (main).
const (
	DefaultRulePriority = 30000
	MainRouteTable      = 254
)

// OVN is the ovn section: OVN's bridge mappings, which live in Open vSwitch's database
// (the Open_vSwitch row's external_ids), not in NetworkManager.
type OVN struct {
	BridgeMappings []BridgeMapping `json:"bridge-mappings,omitempty"`
}

// BridgeMapping maps an OVN localnet network to the OVS bridge that carries it. State
// absent removes the mapping.
type BridgeMapping struct {
	Localnet string `json:"localnet" nmstate:"required"`
	Bridge   string `json:"bridge,omitempty"`
	State    string `json:"state,omitempty"` // "", "present" or "absent"
}

// Absent says whether the mapping is one to remove.
func (m BridgeMapping) Absent() bool { return m.State == "absent" }

// InterfaceType is nmstate's interface type.
type InterfaceType string

// The types without a section of their own; each kind with one is in its file
// (kind_*.go).
const (
	Ethernet InterfaceType = "ethernet"
	Dummy    InterfaceType = "dummy"
	// OVSBridge is an Open vSwitch bridge: an OVSDB object, not a kernel interface, so its
	// name may also be an interface's (br-ex's internal ovs-interface is named br-ex).
	OVSBridge InterfaceType = "ovs-bridge"
	// OVSInterface is an OVS interface that is a kernel interface: internal, or a patch
	// port (which is not).
	OVSInterface InterfaceType = "ovs-interface"
	// OVSPort is NetworkManager's profile between an OVS bridge and each of its ports. It is
	// not in nmstate's schema: the engine makes one per bridge port.
	OVSPort InterfaceType = "ovs-port"
)

// SupportedTypes are the interface types nmoverlay applies: these, and those of each
// section registered.
var SupportedTypes = []InterfaceType{Ethernet, Dummy, OVSBridge, OVSInterface}

// knownUnsupportedTypes are nmstate types nmoverlay recognises but does not apply, so the
// error can say "not supported" rather than "unknown".
var knownUnsupportedTypes = []string{"team", "unknown", "xfrm", "wireguard", "dispatch"}

// unsupportedTypeReasons say why, where there is more to say than "not supported".
var unsupportedTypeReasons = map[string]string{}

// InterfaceState is what the interface should be.
type InterfaceState string

const (
	Up     InterfaceState = "up"
	Down   InterfaceState = "down"
	Absent InterfaceState = "absent"
)

// Interface is one interface and its configuration. Pointers and nil slices mean "not
// given": nmstate applies only what a desired state names.
type Interface struct {
	_ struct{} `key:"dpdk" refused:"DPDK interfaces are not applied: they take a NIC bound to a DPDK driver, hugepages and Open vSwitch built with DPDK, none of which any tier here has to verify them on"`
	_ struct{} `key:"802.1x" refused:"802.1X is not applied yet: it takes an authenticator on the link and the node's certificates, which no tier here has to verify it against"`
	_ struct{} `key:"dispatch" refused:"dispatch scripts are not supported"`
	// What nmstate reports and ignores when applying: a state copied from a
	// NodeNetworkState applies.
	_ struct{} `key:"min-mtu" nmstate:"ignored"`
	_ struct{} `key:"max-mtu" nmstate:"ignored"`
	_ struct{} `key:"permanent-mac-address" nmstate:"ignored"`
	_ struct{} `key:"team" refused:"team is not supported"`
	_ struct{} `key:"bridge-vlan" refused:"not applied yet"`
	// Read in NetworkManager's sources: no alternative-name setting in any release to 1.58.
	_ struct{} `key:"alt-names" refused:"NetworkManager has no setting for alternative interface names to apply them with (none in any release to 1.58)"`

	Name  string         `json:"name" nmstate:"required"`
	Type  InterfaceType  `json:"type,omitempty"`
	State InterfaceState `json:"state,omitempty" nmstate:"one-of=up|down|absent"`
	// ProfileName names the interface's profile (NetworkManager's connection id), as
	// nmstate does; the interface's name by default.
	ProfileName *string `json:"profile-name,omitempty"`
	// Identifier says how the interface finds its device: by name (""), by MAC address
	// (IdentifyByMAC: mac-address is then the device's, matched, not set), or by PCI
	// address (IdentifyByPCI: pci-address).
	Identifier string `json:"identifier,omitempty"`
	// PCIAddress is the device's PCI address (domain:bus:device.function), which
	// identifier pci-address finds it by.
	PCIAddress  *string `json:"pci-address,omitempty"`
	Description *string `json:"description,omitempty"`
	// MTU: up to lo's 65536; a link's own maximum is its driver's, which the kernel
	// enforces when the profile is activated.
	MTU        *int    `json:"mtu,omitempty" nmstate:"range=68..65536"`
	MACAddress *string `json:"mac-address,omitempty"`
	// CopyMACFrom names the interface whose MAC address this one takes, read when applied
	// (br-ex takes its uplink's, so that DHCP leases and switch ports stay the same).
	CopyMACFrom *string `json:"copy-mac-from,omitempty"`
	// Controller makes the interface a port of the named bond, Linux bridge or VRF, as
	// listing it in that controller's port list does (nmstate's other way to say it); ""
	// makes it a port of none.
	Controller *string   `json:"controller,omitempty"`
	IPv4       *IPConfig `json:"ipv4,omitempty"`
	IPv6       *IPConfig `json:"ipv6,omitempty"`
	LLDP       *LLDP     `json:"lldp,omitempty"`
	// Ethtool is the ethtool section: offload features.
	Ethtool *EthtoolConfig `json:"ethtool,omitempty"`
	// WaitIP is the families the interface must have an address of to count as up: any,
	// ipv4, ipv6 or ipv4+ipv6.
	WaitIP string `json:"wait-ip,omitempty" nmstate:"one-of=any|ipv4|ipv6|ipv4+ipv6"`
	// AcceptAllMACAddresses puts the interface in promiscuous mode.
	AcceptAllMACAddresses *bool `json:"accept-all-mac-addresses,omitempty"`
	// Ethernet is the ethernet section: a physical function's SR-IOV VFs.
	Ethernet *EthernetConfig `json:"ethernet,omitempty"`
	// OVSDB is an Open vSwitch bridge's or interface's OVSDB columns.
	OVSDB *OVSDBColumns `json:"ovs-db,omitempty"`

	// Section is the type's own section (a bond's link-aggregation, a VLAN's vlan), nil
	// when it has none or the state does not give it.
	Section Section `json:"-"`
}

// Key identifies an interface within a state: its name, except for an OVS bridge, whose
// name is an OVSDB bridge's and may also be an interface's (br-ex and its internal
// interface; so may the engine's OVS ports). It reads as the selector a field path uses:
// "br-ex,type=ovs-bridge".
func (it Interface) Key() string {
	if it.Type == OVSBridge || it.Type == OVSPort {
		return it.Name + ",type=" + string(it.Type)
	}
	return it.Name
}

// IPConfig is an interface's ipv4 or ipv6 section.
type IPConfig struct {
	_ struct{} `key:"dhcp-client-id" refused:"not applied yet"`
	_ struct{} `key:"dhcp-duid" refused:"not applied yet"`
	_ struct{} `key:"dhcp-send-hostname" refused:"not applied yet"`
	_ struct{} `key:"dhcp-custom-hostname" refused:"not applied yet"`
	_ struct{} `key:"addr-gen-mode" refused:"not applied yet"`
	_ struct{} `key:"token" refused:"not applied yet"`
	_ struct{} `key:"allow-extra-address" refused:"not applied yet"`
	_ struct{} `key:"dhcp-timeout" refused:"not applied yet"`
	_ struct{} `key:"autoconf-timeout" refused:"not applied yet"`
	_ struct{} `key:"map-to-ipv4" refused:"not applied yet"`
	_ struct{} `key:"autoconf" refused:"autoconf is IPv6 router advertisement; it has no meaning under ipv4" nmstate:"under=ipv4"`

	Enabled *bool `json:"enabled,omitempty"`
	DHCP    *bool `json:"dhcp,omitempty"`
	// Forwarding is the interface's IPv4 forwarding: NetworkManager's ipv4.forwarding
	// (1.54, and RHEL's builds that announce it), never the sysctl behind its back, which
	// would outlive the policy.
	Forwarding  *bool     `json:"forwarding,omitempty" nmstate:"under=ipv4,needs=ipv4-forwarding"`
	Autoconf    *bool     `json:"autoconf,omitempty" nmstate:"under=ipv6"`
	Address     []Address `json:"address,omitempty"`
	AutoDNS     *bool     `json:"auto-dns,omitempty"`
	AutoGateway *bool     `json:"auto-gateway,omitempty"`
	AutoRoutes  *bool     `json:"auto-routes,omitempty"`
	// AutoRouteMetric is the metric of the routes DHCP or autoconf brings (the br-ex
	// customization's auto-route-metric: 48).
	AutoRouteMetric *int `json:"auto-route-metric,omitempty" nmstate:"range=0..u32"`
	// AutoRouteTableID is the routing table the routes DHCP or autoconf brings go to.
	AutoRouteTableID *int `json:"auto-route-table-id,omitempty" nmstate:"range=0..u32"`
}

// Address is a static address.
type Address struct {
	// What nmstate reports of a dynamic address and ignores when applying, under each of
	// the names it takes.
	_ struct{} `key:"valid-life-time" nmstate:"ignored"`
	_ struct{} `key:"valid-left" nmstate:"ignored"`
	_ struct{} `key:"valid-lft" nmstate:"ignored"`
	_ struct{} `key:"preferred-life-time" nmstate:"ignored"`
	_ struct{} `key:"preferred-left" nmstate:"ignored"`
	_ struct{} `key:"preferred-lft" nmstate:"ignored"`

	IP           string `json:"ip" nmstate:"required"`
	PrefixLength int    `json:"prefix-length" nmstate:"required,range=0..32,range@ipv6=0..128"`
}

// LLDP is an interface's lldp section. Neighbors is current state only: what the
// interface hears, one list of TLVs per neighbour, in nmstate's form (a desired state's is
// ignored, as nmstate ignores it).
type LLDP struct {
	Enabled   *bool              `json:"enabled,omitempty"`
	Neighbors [][]map[string]any `json:"neighbors,omitempty" nmstate:"ignored"`
}

// Routes is the routes section.
type Routes struct {
	Config []Route `json:"config,omitempty"`
	// Running is what the node runs; ignored when applying, as nmstate ignores it.
	Running []Route `json:"running,omitempty" nmstate:"ignored"`
}

// Route is one route. State absent removes matching routes.
type Route struct {
	_ struct{} `key:"weight" refused:"ECMP weights are not applied yet"`
	_ struct{} `key:"initcwnd" refused:"not applied yet"`
	_ struct{} `key:"initrwnd" refused:"not applied yet"`
	_ struct{} `key:"mtu" refused:"not applied yet"`
	_ struct{} `key:"quickack" refused:"not applied yet"`
	_ struct{} `key:"advmss" refused:"not applied yet"`

	Destination      string `json:"destination"`
	NextHopAddress   string `json:"next-hop-address,omitempty"`
	NextHopInterface string `json:"next-hop-interface,omitempty"`
	Metric           *int   `json:"metric,omitempty" nmstate:"range=0..u32"`
	TableID          *int   `json:"table-id,omitempty" nmstate:"range=0..u32"`
	// RouteType is blackhole, unreachable or prohibit: a route that drops what it matches,
	// and has no next hop; "" for one that forwards.
	RouteType string `json:"route-type,omitempty" nmstate:"one-of=blackhole|unreachable|prohibit"`
	// VRFName puts the route in the named VRF's route table, on the VRF's profile unless it
	// has a next-hop-interface.
	VRFName string `json:"vrf-name,omitempty"`
	// Source is the address the node sends from over the route (the kernel's prefsrc).
	Source string `json:"source,omitempty"`
	// Cwnd is the TCP congestion window the route fixes (locked, as ip-route's "lock").
	Cwnd  *int   `json:"cwnd,omitempty" nmstate:"range=1..u32"`
	State string `json:"state,omitempty"` // "" or "absent"
}

// IsDefault says whether r is a default route (IPv4 or IPv6).
func (r Route) IsDefault() bool { return r.Destination == "0.0.0.0/0" || r.Destination == "::/0" }

// HasAddress says whether it states a static IPv4 or IPv6 address.
func (it Interface) HasAddress() bool {
	return (it.IPv4 != nil && len(it.IPv4.Address) > 0) || (it.IPv6 != nil && len(it.IPv6.Address) > 0)
}

// IsIPv6 says whether s is an IPv6 address (a DNS server, a next hop).
func IsIPv6(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is6() && !a.Is4In6()
}

// DNSResolver is the dns-resolver section.
type DNSResolver struct {
	Config *DNSConfig `json:"config,omitempty"`
	// Running is what the node uses; ignored when applying, as nmstate ignores it.
	Running *DNSConfig `json:"running,omitempty" nmstate:"ignored"`
	// Interfaces are where the engine may put Config: those named by the policies that
	// set it (Merge fills it in), so DNS never lands on another policy's interface. Not
	// nmstate's schema. Empty: any interface of the desired state.
	Interfaces []string `json:"-"`
}

type DNSConfig struct {
	Server []string `json:"server,omitempty"`
	Search []string `json:"search,omitempty"`
	// Options are resolv.conf's options (rotate, ndots:9).
	Options []string `json:"options,omitempty"`
}

// ResolverOptions are the options resolv.conf takes, as nmstate and NetworkManager
// check them; those ending in ':' take a number.
var ResolverOptions = []string{"attempts:", "debug", "edns0", "inet6", "ip6-bytestring", "ip6-dotint", "ndots:",
	"no-aaaa", "no-check-names", "no-ip6-dotint", "no-reload", "no-tld-query", "rotate", "single-request",
	"single-request-reopen", "timeout:", "trust-ad", "use-vc"}

// resolverOption says whether o is one of ResolverOptions, with its number where it takes one.
func resolverOption(o string) bool {
	for _, known := range ResolverOptions {
		if name, ok := strings.CutSuffix(known, ":"); ok {
			if n, ok := strings.CutPrefix(o, name+":"); ok {
				_, err := strconv.ParseUint(n, 10, 8)
				return err == nil
			}
		} else if o == known {
			return true
		}
	}
	return false
}

// typeFrom is the type the interface's keys give: its type if it is one nmoverlay
// applies, else the one its section implies.
func (*Interface) typeFrom(m map[string]any) InterfaceType {
	if t, ok := m["type"].(string); ok && slices.Contains(SupportedTypes, InterfaceType(t)) {
		return InterfaceType(t)
	}
	for _, k := range sectionKeys {
		if _, ok := m[k]; ok {
			return typeOfSection(k)
		}
	}
	return ""
}

// checkDecoded says why a type is not applied, and reads the identifier.
func (it *Interface) checkDecoded(d *decoder, path string, m map[string]any) {
	if t, ok := m["type"].(string); ok {
		switch {
		case slices.Contains(SupportedTypes, InterfaceType(t)):
		case unsupportedTypeReasons[t] != "":
			d.fail(join(path, "type"), "%q is not supported by nmoverlay: %s", t, unsupportedTypeReasons[t])
		case slices.Contains(knownUnsupportedTypes, t):
			d.fail(join(path, "type"), "%q is not supported by nmoverlay (supported: %s)", t, typeList())
		case t != "":
			d.fail(join(path, "type"), "unknown interface type %q (supported: %s)", t, typeList())
		}
		if !slices.Contains(SupportedTypes, InterfaceType(t)) {
			it.Type = ""
		}
	}
	if id, ok := m["identifier"].(string); ok {
		switch id {
		case IdentifyByName:
			it.Identifier = ""
		case IdentifyByMAC:
			if _, ok := m["mac-address"]; !ok {
				d.fail(join(path, "mac-address"), "required with identifier: mac-address (the device's MAC address)")
			}
		case IdentifyByPCI:
			if _, ok := m["pci-address"]; !ok {
				d.fail(join(path, "pci-address"), "required with identifier: pci-address (the device's PCI address)")
			}
		default:
			d.fail(join(path, "identifier"), "%q is not one of name, mac-address, pci-address", id)
		}
	}
	it.Type = it.inferType()
	for _, k := range sectionKeys {
		if _, given := m[k].(map[string]any); given && !fits(sectionFor(k), it.Type) {
			d.fail(join(path, k), "only for type %s, but the interface is type %s", typeOfSection(k), it.Type)
		}
	}
}

// checkDecoded takes the one route state nmstate has.
func (r *Route) checkDecoded(d *decoder, path string, m map[string]any) {
	if _, ok := m["state"].(string); ok && r.State != "absent" {
		d.fail(join(path, "state"), "%q: the only route state is absent", r.State)
	}
}

// checkDecoded takes a mapping's two states.
func (bm *BridgeMapping) checkDecoded(d *decoder, path string, m map[string]any) {
	if _, ok := m["state"].(string); ok && bm.State != "present" && bm.State != "absent" {
		d.fail(join(path, "state"), "%q is not present or absent", bm.State)
	}
}
