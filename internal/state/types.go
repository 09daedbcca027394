// Package state is the network state model: the nmstate schema that kubernetes-nmstate
// users write in desiredState (the subset nmoverlay supports), parsed and validated with
// errors that name the field path, merged across the policies of one node, ordered by
// dependency, and compared with the current state. No I/O.
package state

import (
	"net/netip"
	"reflect"
	"slices"
	"strings"
)

// State is a network state in nmstate's schema: a desired state parsed from a policy,
// or a current state reported by a backend.
type State struct {
	_ struct{} `key:"ovs-db" refused:"global Open vSwitch database settings are not applied yet"`
	_ struct{} `key:"dispatch" refused:"dispatch scripts are not supported"`
	// A policy written for seed 000's netplan backend.
	_ struct{} `key:"network" refused:"this is netplan's schema (network: {version: 2, ...}); this node's backend is networkmanager, which takes nmstate's (interfaces, routes, ...): spec.backend: netplan in the NMState CR selects the netplan backend"`

	Interfaces  []Interface  `json:"interfaces,omitempty"`
	Routes      *Routes      `json:"routes,omitempty"`
	RouteRules  *RouteRules  `json:"route-rules,omitempty"`
	DNSResolver *DNSResolver `json:"dns-resolver,omitempty"`
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

const (
	Ethernet    InterfaceType = "ethernet"
	Bond        InterfaceType = "bond"
	VLAN        InterfaceType = "vlan"
	LinuxBridge InterfaceType = "linux-bridge"
	Dummy       InterfaceType = "dummy"
	MACVLAN     InterfaceType = "mac-vlan"
	VXLAN       InterfaceType = "vxlan"
	VRF         InterfaceType = "vrf"
	Veth        InterfaceType = "veth"
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

// SupportedTypes are the interface types nmoverlay applies.
var SupportedTypes = []InterfaceType{Ethernet, Bond, VLAN, LinuxBridge, Dummy, MACVLAN, VXLAN, VRF, Veth, OVSBridge, OVSInterface, InfiniBand}

// sectionTypes are the type-specific sections, each with the type it implies when an
// interface gives no type.
var sectionTypes = []struct {
	key string
	typ InterfaceType
}{{"link-aggregation", Bond}, {"vlan", VLAN}, {"bridge", LinuxBridge}, {"vrf", VRF}, {"mac-vlan", MACVLAN},
	{"vxlan", VXLAN}, {"veth", Veth}, {"patch", OVSInterface}, {"infiniband", InfiniBand}}

// knownUnsupportedTypes are nmstate types nmoverlay recognises but does not apply, so the
// error can say "not supported" rather than "unknown".
var knownUnsupportedTypes = []string{"team", "ipvlan",
	"hsr", "macsec", "ipsec", "loopback", "unknown", "xfrm", "mac-vtap", "wireguard", "dispatch"}

// unsupportedTypeReasons say why, where there is more to say than "not supported".
var unsupportedTypeReasons = map[string]string{
	// nmstate applies ipsec through NetworkManager-libreswan, which is not installed with
	// NetworkManager on these nodes (measured: no VPN plugin in 1.42's plugin dir).
	"ipsec": "NetworkManager here has no libreswan VPN plugin (NetworkManager-libreswan) to apply it with",
}

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
	_ struct{} `key:"ovs-db" refused:"Open vSwitch external_ids and other_config are not applied yet"`
	_ struct{} `key:"dpdk" refused:"DPDK interfaces are not supported"`
	_ struct{} `key:"802.1x" refused:"802.1X is not supported"`
	_ struct{} `key:"dispatch" refused:"dispatch scripts are not supported"`
	_ struct{} `key:"accept-all-mac-addresses" refused:"not applied yet"`
	_ struct{} `key:"controller" refused:"name the port in its controller's port list instead"`
	_ struct{} `key:"min-mtu" refused:"current state only"`
	_ struct{} `key:"max-mtu" refused:"current state only"`
	_ struct{} `key:"permanent-mac-address" refused:"current state only"`
	_ struct{} `key:"wait-ip" refused:"not applied yet"`
	_ struct{} `key:"ipvlan" refused:"ipvlan is not supported"`
	_ struct{} `key:"team" refused:"team is not supported"`
	_ struct{} `key:"bridge-vlan" refused:"not applied yet"`
	// Measured: no alternative-name setting in NetworkManager 1.42's (nm-settings-dbus(5)).
	_ struct{} `key:"alt-names" refused:"NetworkManager 1.42 has no setting for alternative interface names to apply them with"`
	_ struct{} `key:"pci-address" refused:"matching interfaces by PCI address is not applied yet"`

	Name  string         `json:"name" nmstate:"required"`
	Type  InterfaceType  `json:"type,omitempty"`
	State InterfaceState `json:"state,omitempty" nmstate:"one-of=up|down|absent"`
	// ProfileName names the interface's profile (NetworkManager's connection id), as
	// nmstate does; the interface's name by default.
	ProfileName *string `json:"profile-name,omitempty"`
	// Identifier says how the interface finds its device: by name (""), or by MAC address
	// (IdentifyByMAC: mac-address is then the device's, matched, not set).
	Identifier  string  `json:"identifier,omitempty"`
	Description *string `json:"description,omitempty"`
	MTU         *int    `json:"mtu,omitempty" nmstate:"range=68..65535"`
	MACAddress  *string `json:"mac-address,omitempty"`
	// CopyMACFrom names the interface whose MAC address this one takes, read when applied
	// (br-ex takes its uplink's, so that DHCP leases and switch ports stay the same).
	CopyMACFrom *string   `json:"copy-mac-from,omitempty"`
	IPv4        *IPConfig `json:"ipv4,omitempty"`
	IPv6        *IPConfig `json:"ipv6,omitempty"`
	LLDP        *LLDP     `json:"lldp,omitempty"`
	// Ethernet is the ethernet section: a physical function's SR-IOV VFs.
	Ethernet *EthernetConfig `json:"ethernet,omitempty"`
	// Ethtool is the ethtool section: offload features.
	Ethtool *EthtoolConfig `json:"ethtool,omitempty"`

	LinkAggregation *BondConfig    `json:"link-aggregation,omitempty"`
	VLAN            *VLANConfig    `json:"vlan,omitempty"`
	Bridge          *BridgeConfig  `json:"bridge,omitempty"`
	VRF             *VRFConfig     `json:"vrf,omitempty"`
	MACVLAN         *MACVLANConfig `json:"mac-vlan,omitempty"`
	VXLAN           *VXLANConfig   `json:"vxlan,omitempty"`
	Veth            *VethConfig    `json:"veth,omitempty"`
	// Patch makes an ovs-interface a patch port to another bridge's patch port.
	Patch *OVSPatch `json:"patch,omitempty"`
	// InfiniBand is an infiniband interface's mode and partition.
	InfiniBand *InfiniBandConfig `json:"infiniband,omitempty"`
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

// OVSPatch is an ovs-interface's patch section.
type OVSPatch struct {
	Peer string `json:"peer" nmstate:"required"`
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
	// Measured: NetworkManager 1.42's settings (nm-settings-dbus(5)) have no per-interface
	// forwarding; the sysctl set behind its back would outlive the policy.
	_ struct{} `key:"forwarding" refused:"NetworkManager 1.42 has no per-interface forwarding setting to apply it with"`
	_ struct{} `key:"autoconf" refused:"autoconf is IPv6 router advertisement; it has no meaning under ipv4" nmstate:"under=ipv4"`

	Enabled     *bool     `json:"enabled,omitempty"`
	DHCP        *bool     `json:"dhcp,omitempty"`
	Address     []Address `json:"address,omitempty"`
	AutoDNS     *bool     `json:"auto-dns,omitempty"`
	AutoGateway *bool     `json:"auto-gateway,omitempty"`
	AutoRoutes  *bool     `json:"auto-routes,omitempty"`
	// AutoRouteMetric is the metric of the routes DHCP or autoconf brings (the br-ex
	// customization's auto-route-metric: 48).
	AutoRouteMetric *int `json:"auto-route-metric,omitempty" nmstate:"range=0..u32"`
	// AutoRouteTableID is the routing table the routes DHCP or autoconf brings go to.
	AutoRouteTableID *int  `json:"auto-route-table-id,omitempty" nmstate:"range=0..u32"`
	Autoconf         *bool `json:"autoconf,omitempty" nmstate:"under=ipv6"`
}

// Address is a static address.
type Address struct {
	_ struct{} `key:"valid-life-time" refused:"current state only"`
	_ struct{} `key:"preferred-life-time" refused:"current state only"`

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

// BondMode is a Linux bonding mode by nmstate's name.
type BondMode string

// BondModes are the modes nmstate names.
var BondModes = []BondMode{"balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"}

// BondConfig is link-aggregation.
type BondConfig struct {
	_ struct{} `key:"ports-config" refused:"not applied yet"`

	Mode    BondMode    `json:"mode,omitempty" nmstate:"required"`
	Options BondOptions `json:"options,omitempty"`
	Port    []string    `json:"port" nmstate:"alias=ports,nonnil"`
}

// VLANConfig is vlan.
type VLANConfig struct {
	_ struct{} `key:"protocol" refused:"802.1ad is not applied yet"`
	_ struct{} `key:"reorder-headers" refused:"not applied yet"`
	_ struct{} `key:"loose-binding" refused:"not applied yet"`
	_ struct{} `key:"registration-protocol" refused:"not applied yet"`

	ID        int    `json:"id" nmstate:"required,range=1..4094"`
	BaseIface string `json:"base-iface" nmstate:"required"`
}

// BridgeConfig is bridge (linux-bridge or ovs-bridge).
type BridgeConfig struct {
	Options *BridgeOptions `json:"options,omitempty"`
	Port    []BridgePort   `json:"port" nmstate:"alias=ports,nonnil"`
	// AllowExtraPatchPorts (ovs-bridge) lets ports nmoverlay did not make stay on the
	// bridge (OVN's patch ports). nmoverlay never removes OVS objects it did not make, so
	// false does not remove them either: it is accepted for compatibility.
	AllowExtraPatchPorts *bool `json:"allow-extra-patch-ports,omitempty" nmstate:"only=ovs-bridge"`
}

// BridgeOptions are a bridge's options; all but stp are ovs-bridge only.
type BridgeOptions struct {
	_ struct{} `key:"group-forward-mask" refused:"not applied yet" nmstate:"only=!ovs-bridge"`
	_ struct{} `key:"mac-ageing-time" refused:"not applied yet" nmstate:"only=!ovs-bridge"`
	_ struct{} `key:"multicast-snooping" refused:"not applied yet" nmstate:"only=!ovs-bridge"`
	_ struct{} `key:"vlan-protocol" refused:"not applied yet" nmstate:"only=!ovs-bridge"`
	_ struct{} `key:"hash-max" refused:"not applied yet" nmstate:"only=!ovs-bridge"`
	_ struct{} `key:"group-addr" refused:"not applied yet" nmstate:"only=!ovs-bridge"`

	STP                 *STP  `json:"stp,omitempty"`
	RSTP                *bool `json:"rstp,omitempty" nmstate:"only=ovs-bridge"`
	MCastSnoopingEnable *bool `json:"mcast-snooping-enable,omitempty" nmstate:"only=ovs-bridge"`
	// FailMode and Datapath take the values Open vSwitch knows; the datapath is system (the
	// kernel's) or netdev (userspace).
	FailMode *string `json:"fail-mode,omitempty" nmstate:"only=ovs-bridge,one-of=secure|standalone"`
	Datapath *string `json:"datapath,omitempty" nmstate:"only=ovs-bridge,one-of=system|netdev"`
}

// STP is a bridge's spanning tree; an OVS bridge's may be a boolean (nmstate 1's form).
type STP struct {
	_ struct{} `key:"forward-delay" refused:"not applied yet"`
	_ struct{} `key:"hello-time" refused:"not applied yet"`
	_ struct{} `key:"max-age" refused:"not applied yet"`
	_ struct{} `key:"priority" refused:"not applied yet"`

	Enabled *bool `json:"enabled,omitempty"`
}

// BridgePort is a bridge port with its optional VLAN filtering.
type BridgePort struct {
	_ struct{} `key:"stp-hairpin-mode" refused:"not applied yet" nmstate:"only=!ovs-bridge"`
	_ struct{} `key:"stp-path-cost" refused:"not applied yet" nmstate:"only=!ovs-bridge"`
	_ struct{} `key:"stp-priority" refused:"not applied yet" nmstate:"only=!ovs-bridge"`

	Name string      `json:"name" nmstate:"required"`
	VLAN *BridgeVLAN `json:"vlan,omitempty"`
	// LinkAggregation makes an OVS bridge's port a bond: one OVSDB port over several
	// interfaces, named by Name, which is no kernel interface.
	LinkAggregation *OVSBond `json:"link-aggregation,omitempty" nmstate:"only=ovs-bridge"`
}

// Interfaces are the interfaces the port puts on its bridge: a bond's members, else the
// port itself.
func (p BridgePort) Interfaces() []string {
	if p.LinkAggregation == nil {
		return []string{p.Name}
	}
	return p.LinkAggregation.Members()
}

// OVSBond is an OVS bridge port's link-aggregation: Open vSwitch's bonding, not the
// kernel's.
type OVSBond struct {
	_ struct{} `key:"ovs-db" refused:"OVSDB columns of a port are not applied yet"`

	Mode      string        `json:"mode" nmstate:"required"`
	Port      []OVSBondPort `json:"port" nmstate:"required"`
	UpDelay   *int          `json:"bond-updelay,omitempty" nmstate:"range=0..u32"`
	DownDelay *int          `json:"bond-downdelay,omitempty" nmstate:"range=0..u32"`
}

// Members are the names of the bond's ports.
func (b *OVSBond) Members() []string {
	names := make([]string, len(b.Port))
	for i, m := range b.Port {
		names[i] = m.Name
	}
	return names
}

// OVSBondPort is a member of an OVS bond.
type OVSBondPort struct {
	Name string `json:"name" nmstate:"required"`
}

// OVSBondModes are nmstate's OVS bond modes: Open vSwitch's three bond modes, and lacp
// (LACP negotiated, Open vSwitch's default active-backup hashing).
var OVSBondModes = []string{"active-backup", "balance-slb", "balance-tcp", "lacp"}

// BridgeVLAN is a bridge port's VLAN filtering.
type BridgeVLAN struct {
	Mode         string     `json:"mode,omitempty"` // access or trunk
	Tag          *int       `json:"tag,omitempty" nmstate:"range=1..4094"`
	EnableNative *bool      `json:"enable-native,omitempty"`
	TrunkTags    []TrunkTag `json:"trunk-tags,omitempty"`
}

// TrunkTag is one VLAN id or a range of them.
type TrunkTag struct {
	ID      *int     `json:"id,omitempty" nmstate:"range=1..4094"`
	IDRange *IDRange `json:"id-range,omitempty"`
}

// IDRange is a range of VLAN ids, both ends included.
type IDRange struct {
	Min int `json:"min" nmstate:"required,range=1..4094"`
	Max int `json:"max" nmstate:"required,range=1..4094"`
}

// VRFConfig is vrf.
type VRFConfig struct {
	Port         []string `json:"port" nmstate:"alias=ports,nonnil"`
	RouteTableID int      `json:"route-table-id" nmstate:"required,range=1..u32"`
}

// MACVLANConfig is mac-vlan.
type MACVLANConfig struct {
	BaseIface   string `json:"base-iface" nmstate:"required"`
	Mode        string `json:"mode" nmstate:"required"`
	Promiscuous *bool  `json:"promiscuous,omitempty"`
}

// MACVLANModes are the modes nmstate names.
var MACVLANModes = []string{"vepa", "bridge", "private", "passthru", "source"}

// VXLANConfig is vxlan.
type VXLANConfig struct {
	_ struct{} `key:"learning" refused:"not applied yet"`

	ID              int    `json:"id" nmstate:"required,range=0..16777215"`
	BaseIface       string `json:"base-iface,omitempty"`
	Remote          string `json:"remote,omitempty"`
	Local           string `json:"local,omitempty"`
	DestinationPort *int   `json:"destination-port,omitempty" nmstate:"range=1..65535"`
}

// VethConfig is veth.
type VethConfig struct {
	Peer string `json:"peer" nmstate:"required"`
}

// Routes is the routes section.
type Routes struct {
	Config  []Route `json:"config,omitempty"`
	Running []Route `json:"running,omitempty" refused:"routes.running is current state; desired routes go in routes.config"`
}

// Route is one route. State absent removes matching routes.
type Route struct {
	_ struct{} `key:"weight" refused:"ECMP weights are not applied yet"`
	_ struct{} `key:"route-type" refused:"blackhole, unreachable and prohibit routes are not applied yet: such a route has no next-hop interface, and nmoverlay places and verifies routes on theirs"`
	_ struct{} `key:"vrf-name" refused:"nmstate's routes have no vrf-name (it refuses the field too): a route goes into a VRF by its table-id, the VRF's route-table-id"`
	_ struct{} `key:"cwnd" refused:"not applied yet"`
	_ struct{} `key:"source" refused:"not applied yet"`
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
	State            string `json:"state,omitempty"` // "" or "absent"
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
	Config  *DNSConfig `json:"config,omitempty"`
	Running *DNSConfig `json:"running,omitempty" refused:"dns-resolver.running is current state; desired DNS goes in dns-resolver.config"`
	// Interfaces are where the engine may put Config: those named by the policies that
	// set it (Merge fills it in), so DNS never lands on another policy's interface. Not
	// nmstate's schema. Empty: any interface of the desired state.
	Interfaces []string `json:"-"`
}

type DNSConfig struct {
	_ struct{} `key:"options" refused:"resolver options are not applied yet"`

	Server []string `json:"server,omitempty"`
	Search []string `json:"search,omitempty"`
}

// decodeValue takes an OVS bridge's stp as a boolean too, nmstate 1's form.
func (s *STP) decodeValue(d *decoder, path string, v any) bool {
	if b, ok := v.(bool); ok && d.typ == OVSBridge {
		s.Enabled = &b
		return true
	}
	return d.structure(path, v, reflect.ValueOf(s).Elem())
}

// typeFrom is the type the interface's keys give: its type if it is one nmoverlay
// applies, else the one its section implies.
func (*Interface) typeFrom(m map[string]any) InterfaceType {
	if t, ok := m["type"].(string); ok && slices.Contains(SupportedTypes, InterfaceType(t)) {
		return InterfaceType(t)
	}
	for _, s := range sectionTypes {
		if _, ok := m[s.key]; ok {
			return s.typ
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
		case "pci-address":
			d.fail(join(path, "identifier"), "not supported by nmoverlay: matching interfaces by PCI address is not applied yet")
		default:
			d.fail(join(path, "identifier"), "%q is not one of name, mac-address", id)
		}
	}
	it.Type = it.inferType()
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

// checkDecoded takes Open vSwitch's bond modes.
func (b *OVSBond) checkDecoded(d *decoder, path string, _ map[string]any) {
	if b.Mode != "" && !slices.Contains(OVSBondModes, b.Mode) {
		d.fail(join(path, "mode"), "%q is not an OVS bond mode (%s)", b.Mode, strings.Join(OVSBondModes, ", "))
	}
}
