package networkmanager

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"

	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// connType is NetworkManager's connection.type for each nmstate interface type.
var connType = map[state.InterfaceType]string{
	state.Ethernet:     "802-3-ethernet",
	state.Bond:         "bond",
	state.VLAN:         "vlan",
	state.LinuxBridge:  "bridge",
	state.Dummy:        "dummy",
	state.MACVLAN:      "macvlan",
	state.VXLAN:        "vxlan",
	state.VRF:          "vrf",
	state.Veth:         "veth",
	state.OVSBridge:    "ovs-bridge",
	state.OVSPort:      "ovs-port",
	state.OVSInterface: "ovs-interface",
	state.InfiniBand:   "infiniband",
}

var macvlanMode = map[string]uint32{"vepa": 1, "bridge": 2, "private": 3, "passthru": 4, "source": 5}

// portOf says which controller an interface is a port of.
type portOf struct {
	// controller is the controller's interface name, or for OVS its profile's UUID.
	controller string
	kind       string // bond, bridge, vrf, ovs-bridge or ovs-port: NetworkManager's slave-type
	bridgeVLAN *state.BridgeVLAN
	// keepsIP: the port has an IP configuration of its own (a VRF's port, an OVS
	// interface); a bond's or bridge's port has none.
	keepsIP bool
	// bridge is the OVS bridge's name, for an OVS port or its interface.
	bridge string
	// ovsPort is the OVS port's name, for its interface: the interface's own, or its
	// bond's.
	ovsPort string
}

// profileExtras is what one interface's owned profile must say besides the interface itself.
type profileExtras struct {
	port    *portOf
	routes  []state.Route     // routes to add on this interface, or to remove from it
	rules   []state.RouteRule // route rules to add on this interface's profile, or to remove from it
	dns     *dnsSettings      // nil: the DNS settings stay as the base has them
	ovsVLAN *state.BridgeVLAN // an OVS port's VLAN mode and tags
	ovsBond *state.OVSBond    // an OVS port's bonding
}

// ipFamilies are the settings sections of the IP families, indexed as dnsSettings's are.
var ipFamilies = [2]string{"ipv4", "ipv6"}

// l2Port: the interface is a bond or bridge port, which has no IP configuration of its
// own; a VRF port does (a VRF is a layer-3 domain), and so does an OVS interface.
func (p profileExtras) l2Port() bool { return p.port != nil && !p.port.keepsIP }

// dnsSettings is the static DNS one interface carries, by family (0 IPv4, 1 IPv6); empty
// clears it.
type dnsSettings struct {
	servers   [2][]string
	search    [2][]string
	preferred int // the family NetworkManager lists first
}

// buildProfile makes the owned profile for it. base is the profile in use on that interface
// now (owned or not) or nil: what the desired state does not name is kept from it, as
// nmstate does for partial states. uuid is the owned profile's uuid (new or kept).
func buildProfile(it state.Interface, typ state.InterfaceType, base settings, baseUUID string, p profileExtras, uuid string) (settings, error) {
	s := profileFromBase(base, typ)
	ct, ok := connType[typ]
	if !ok {
		return nil, fmt.Errorf("%s: type %q is not supported", it.Name, typ)
	}
	setConnection(s, it, ct, uuid, baseUUID, inputDigest(it, typ, baseUUID, p))

	// The link layer's section: an InfiniBand port's is its own.
	link := "802-3-ethernet"
	if typ == state.InfiniBand {
		link = "infiniband"
	}
	if it.MTU != nil && typ != state.VRF {
		s.set(link, "mtu", uint32(*it.MTU))
	}
	switch {
	case it.MACAddress != nil && it.Identifier == state.IdentifyByMAC:
		// The device's own address: the profile matches it (and nothing else) by it.
		if hw, ok := state.HardwareAddress(*it.MACAddress); ok {
			s.set(link, "mac-address", hw)
		}
	case it.MACAddress != nil:
		s.set("802-3-ethernet", "assigned-mac-address", strings.ToUpper(*it.MACAddress))
	}

	setTypeSection(s, it, typ, p)
	if typ == state.Ethernet && it.Ethernet != nil && it.Ethernet.SRIOV != nil {
		setSRIOV(s, it.Ethernet.SRIOV)
	}
	if it.Ethtool != nil {
		setEthtool(s, it.Ethtool)
	}

	setController(s, p.port)
	if p.l2Port() || typ == state.OVSBridge || typ == state.OVSPort {
		delete(s, "ipv4")
		delete(s, "ipv6")
		return s, nil
	}
	if err := setIP(s, "ipv4", it.IPv4, p); err != nil {
		return nil, fmt.Errorf("%s: %w", it.Name, err)
	}
	if err := setIP(s, "ipv6", it.IPv6, p); err != nil {
		return nil, fmt.Errorf("%s: %w", it.Name, err)
	}
	return s, nil
}

// profileFromBase copies base when it is a profile of the same connection type, so that
// what the desired state does not name is kept; otherwise the profile starts empty.
func profileFromBase(base settings, typ state.InterfaceType) settings {
	s := settings{}
	if base != nil && base.str("connection", "type") == connType[typ] {
		for sec, kv := range base {
			s[sec] = map[string]dbus.Variant{}
			for k, v := range kv {
				s[sec][k] = v
			}
		}
		// Legacy duplicates of address-data/route-data: NetworkManager would read both.
		for _, sec := range []string{"ipv4", "ipv6"} {
			for _, k := range []string{"addresses", "routes"} {
				delete(s[sec], k)
			}
		}
		delete(s["connection"], "timestamp")
	}
	return s
}

// setConnection writes the connection section (the interface, type ct, autoconnect, LLDP)
// and the user data that marks the profile as nmoverlay's and records what it is built
// from (digest) and on (baseUUID).
func setConnection(s settings, it state.Interface, ct, uuid, baseUUID, digest string) {
	// br-ex has three profiles (bridge, port, interface): ids tell them apart in nmcli,
	// as nmstate's do.
	id := it.Name
	switch it.Type {
	case state.OVSBridge:
		id += "-br"
	case state.OVSPort:
		id = "ovs-port-" + id
	}
	if it.ProfileName != nil {
		id = *it.ProfileName
	}
	s.set("connection", "id", id)
	s.set("connection", "uuid", uuid)
	s.set("connection", "type", ct)
	s.set("connection", "interface-name", it.Name)
	s.set("connection", "autoconnect", true)
	// Above the persistent profiles (priority 0), so after a restart of NetworkManager
	// the owned profile wins the interface as it did when applied.
	s.set("connection", "autoconnect-priority", int32(100))
	user := map[string]string{OwnerKey: OwnerValue, InputKey: digest, BaseKey: baseUUID}
	if it.Description != nil {
		user["nmstate.interface.description"] = *it.Description
	}
	s.set("user", "data", user)
	if it.LLDP != nil && it.LLDP.Enabled != nil {
		lldp := int32(0)
		if *it.LLDP.Enabled {
			lldp = 1
		}
		s.set("connection", "lldp", lldp)
	}
}

// setTypeSection writes the section of the interface's type (bond, bridge, vlan, ...).
func setTypeSection(s settings, it state.Interface, typ state.InterfaceType, p profileExtras) {
	switch typ {
	case state.OVSBridge:
		// No autoconnect-slaves: the engine starts each OVS port and interface itself, and
		// one NetworkManager started when the bridge came up would replace it midway.
		setOVSBridgeSection(s, it.Bridge)
	case state.OVSPort:
		setOVSPortSection(s, p.ovsVLAN)
		setOVSBond(s, p.ovsBond)
	case state.OVSInterface:
		kind := "internal"
		if it.Patch != nil {
			kind = "patch"
			s.set("ovs-patch", "peer", it.Patch.Peer)
		}
		s.set("ovs-interface", "type", kind)
	case state.Bond:
		if b := it.LinkAggregation; b != nil {
			opts := map[string]string{"mode": string(b.Mode)}
			for k, v := range b.Options {
				opts[k] = v
			}
			s.set("bond", "options", opts)
		}
		s.set("connection", "autoconnect-slaves", int32(1))
	case state.VLAN:
		if v := it.VLAN; v != nil {
			s.set("vlan", "id", uint32(v.ID))
			s.set("vlan", "parent", v.BaseIface)
		}
	case state.LinuxBridge:
		setBridgeSection(s, it.Bridge)
		s.set("connection", "autoconnect-slaves", int32(1))
	case state.VRF:
		if v := it.VRF; v != nil {
			s.set("vrf", "table", uint32(v.RouteTableID))
		}
		s.set("connection", "autoconnect-slaves", int32(1))
	case state.MACVLAN:
		if m := it.MACVLAN; m != nil {
			s.set("macvlan", "parent", m.BaseIface)
			s.set("macvlan", "mode", macvlanMode[m.Mode])
			s.set("macvlan", "tap", false)
			if m.Promiscuous != nil {
				s.set("macvlan", "promiscuous", *m.Promiscuous)
			}
		}
	case state.VXLAN:
		if x := it.VXLAN; x != nil {
			s.set("vxlan", "id", uint32(x.ID))
			if x.BaseIface != "" {
				s.set("vxlan", "parent", x.BaseIface)
			}
			s.set("vxlan", "remote", x.Remote)
			if x.Local != "" {
				s.set("vxlan", "local", x.Local)
			}
			if x.DestinationPort != nil {
				s.set("vxlan", "destination-port", uint32(*x.DestinationPort))
			}
		}
	case state.Veth:
		if v := it.Veth; v != nil {
			s.set("veth", "peer", v.Peer)
		}
	case state.InfiniBand:
		if ib := it.InfiniBand; ib != nil {
			if ib.Mode != "" {
				s.set("infiniband", "transport-mode", ib.Mode)
			}
			if ib.PKey != nil && *ib.PKey != state.DefaultPKey {
				s.set("infiniband", "p-key", int32(*ib.PKey))
			}
			if ib.BaseIface != "" {
				s.set("infiniband", "parent", ib.BaseIface)
			}
		}
		if _, ok := s["infiniband"]; !ok {
			s["infiniband"] = map[string]dbus.Variant{}
		}
	case state.Dummy:
		if _, ok := s["dummy"]; !ok {
			s["dummy"] = map[string]dbus.Variant{}
		}
	}
}

// setBridgeSection writes the bridge section: STP if the desired state sets it, and VLAN
// filtering on when any port filters. The section is written even when empty.
func setBridgeSection(s settings, b *state.BridgeConfig) {
	if b != nil {
		if b.Options != nil && b.Options.STP != nil && b.Options.STP.Enabled != nil {
			s.set("bridge", "stp", *b.Options.STP.Enabled)
		}
		filtering := false
		for _, port := range b.Port {
			filtering = filtering || port.VLAN != nil
		}
		s.set("bridge", "vlan-filtering", filtering)
	}
	if _, ok := s["bridge"]; !ok {
		s["bridge"] = map[string]dbus.Variant{}
	}
}

// setOVSBridgeSection writes the ovs-bridge section: the options the desired state sets,
// on top of what the base has. The section is written even when empty.
func setOVSBridgeSection(s settings, b *state.BridgeConfig) {
	if _, ok := s["ovs-bridge"]; !ok {
		s["ovs-bridge"] = map[string]dbus.Variant{}
	}
	if b == nil || b.Options == nil {
		return
	}
	o := b.Options
	if o.STP != nil && o.STP.Enabled != nil {
		s.set("ovs-bridge", "stp-enable", *o.STP.Enabled)
	}
	if o.RSTP != nil {
		s.set("ovs-bridge", "rstp-enable", *o.RSTP)
	}
	if o.MCastSnoopingEnable != nil {
		s.set("ovs-bridge", "mcast-snooping-enable", *o.MCastSnoopingEnable)
	}
	if o.FailMode != nil {
		s.set("ovs-bridge", "fail-mode", *o.FailMode)
	}
	if o.Datapath != nil {
		s.set("ovs-bridge", "datapath-type", *o.Datapath)
	}
}

// setOVSPortSection writes an OVS port's VLAN mode, tag and trunks: none, an access port,
// or a trunk, native-untagged with enable-native.
func setOVSPortSection(s settings, v *state.BridgeVLAN) {
	s["ovs-port"] = map[string]dbus.Variant{}
	if v == nil {
		return
	}
	switch {
	case v.Mode == "access":
		s.set("ovs-port", "vlan-mode", "access")
	case v.EnableNative != nil && *v.EnableNative:
		s.set("ovs-port", "vlan-mode", "native-untagged")
	default:
		s.set("ovs-port", "vlan-mode", "trunk")
	}
	if v.Tag != nil {
		s.set("ovs-port", "tag", uint32(*v.Tag))
	}
	trunks := []map[string]dbus.Variant{}
	for _, t := range v.TrunkTags {
		start, end := 0, 0
		switch {
		case t.ID != nil:
			start, end = *t.ID, *t.ID
		case t.IDRange != nil:
			start, end = t.IDRange.Min, t.IDRange.Max
		}
		trunks = append(trunks, map[string]dbus.Variant{"start": dbus.MakeVariant(uint32(start)), "end": dbus.MakeVariant(uint32(end))})
	}
	if len(trunks) > 0 {
		s.set("ovs-port", "trunks", trunks)
	}
}

// ovsBondSettings are the ovs-port settings of each nmstate OVS bond mode: bond-mode and
// lacp. balance-tcp hashes on layer 4 only over LACP (Open vSwitch falls back to
// active-backup without it), and nmstate's lacp mode is LACP with Open vSwitch's default
// hashing (no bond-mode).
var ovsBondSettings = map[string][2]string{
	"active-backup": {"active-backup", "off"},
	"balance-slb":   {"balance-slb", "off"},
	"balance-tcp":   {"balance-tcp", "active"},
	"lacp":          {"", "active"},
}

// setOVSBond makes an OVS port a bond (setOVSPortSection started its section afresh).
func setOVSBond(s settings, b *state.OVSBond) {
	if b == nil {
		return
	}
	mode := ovsBondSettings[b.Mode]
	if mode[0] != "" {
		s.set("ovs-port", "bond-mode", mode[0])
	}
	s.set("ovs-port", "lacp", mode[1])
	if b.UpDelay != nil {
		s.set("ovs-port", "bond-updelay", uint32(*b.UpDelay))
	}
	if b.DownDelay != nil {
		s.set("ovs-port", "bond-downdelay", uint32(*b.DownDelay))
	}
}

// ovsBondMode is the nmstate mode of an OVS port's applied bond-mode and lacp.
func ovsBondMode(a settings) string {
	mode, lacp := a.str("ovs-port", "bond-mode"), a.str("ovs-port", "lacp")
	switch {
	case mode == "" && lacp != "" && lacp != "off":
		return "lacp"
	case mode == "":
		return "active-backup" // Open vSwitch's default bond mode
	}
	return mode
}

// setController makes the profile a port of its controller, or of none: a controller
// kept from base is cleared.
func setController(s settings, port *portOf) {
	delete(s["connection"], "master")
	delete(s["connection"], "slave-type")
	if port == nil {
		return
	}
	s.set("connection", "master", port.controller)
	s.set("connection", "slave-type", port.kind)
	if port.kind == "bridge" {
		s.set("bridge-port", "vlans", bridgeVLANs(port.bridgeVLAN))
	} else {
		delete(s, "bridge-port")
	}
}

// inputDigest identifies what a profile is built from.
func inputDigest(it state.Interface, typ state.InterfaceType, baseUUID string, p profileExtras) string {
	in := struct {
		Interface state.Interface
		Type      state.InterfaceType
		Base      string
		Port      *portInput
		Routes    []state.Route
		DNS       *dnsInput
		OVSVLAN   *state.BridgeVLAN `json:",omitempty"`
		OVSBond   *state.OVSBond    `json:",omitempty"`
		Rules     []state.RouteRule `json:",omitempty"`
	}{Interface: it, Type: typ, Base: baseUUID, Routes: p.routes}
	if typ == state.OVSBridge && it.Bridge != nil {
		// An OVS bridge's profile says nothing of its ports, each an ovs-port profile of its
		// own: a port's change (its VLAN, its bond) must not start the bridge again, which
		// takes every port off it.
		b := *it.Bridge
		b.Port = nil
		in.Interface.Bridge = &b
	}
	if p.dns != nil {
		in.DNS = &dnsInput{p.dns.servers, p.dns.search, p.dns.preferred}
	}
	if p.port != nil {
		in.Port = &portInput{p.port.controller, p.port.kind, p.port.bridgeVLAN}
	}
	in.OVSVLAN, in.OVSBond, in.Rules = p.ovsVLAN, p.ovsBond, p.rules
	b, _ := json.Marshal(in)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

type dnsInput struct {
	Servers, Search [2][]string
	Preferred       int
}

type portInput struct {
	Controller string
	Kind       string
	VLAN       *state.BridgeVLAN
}

// setIP writes one family's section. c nil keeps what base had; a profile without the
// section (a new one, or a port leaving its controller with no profile of its own to go
// back to) gets the family disabled, nmstate's default for new interfaces.
func setIP(s settings, family string, c *state.IPConfig, p profileExtras) error {
	if c == nil && s.str(family, "method") == "" {
		s.set(family, "method", "disabled")
	}
	if c != nil {
		setIPConfig(s, family, c)
	}
	if len(p.routes) > 0 {
		if err := setRoutes(s, family, p.routes); err != nil {
			return err
		}
	}
	if len(p.rules) > 0 {
		setRoutingRules(s, family, p.rules)
	}
	if p.dns != nil {
		setDNS(s, family, p.dns)
	}
	return nil
}

// setIPConfig writes what the desired state says of one family: the method, the
// addresses, DHCP's timeout and the auto-* settings.
func setIPConfig(s settings, family string, c *state.IPConfig) {
	v6 := family == "ipv6"
	enabled := c.Enabled == nil || *c.Enabled
	dhcp := c.DHCP != nil && *c.DHCP
	autoconf := c.Autoconf != nil && *c.Autoconf
	var method string
	switch {
	case !enabled:
		method = "disabled"
	case v6 && autoconf:
		method = "auto"
	case v6 && dhcp:
		method = "dhcp"
	case !v6 && dhcp:
		method = "auto"
	case len(c.Address) > 0:
		method = "manual"
	case v6:
		method = "link-local"
	default:
		method = "disabled"
	}
	s.set(family, "method", method)
	addrs := []map[string]dbus.Variant{}
	for _, a := range c.Address {
		addrs = append(addrs, map[string]dbus.Variant{
			"address": dbus.MakeVariant(a.IP), "prefix": dbus.MakeVariant(uint32(a.PrefixLength))})
	}
	s.set(family, "address-data", addrs)
	if dhcp || autoconf {
		// Never give up on DHCP (nmstate does the same): with NetworkManager's 45 s a
		// DHCP server down at a lease renewal would take the interface down for good.
		// An apply does not wait for ever: its activation wait fails the interface,
		// named, and rolls back.
		s.set(family, "dhcp-timeout", int32(math.MaxInt32))
	}
	if c.AutoDNS != nil {
		s.set(family, "ignore-auto-dns", !*c.AutoDNS)
	}
	if c.AutoGateway != nil {
		s.set(family, "never-default", !*c.AutoGateway)
	}
	if c.AutoRoutes != nil {
		s.set(family, "ignore-auto-routes", !*c.AutoRoutes)
	}
	if c.AutoRouteTableID != nil {
		s.set(family, "route-table", uint32(*c.AutoRouteTableID))
	}
	if c.AutoRouteMetric != nil {
		s.set(family, "route-metric", int64(*c.AutoRouteMetric))
	}
}

// setRoutes adds the family's routes to those the profile has and removes those an
// absent route selects; routes of the other family are skipped.
func setRoutes(s settings, family string, want []state.Route) error {
	v6 := family == "ipv6"
	routes := existingRoutes(s, family)
	name := s.str("connection", "interface-name")
	for _, r := range want {
		if f := r.Family(); f != 0 && (f == 6) != v6 {
			continue
		}
		if r.State == "absent" {
			routes = slices.DeleteFunc(routes, func(rd map[string]dbus.Variant) bool { return r.Selects(runningRoute(rd, name)) })
			continue
		}
		pfx, err := netip.ParsePrefix(r.Destination)
		if err != nil {
			continue
		}
		routes = putRoute(routes, routeData(r, pfx))
	}
	if s.str(family, "method") == "disabled" && len(routes) > 0 {
		return fmt.Errorf("routes via this interface need %s enabled", family)
	}
	s.set(family, "route-data", routes)
	return nil
}

// setDNS writes one family's static DNS servers, search domains and priority.
func setDNS(s settings, family string, d *dnsSettings) {
	fam := slices.Index(ipFamilies[:], family)
	if family == "ipv6" {
		servers := [][]byte{}
		for _, srv := range d.servers[fam] {
			b := netip.MustParseAddr(srv).As16()
			servers = append(servers, b[:])
		}
		s.set(family, "dns", servers)
	} else {
		servers := []uint32{}
		for _, srv := range d.servers[fam] {
			b := netip.MustParseAddr(srv).As4()
			// ipv4.dns is a list of addresses in network byte order, as uint32
			servers = append(servers, uint32(b[0])|uint32(b[1])<<8|uint32(b[2])<<16|uint32(b[3])<<24)
		}
		s.set(family, "dns", servers)
	}
	search := d.search[fam]
	if search == nil {
		search = []string{}
	}
	s.set(family, "dns-search", search)
	// NetworkManager lists the servers of the lower priority first: the family of
	// the first server stated comes first, as nmstate does.
	priority := int32(0)
	if len(d.servers[fam]) > 0 || len(search) > 0 {
		priority = 50
		if fam == d.preferred {
			priority = 40
		}
	}
	s.set(family, "dns-priority", priority)
}

func routeData(r state.Route, pfx netip.Prefix) map[string]dbus.Variant {
	rd := map[string]dbus.Variant{
		"dest":   dbus.MakeVariant(pfx.Masked().Addr().String()),
		"prefix": dbus.MakeVariant(uint32(pfx.Bits())),
	}
	if r.NextHopAddress != "" {
		rd["next-hop"] = dbus.MakeVariant(r.NextHopAddress)
	}
	if r.Metric != nil {
		rd["metric"] = dbus.MakeVariant(uint32(*r.Metric))
	}
	if r.TableID != nil && *r.TableID != 0 {
		rd["table"] = dbus.MakeVariant(uint32(*r.TableID))
	}
	return rd
}

func existingRoutes(s settings, family string) []map[string]dbus.Variant {
	v, ok := s[family]["route-data"]
	if !ok {
		return []map[string]dbus.Variant{}
	}
	routes, _ := v.Value().([]map[string]dbus.Variant)
	return append([]map[string]dbus.Variant{}, routes...)
}

// routeKey identifies a route by destination, next hop and table.
func routeKey(m map[string]dbus.Variant) string {
	return fmt.Sprint(m["dest"].Value(), "/", m["prefix"].Value(), " ", variantOr(m, "next-hop", ""), " ", variantOr(m, "table", uint32(0)))
}

// putRoute replaces the route with rd's key in place, or appends rd: the list keeps its
// order, so applying the same routes again changes nothing.
func putRoute(routes []map[string]dbus.Variant, rd map[string]dbus.Variant) []map[string]dbus.Variant {
	k := routeKey(rd)
	for i, r := range routes {
		if routeKey(r) == k {
			routes[i] = rd
			return routes
		}
	}
	return append(routes, rd)
}

func variantOr(m map[string]dbus.Variant, k string, def any) any {
	if v, ok := m[k]; ok {
		return v.Value()
	}
	return def
}

// bridgeVLANs turns a port's VLAN filtering into bridge-port.vlans.
func bridgeVLANs(v *state.BridgeVLAN) []map[string]dbus.Variant {
	out := []map[string]dbus.Variant{}
	if v == nil {
		return out
	}
	entry := func(start, end int, pvid, untagged bool) map[string]dbus.Variant {
		return map[string]dbus.Variant{
			"vid-start": dbus.MakeVariant(uint16(start)), "vid-end": dbus.MakeVariant(uint16(end)),
			"pvid": dbus.MakeVariant(pvid), "untagged": dbus.MakeVariant(untagged),
		}
	}
	if v.Mode == "access" && v.Tag != nil {
		return append(out, entry(*v.Tag, *v.Tag, true, true))
	}
	for _, t := range v.TrunkTags {
		switch {
		case t.ID != nil:
			out = append(out, entry(*t.ID, *t.ID, false, false))
		case t.IDRange != nil:
			out = append(out, entry(t.IDRange.Min, t.IDRange.Max, false, false))
		}
	}
	if v.EnableNative != nil && *v.EnableNative && v.Tag != nil {
		out = append(out, entry(*v.Tag, *v.Tag, true, true))
	}
	return out
}
