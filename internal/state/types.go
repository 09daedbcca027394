// Package state is the network state model: the nmstate schema that kubernetes-nmstate
// users write in desiredState (the subset nmoverlay supports), parsed and validated with
// errors that name the field path, merged across the policies of one node, ordered by
// dependency, and compared with the current state. No I/O.
package state

import "net/netip"

// State is a network state in nmstate's schema: a desired state parsed from a policy,
// or a current state reported by a backend.
type State struct {
	Interfaces  []Interface  `json:"interfaces,omitempty"`
	Routes      *Routes      `json:"routes,omitempty"`
	DNSResolver *DNSResolver `json:"dns-resolver,omitempty"`
	RouteRules  *RouteRules  `json:"route-rules,omitempty"`
	OVN         *OVN         `json:"ovn,omitempty"`
}

// RouteRules is the route-rules section: policy routing.
type RouteRules struct {
	Config []RouteRule `json:"config,omitempty"`
}

// RouteRule is one policy routing rule. State absent removes the rules it selects, every
// field it leaves out a wildcard.
type RouteRule struct {
	Family     string `json:"family,omitempty"` // ipv4 or ipv6; implied by ip-from or ip-to
	IPFrom     string `json:"ip-from,omitempty"`
	IPTo       string `json:"ip-to,omitempty"`
	Priority   *int   `json:"priority,omitempty"`
	RouteTable *int   `json:"route-table,omitempty"`
	FWMark     *int   `json:"fwmark,omitempty"`
	FWMask     *int   `json:"fwmask,omitempty"`
	IIF        string `json:"iif,omitempty"`
	// Action is blackhole, unreachable or prohibit; none looks the route-table up.
	Action               string `json:"action,omitempty"`
	SuppressPrefixLength *int   `json:"suppress-prefix-length,omitempty"`
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
	Localnet string `json:"localnet"`
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
	Name  string         `json:"name"`
	Type  InterfaceType  `json:"type,omitempty"`
	State InterfaceState `json:"state,omitempty"`
	// ProfileName names the interface's profile (NetworkManager's connection id), as
	// nmstate does; the interface's name by default.
	ProfileName *string `json:"profile-name,omitempty"`
	// Identifier says how the interface finds its device: by name (""), or by MAC address
	// (IdentifyByMAC: mac-address is then the device's, matched, not set).
	Identifier  string  `json:"identifier,omitempty"`
	Description *string `json:"description,omitempty"`
	MTU         *int    `json:"mtu,omitempty"`
	MACAddress  *string `json:"mac-address,omitempty"`
	// CopyMACFrom names the interface whose MAC address this one takes, read when applied
	// (br-ex takes its uplink's, so that DHCP leases and switch ports stay the same).
	CopyMACFrom *string   `json:"copy-mac-from,omitempty"`
	IPv4        *IPConfig `json:"ipv4,omitempty"`
	IPv6        *IPConfig `json:"ipv6,omitempty"`
	LLDP        *LLDP     `json:"lldp,omitempty"`
	// Ethtool is the ethtool section: offload features.
	Ethtool *EthtoolConfig `json:"ethtool,omitempty"`
	// Ethernet is the ethernet section: a physical function's SR-IOV VFs.
	Ethernet *EthernetConfig `json:"ethernet,omitempty"`

	LinkAggregation *BondConfig    `json:"link-aggregation,omitempty"`
	VLAN            *VLANConfig    `json:"vlan,omitempty"`
	Bridge          *BridgeConfig  `json:"bridge,omitempty"`
	VRF             *VRFConfig     `json:"vrf,omitempty"`
	MACVLAN         *MACVLANConfig `json:"mac-vlan,omitempty"`
	VXLAN           *VXLANConfig   `json:"vxlan,omitempty"`
	Veth            *VethConfig    `json:"veth,omitempty"`
	// InfiniBand is an infiniband interface's mode and partition.
	InfiniBand *InfiniBandConfig `json:"infiniband,omitempty"`
	// Patch makes an ovs-interface a patch port to another bridge's patch port.
	Patch *OVSPatch `json:"patch,omitempty"`
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
	Peer string `json:"peer"`
}

// IPConfig is an interface's ipv4 or ipv6 section.
type IPConfig struct {
	Enabled     *bool     `json:"enabled,omitempty"`
	DHCP        *bool     `json:"dhcp,omitempty"`
	Autoconf    *bool     `json:"autoconf,omitempty"` // ipv6 only
	Address     []Address `json:"address,omitempty"`
	AutoDNS     *bool     `json:"auto-dns,omitempty"`
	AutoGateway *bool     `json:"auto-gateway,omitempty"`
	AutoRoutes  *bool     `json:"auto-routes,omitempty"`
	// AutoRouteMetric is the metric of the routes DHCP or autoconf brings (the br-ex
	// customization's auto-route-metric: 48).
	AutoRouteMetric *int `json:"auto-route-metric,omitempty"`
	// AutoRouteTableID is the routing table the routes DHCP or autoconf brings go to.
	AutoRouteTableID *int `json:"auto-route-table-id,omitempty"`
}

// Address is a static address.
type Address struct {
	IP           string `json:"ip"`
	PrefixLength int    `json:"prefix-length"`
}

// LLDP is an interface's lldp section. Neighbors is current state only: what the
// interface hears, one list of TLVs per neighbour, in nmstate's form (a desired state's is
// ignored, as nmstate ignores it).
type LLDP struct {
	Enabled   *bool              `json:"enabled,omitempty"`
	Neighbors [][]map[string]any `json:"neighbors,omitempty"`
}

// BondMode is a Linux bonding mode by nmstate's name.
type BondMode string

// BondModes are the modes nmstate names.
var BondModes = []BondMode{"balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"}

// BondConfig is link-aggregation.
type BondConfig struct {
	Mode    BondMode    `json:"mode,omitempty"`
	Options BondOptions `json:"options,omitempty"`
	Port    []string    `json:"port"`
}

// VLANConfig is vlan.
type VLANConfig struct {
	ID        int    `json:"id"`
	BaseIface string `json:"base-iface"`
}

// BridgeConfig is bridge (linux-bridge or ovs-bridge).
type BridgeConfig struct {
	Options *BridgeOptions `json:"options,omitempty"`
	Port    []BridgePort   `json:"port"`
	// AllowExtraPatchPorts (ovs-bridge) lets ports nmoverlay did not make stay on the
	// bridge (OVN's patch ports). nmoverlay never removes OVS objects it did not make, so
	// false does not remove them either: it is accepted for compatibility.
	AllowExtraPatchPorts *bool `json:"allow-extra-patch-ports,omitempty"`
}

// BridgeOptions are a bridge's options; all but stp are ovs-bridge only.
type BridgeOptions struct {
	STP                 *STP    `json:"stp,omitempty"`
	RSTP                *bool   `json:"rstp,omitempty"`
	MCastSnoopingEnable *bool   `json:"mcast-snooping-enable,omitempty"`
	FailMode            *string `json:"fail-mode,omitempty"`
	// Datapath is the OVS datapath type: system (the kernel's) or netdev (userspace).
	Datapath *string `json:"datapath,omitempty"`
}

// OVSFailModes are the fail modes Open vSwitch knows.
var OVSFailModes = []string{"secure", "standalone"}

// OVSDatapaths are the datapath types Open vSwitch knows.
var OVSDatapaths = []string{"system", "netdev"}

type STP struct {
	Enabled *bool `json:"enabled,omitempty"`
}

// BridgePort is a bridge port with its optional VLAN filtering.
type BridgePort struct {
	Name string      `json:"name"`
	VLAN *BridgeVLAN `json:"vlan,omitempty"`
	// LinkAggregation makes an OVS bridge's port a bond: one OVSDB port over several
	// interfaces, named by Name, which is no kernel interface.
	LinkAggregation *OVSBond `json:"link-aggregation,omitempty"`
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
	Mode      string        `json:"mode"`
	Port      []OVSBondPort `json:"port"`
	UpDelay   *int          `json:"bond-updelay,omitempty"`
	DownDelay *int          `json:"bond-downdelay,omitempty"`
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
	Name string `json:"name"`
}

// OVSBondModes are nmstate's OVS bond modes: Open vSwitch's three bond modes, and lacp
// (LACP negotiated, Open vSwitch's default active-backup hashing).
var OVSBondModes = []string{"active-backup", "balance-slb", "balance-tcp", "lacp"}

// BridgeVLAN is a bridge port's VLAN filtering.
type BridgeVLAN struct {
	Mode         string     `json:"mode,omitempty"` // access or trunk
	Tag          *int       `json:"tag,omitempty"`
	EnableNative *bool      `json:"enable-native,omitempty"`
	TrunkTags    []TrunkTag `json:"trunk-tags,omitempty"`
}

// TrunkTag is one VLAN id or a range of them.
type TrunkTag struct {
	ID      *int     `json:"id,omitempty"`
	IDRange *IDRange `json:"id-range,omitempty"`
}

type IDRange struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// VRFConfig is vrf.
type VRFConfig struct {
	Port         []string `json:"port"`
	RouteTableID int      `json:"route-table-id"`
}

// MACVLANConfig is mac-vlan.
type MACVLANConfig struct {
	BaseIface   string `json:"base-iface"`
	Mode        string `json:"mode"`
	Promiscuous *bool  `json:"promiscuous,omitempty"`
}

// MACVLANModes are the modes nmstate names.
var MACVLANModes = []string{"vepa", "bridge", "private", "passthru", "source"}

// VXLANConfig is vxlan.
type VXLANConfig struct {
	ID              int    `json:"id"`
	BaseIface       string `json:"base-iface,omitempty"`
	Remote          string `json:"remote,omitempty"`
	Local           string `json:"local,omitempty"`
	DestinationPort *int   `json:"destination-port,omitempty"`
}

// VethConfig is veth.
type VethConfig struct {
	Peer string `json:"peer"`
}

// Routes is the routes section.
type Routes struct {
	Config  []Route `json:"config,omitempty"`
	Running []Route `json:"running,omitempty"` // current state only
}

// Route is one route. State absent removes matching routes.
type Route struct {
	Destination      string `json:"destination"`
	NextHopAddress   string `json:"next-hop-address,omitempty"`
	NextHopInterface string `json:"next-hop-interface,omitempty"`
	Metric           *int   `json:"metric,omitempty"`
	TableID          *int   `json:"table-id,omitempty"`
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
	Running *DNSConfig `json:"running,omitempty"` // current state only
	// Interfaces are where the engine may put Config: those named by the policies that
	// set it (Merge fills it in), so DNS never lands on another policy's interface. Not
	// nmstate's schema. Empty: any interface of the desired state.
	Interfaces []string `json:"-"`
}

type DNSConfig struct {
	Server []string `json:"server,omitempty"`
	Search []string `json:"search,omitempty"`
}
