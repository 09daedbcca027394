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

// portOf says which controller an interface is a port of.
type portOf struct {
	// controller is the controller's interface name, or for OVS its profile's UUID.
	controller string
	kind       string // NetworkManager's slave-type: bond, bridge, ovs-port...
	// entry is the controller's entry for the port (kind.portEntry); write writes it.
	entry any
	write func(s settings, entry any)
	// keepsIP: the port has an IP configuration of its own (a layer-3 controller's port,
	// an OVS interface); a bond's or bridge's port has none.
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
// own; a layer-3 controller's port does, and so does an OVS interface.
func (p profileExtras) l2Port() bool { return p.port != nil && !p.port.keepsIP }

// dnsSettings is the static DNS one interface carries, by family (0 IPv4, 1 IPv6); empty
// clears it.
type dnsSettings struct {
	servers   [2][]string
	search    [2][]string
	options   [2][]string // resolv.conf's, with the search domains
	preferred int         // the family NetworkManager lists first
}

// buildProfile makes the owned profile for it. base is the profile in use on that interface
// now (owned or not) or nil: what the desired state does not name is kept from it, as
// nmstate does for partial states. uuid is the owned profile's uuid (new or kept).
func buildProfile(it state.Interface, typ state.InterfaceType, base settings, baseUUID string, p profileExtras, uuid string) (settings, error) {
	s := profileFromBase(base, typ)
	k, ok := kinds[typ]
	if !ok {
		return nil, fmt.Errorf("%s: type %q is not supported", it.Name, typ)
	}
	setConnection(s, it, k.connType, uuid, baseUUID, inputDigest(it, typ, baseUUID, p))

	link := k.link
	if it.MTU != nil && !k.noMTU {
		s.set(link, "mtu", uint32(*it.MTU))
	}
	if v := it.AcceptAllMACAddresses; v != nil {
		s.set("802-3-ethernet", "accept-all-mac-addresses", map[bool]int32{false: 0, true: 1}[*v])
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
	if it.Identifier == state.IdentifyByPCI && it.PCIAddress != nil {
		// As nmstate writes it: the profile matches the device's udev ID_PATH.
		s.set("match", "path", []string{"pci-" + *it.PCIAddress})
	}

	if k.write != nil {
		k.write(s, it, p)
	}
	if typ == state.Ethernet && it.Ethernet != nil && it.Ethernet.SRIOV != nil {
		setSRIOV(s, it.Ethernet.SRIOV)
	}
	if it.Ethtool != nil {
		setEthtool(s, it.Ethtool)
	}
	setOVSDB(s, it.OVSDB)

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
	if it.WaitIP != "" {
		// NetworkManager's counterpart: a family that may not fail must have an address
		// before the interface is activated.
		s.set("ipv4", "may-fail", it.WaitIP != "ipv4" && it.WaitIP != "ipv4+ipv6")
		s.set("ipv6", "may-fail", it.WaitIP != "ipv6" && it.WaitIP != "ipv4+ipv6")
	}
	if k.fixIP != nil {
		k.fixIP(s)
	}
	return s, nil
}

// profileFromBase copies base when it is a profile of the same connection type, so that
// what the desired state does not name is kept; otherwise the profile starts empty.
func profileFromBase(base settings, typ state.InterfaceType) settings {
	if k := kinds[typ]; base != nil && k != nil && base.str("connection", "type") == k.connType {
		return writable(base)
	}
	return settings{}
}

// writable is a copy of settings NetworkManager gave (GetSettings) that it takes back
// (AddConnection2, Update2): without the legacy duplicates of address-data and
// route-data, which it would read as well and whose D-Bus types differ, nor the
// timestamp.
func writable(from settings) settings {
	s := settings{}
	for sec, kv := range from {
		s[sec] = map[string]dbus.Variant{}
		for k, v := range kv {
			s[sec][k] = v
		}
	}
	for _, sec := range []string{"ipv4", "ipv6"} {
		for _, k := range []string{"addresses", "routes"} {
			delete(s[sec], k)
		}
	}
	delete(s["connection"], "timestamp")
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
	for _, k := range kinds {
		if k.portSection != "" && k.portType != port.kind {
			delete(s, k.portSection) // the entry of a controller it was a port of before
		}
	}
	if port.write != nil {
		port.write(s, port.entry)
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
	if typ == state.OVSBridge {
		// An OVS bridge's profile says nothing of its ports, each an ovs-port profile of its
		// own: a port's change (its VLAN, its bond) must not start the bridge again, which
		// takes every port off it.
		in.Interface = withoutPorts(it)
	}
	if p.dns != nil {
		in.DNS = &dnsInput{Servers: p.dns.servers, Search: p.dns.search, Preferred: p.dns.preferred}
		if p.dns.options[0] != nil || p.dns.options[1] != nil {
			in.DNS.Options = &p.dns.options
		}
	}
	if p.port != nil {
		in.Port = &portInput{Controller: p.port.controller, Kind: p.port.kind}
		switch e := p.port.entry.(type) {
		case *state.BridgePort:
			in.Port.VLAN, in.Port.HairpinMode, in.Port.PathCost, in.Port.Priority = e.VLAN, e.STPHairpinMode, e.STPPathCost, e.STPPriority
		case nil:
		default:
			in.Port.Entry = e
		}
	}
	in.OVSVLAN, in.OVSBond, in.Rules = p.ovsVLAN, p.ovsBond, p.rules
	b, _ := json.Marshal(in)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

type dnsInput struct {
	Servers, Search [2][]string
	Preferred       int
	// Options, left out when none: the digests of profiles made before they were applied
	// stay as they were.
	Options *[2][]string `json:",omitempty"`
}

type portInput struct {
	Controller string
	Kind       string
	VLAN       *state.BridgeVLAN
	// A bridge port's spanning tree, left out when not given: the digests of profiles
	// made before these were applied stay as they were.
	HairpinMode *bool `json:",omitempty"`
	PathCost    *int  `json:",omitempty"`
	Priority    *int  `json:",omitempty"`
	// Entry is another controller's entry for the port (a bond's).
	Entry any `json:",omitempty"`
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
	// A family that stays on and says neither its addresses nor DHCP or autoconf keeps
	// them as the base has them, as nmstate keeps what a partial state does not mention
	// (ipv4: {enabled: true, forwarding: true} on an interface with an address).
	if base := s.str(family, "method"); enabled && c.Address == nil && c.DHCP == nil && c.Autoconf == nil && base != "" && base != "disabled" {
		dhcp, autoconf = base == "auto" || base == "dhcp", v6 && base == "auto"
	} else {
		setMethod(s, family, enabled, dhcp, autoconf, c.Address)
	}
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
	if c.Forwarding != nil {
		s.set(family, "forwarding", map[bool]int32{false: forwardingNo, true: forwardingYes}[*c.Forwarding])
	}
}

// setMethod writes the family's method and addresses as a desired state gives them.
func setMethod(s settings, family string, enabled, dhcp, autoconf bool, addresses []state.Address) {
	v6 := family == "ipv6"
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
	case len(addresses) > 0:
		method = "manual"
	case v6:
		method = "link-local"
	default:
		method = "disabled"
	}
	s.set(family, "method", method)
	addrs := []map[string]dbus.Variant{}
	for _, a := range addresses {
		addrs = append(addrs, map[string]dbus.Variant{
			"address": dbus.MakeVariant(a.IP), "prefix": dbus.MakeVariant(uint32(a.PrefixLength))})
	}
	s.set(family, "address-data", addrs)
}

// NetworkManager's ipv4.forwarding values (NMSettingIPConfigForwarding) that nmstate's
// forwarding says; its default (-1) and auto (2) are no answer nmstate gives.
const (
	forwardingNo  int32 = 0
	forwardingYes int32 = 1
)

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
		// A VRF without addresses carries its blackhole routes with the family on, routes
		// alone (NetworkManager 1.46 and later).
		if !slices.ContainsFunc(routes, func(rd map[string]dbus.Variant) bool { return rd["type"].Value() == nil }) {
			s.set(family, "method", "manual")
		} else {
			return fmt.Errorf("routes via this interface need %s enabled", family)
		}
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
	if opts := d.options[fam]; opts != nil {
		s.set(family, "dns-options", opts)
	} else {
		delete(s[family], "dns-options") // unset: resolv.conf's defaults
	}
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
	if r.Source != "" {
		rd["src"] = dbus.MakeVariant(r.Source)
	}
	if r.RouteType != "" {
		rd["type"] = dbus.MakeVariant(r.RouteType)
	}
	if r.Cwnd != nil {
		// The kernel ignores a congestion window that is not locked (ip-route(8)).
		rd["cwnd"] = dbus.MakeVariant(uint32(*r.Cwnd))
		rd["lock-cwnd"] = dbus.MakeVariant(true)
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
