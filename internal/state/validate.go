package state

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/nmoverlay/nmoverlay/api/field"
)

// inferType names the type a type-specific section implies, for interfaces given without one.
func (it Interface) inferType() InterfaceType {
	if it.Type == "" && it.Section != nil {
		return it.Section.Types()[0]
	}
	return it.Type
}

// Validate checks what the schema alone cannot: names, addresses, sections that fit the
// type, and references between interfaces. Parse runs it; merged states are checked again.
func Validate(s State) field.Errors {
	var errs field.Errors
	fail := func(path, format string, args ...any) {
		errs = append(errs, &field.Error{Path: path, Reason: fmt.Sprintf(format, args...)})
	}
	byName := map[string]int{}
	controllerOf := map[string]string{}
	for i := range s.Interfaces {
		it := s.Interfaces[i]
		it.Type = it.inferType()
		p := index("interfaces", i)
		if err := checkIfname(it.Name); err != "" {
			fail(join(p, "name"), "%q %s", it.Name, err)
		}
		if j, dup := byName[it.Key()]; dup && it.Name != "" {
			fail(join(p, "name"), "%q is also interfaces[%d]; name each interface once", it.Name, j)
		}
		byName[it.Key()] = i
		validateSections(p, it, fail)
		if it.State == Absent {
			continue
		}
		if it.Type == OVSBridge {
			validateOVSBridgeOwn(p, it, fail)
		}
		if it.OVSDB != nil {
			if it.Type != OVSBridge && it.Type != OVSInterface {
				fail(join(p, "ovs-db"), "only an Open vSwitch bridge or interface has an OVSDB row (this is of type %s)", orNone(string(it.Type)))
			}
			it.OVSDB.validate(join(p, "ovs-db"), fail)
		}
		switch it.Type {
		case IPsec:
			validateIPsecOwn(p, it, fail)
		case Loopback:
			validateLoopbackOwn(p, it, fail)
		}
		// Without identifier: pci-address it is what Show reports, ignored when applied as
		// nmstate ignores it: a state copied from a NodeNetworkState (or captured) applies.
		if pci := it.PCIAddress; pci != nil && !pciAddressPattern.MatchString(*pci) {
			fail(join(p, "pci-address"), "%q is not a PCI address (domain:bus:device.function, as 0000:03:00.1)", *pci)
		}
		if from := it.CopyMACFrom; from != nil {
			switch {
			case it.MACAddress != nil:
				fail(join(p, "copy-mac-from"), "give mac-address or copy-mac-from, not both")
			case *from == it.Name:
				fail(join(p, "copy-mac-from"), "%q is this interface", *from)
			case checkIfname(*from) != "":
				fail(join(p, "copy-mac-from"), "%q %s", *from, checkIfname(*from))
			}
		}
		if it.MACAddress != nil {
			hw, ok := HardwareAddress(*it.MACAddress)
			switch {
			case it.Type == InfiniBand && (!ok || len(hw) < 20):
				fail(join(p, "mac-address"), "%q is not an IP-over-InfiniBand hardware address (20 octets)", *it.MACAddress)
			case it.Type != InfiniBand && (!ok || len(hw) != 6):
				fail(join(p, "mac-address"), "%q is not an Ethernet MAC address (xx:xx:xx:xx:xx:xx)", *it.MACAddress)
			}
			if it.Type == InfiniBand && it.Identifier != IdentifyByMAC && ok {
				fail(join(p, "mac-address"), "an InfiniBand address is the adapter's: give it with identifier: mac-address to find the port by it")
			}
		}
		if it.Ethernet != nil && it.Ethernet.SRIOV != nil {
			if it.Type != Ethernet && it.Type != "" {
				fail(join(p, "ethernet"), "sr-iov is an ethernet interface's (a physical function), not a %s's", it.Type)
			}
			validateSRIOV(join(p, "ethernet.sr-iov"), it.Ethernet.SRIOV, fail)
		}
		for _, f := range []struct {
			family string
			c      *IPConfig
		}{{"ipv4", it.IPv4}, {"ipv6", it.IPv6}} {
			if strings.Contains(it.WaitIP, f.family) && f.c != nil && f.c.Enabled != nil && !*f.c.Enabled {
				fail(join(p, "wait-ip"), "%s waits for an %s address while %s is disabled", it.WaitIP, f.family, f.family)
			}
		}
		validateIP(join(p, "ipv4"), it.IPv4, false, fail)
		validateIP(join(p, "ipv6"), it.IPv6, true, fail)
		if it.MTU != nil && *it.MTU < 1280 && it.IPv6 != nil && it.IPv6.Enabled != nil && *it.IPv6.Enabled {
			fail(join(p, "mtu"), "%d is below 1280, the IPv6 minimum, while ipv6 is enabled", *it.MTU)
		}
		for _, ref := range it.refsOf(RefPort) {
			port := ref.Name
			if prev, ok := controllerOf[port]; ok && prev != it.Name {
				fail(join(p, portField(it)), "%q is already a port of %q; an interface has one controller", port, prev)
			}
			controllerOf[port] = it.Name
			if port == it.Name && it.Type != OVSBridge { // an OVS bridge's internal interface has its name
				fail(join(p, portField(it)), "%q cannot be a port of itself", port)
			}
		}
		if b, ok := it.Section.(*BridgeConfig); ok && it.Type == OVSBridge {
			validateOVSBonds(p, it.Name, b, byName, s.Interfaces, fail)
		}
	}
	// References to interfaces this same state removes.
	for i, it := range s.Interfaces {
		if it.State == Absent {
			continue
		}
		p := index("interfaces", i)
		for _, ref := range it.refsOf(RefBase, RefPort, RefController) {
			if j, ok := byName[ref.Name]; ok && s.Interfaces[j].State == Absent {
				fail(join(p, ref.Field), "%q is removed by interfaces[%d] (state: absent) in the same desired state", ref.Name, j)
			}
		}
	}
	validateOVSPorts(s, byName, controllerOf, fail)
	validateControllers(s, byName, controllerOf, fail)
	if s.RouteRules != nil {
		for i, r := range s.RouteRules.Config {
			validateRouteRule(index("route-rules.config", i), r, fail)
		}
	}
	if s.OVN != nil {
		validateOVN(s.OVN, fail)
	}
	if s.Routes != nil {
		tables := VRFTables(s)
		for i, r := range s.Routes.Config {
			p := index("routes.config", i)
			validateRoute(p, r, fail)
			if r.VRFName == "" {
				continue
			}
			if j, ok := byName[r.VRFName]; ok && s.Interfaces[j].State != Absent && s.Interfaces[j].inferType() != VRF {
				fail(join(p, "vrf-name"), "%q (interfaces[%d]) is not a VRF", r.VRFName, j)
			} else if t, ok := tables[r.VRFName]; ok && r.TableID != nil && *r.TableID != t {
				fail(join(p, "table-id"), "%d, but VRF %s's route table is %d", *r.TableID, r.VRFName, t)
			}
		}
	}
	if s.DNSResolver != nil && s.DNSResolver.Config != nil {
		for i, srv := range s.DNSResolver.Config.Server {
			if _, err := netip.ParseAddr(srv); err != nil {
				fail(index("dns-resolver.config.server", i), "%q is not an IP address", srv)
			}
		}
		for i, o := range s.DNSResolver.Config.Options {
			if !resolverOption(o) {
				fail(index("dns-resolver.config.options", i), "%q is not a resolver option (%s)", o, strings.Join(ResolverOptions, ", "))
			}
		}
		for i, dom := range s.DNSResolver.Config.Search {
			if dom == "" || strings.ContainsAny(dom, " \t,/") || len(dom) > 253 {
				fail(index("dns-resolver.config.search", i), "%q is not a domain name", dom)
			}
		}
	}
	return errs
}

// checkIfname returns why name is not a Linux interface name, or "".
func checkIfname(name string) string {
	switch {
	case name == "":
		return "is empty"
	case len(name) > 15:
		return "is longer than 15 characters, the kernel's limit"
	case name == "." || name == "..":
		return "is not a usable interface name"
	case strings.ContainsAny(name, "/: \t\n"):
		return "contains '/', ':' or whitespace"
	}
	return ""
}

// validateSections checks that the interface's section fits its type and, unless the
// interface is being removed, what the section holds.
func validateSections(p string, it Interface, fail func(string, string, ...any)) {
	if it.Section == nil {
		return
	}
	sp := join(p, it.Section.Key())
	switch {
	case !fits(it.Section, it.Type):
		fail(sp, "only for type %s, but the interface is type %s", it.Section.Types()[0], it.Type)
	case it.State != Absent:
		it.Section.validate(it, sp, fail)
	}
}

// validateOVSBridgeOwn checks what an OVS bridge cannot have: it is an OVSDB object, not a
// kernel interface, so its addresses, MTU and MAC address belong on its ovs-interface.
func validateOVSBridgeOwn(p string, it Interface, fail func(string, string, ...any)) {
	for _, f := range []struct {
		field string
		c     *IPConfig
	}{{"ipv4", it.IPv4}, {"ipv6", it.IPv6}} {
		if f.c != nil && (f.c.Enabled == nil || *f.c.Enabled) {
			fail(join(p, f.field), "an OVS bridge has no IP configuration of its own: give it to its ovs-interface (enabled: false is accepted here)")
		}
	}
	for _, f := range []struct {
		field string
		set   bool
	}{{"mtu", it.MTU != nil}, {"mac-address", it.MACAddress != nil}, {"copy-mac-from", it.CopyMACFrom != nil}} {
		if f.set {
			fail(join(p, f.field), "an OVS bridge is not a kernel interface: set this on its ovs-interface")
		}
	}
}

// validateOVSPorts checks that every ovs-interface has its bridge in the same state: its
// profile hangs off the bridge's port. (A port named like its bridge and not listed is the
// bridge's internal interface, without addresses.)
func validateOVSPorts(s State, byName map[string]int, controllerOf map[string]string, fail func(string, string, ...any)) {
	for i, it := range s.Interfaces {
		if it.State == Absent || it.Type != OVSInterface {
			continue
		}
		ctrl, ok := controllerOf[it.Name]
		if j, isOVS := byName[Interface{Name: ctrl, Type: OVSBridge}.Key()]; !ok || !isOVS || s.Interfaces[j].State == Absent {
			fail(join(index("interfaces", i), "name"), "the ovs-interface %q is no OVS bridge's port in this desired state: list it in its ovs-bridge's bridge.port", it.Name)
		}
	}
}

// validateOVN checks the bridge mappings: each names a localnet once, and a present one
// its bridge, in OVN's encoding (localnet:bridge pairs joined by commas).
func validateOVN(o *OVN, fail func(string, string, ...any)) {
	seen := map[string]int{}
	for i, m := range o.BridgeMappings {
		p := index("ovn.bridge-mappings", i)
		if m.Localnet == "" || strings.ContainsAny(m.Localnet, ",: \t") {
			fail(join(p, "localnet"), "%q is not a localnet network name (no commas, colons or blanks)", m.Localnet)
		}
		switch {
		case m.Bridge == "" && !m.Absent():
			fail(join(p, "bridge"), "required")
		case m.Bridge != "" && (strings.ContainsAny(m.Bridge, ",: \t") || len(m.Bridge) > 255):
			fail(join(p, "bridge"), "%q is not an OVS bridge name", m.Bridge)
		}
		if j, dup := seen[m.Localnet]; dup {
			fail(join(p, "localnet"), "%q is also ovn.bridge-mappings[%d]; map each localnet once", m.Localnet, j)
		}
		seen[m.Localnet] = i
	}
}

// validateRouteRule checks one route rule: its addresses, of one family, and what it does.
func validateRouteRule(p string, r RouteRule, fail func(string, string, ...any)) {
	switch r.State {
	case "", "absent":
	default:
		fail(join(p, "state"), "%q: the only route rule state is absent", r.State)
	}
	switch r.Family {
	case "", "ipv4", "ipv6":
	default:
		fail(join(p, "family"), "%q is not ipv4 or ipv6", r.Family)
	}
	families := map[string]string{} // family -> the field that implies it
	if r.Family != "" {
		families[r.Family] = "family"
	}
	for _, f := range [][2]string{{"ip-from", r.IPFrom}, {"ip-to", r.IPTo}} {
		if f[1] == "" {
			continue
		}
		pfx, err := parseRulePrefix(f[1])
		if err != nil {
			fail(join(p, f[0]), "%q is not an address or a prefix (address/length)", f[1])
			continue
		}
		fam := "ipv4"
		if pfx.Addr().Is6() {
			fam = "ipv6"
		}
		for other, field := range families {
			if other != fam {
				fail(join(p, f[0]), "%s is %s but %s is %s", f[1], fam, field, other)
			}
		}
		families[fam] = f[0]
	}
	if r.Action != "" && !slices.Contains(RouteRuleActions, r.Action) {
		fail(join(p, "action"), "%q is not one of %s", r.Action, strings.Join(RouteRuleActions, ", "))
	}
	if r.IIF != "" {
		if e := checkIfname(r.IIF); e != "" {
			fail(join(p, "iif"), "%q %s", r.IIF, e)
		}
	}
	if r.SuppressPrefixLength != nil && *r.SuppressPrefixLength > 32 && families["ipv6"] == "" {
		fail(join(p, "suppress-prefix-length"), "%d is longer than an IPv4 prefix", *r.SuppressPrefixLength)
	}
	if r.State == "absent" {
		if (r == RouteRule{State: "absent"}) {
			fail(p, "an absent route rule must name at least one field: every field left out matches any rule, so this one would remove them all")
		}
		return
	}
	if len(families) == 0 {
		fail(join(p, "family"), "required when the rule names neither ip-from nor ip-to")
	}
}

// parseRulePrefix reads a rule's ip-from or ip-to: a prefix, or an address (a host).
func parseRulePrefix(s string) (netip.Prefix, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	pfx, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return pfx.Masked(), nil
}

// checkOther checks a field naming another interface than self: a name the kernel
// takes, and not self's (itself says why).
func checkOther(fail failFunc, path, name, self, itself string) {
	if e := checkIfname(name); e != "" {
		fail(path, "%q %s", name, e)
	} else if name == self {
		fail(path, "%s", itself)
	}
}

func checkPorts(path string, ports []string, fail func(string, string, ...any)) {
	seen := map[string]bool{}
	for i, port := range ports {
		if e := checkIfname(port); e != "" {
			fail(index(path, i), "%q %s", port, e)
		}
		if seen[port] {
			fail(index(path, i), "%q is listed twice", port)
		}
		seen[port] = true
	}
}

func validateIP(path string, c *IPConfig, v6 bool, fail func(string, string, ...any)) {
	if c == nil {
		return
	}
	disabled := c.Enabled != nil && !*c.Enabled
	if disabled {
		if c.DHCP != nil && *c.DHCP {
			fail(join(path, "dhcp"), "true while enabled is false")
		}
		if c.Autoconf != nil && *c.Autoconf {
			fail(join(path, "autoconf"), "true while enabled is false")
		}
		if len(c.Address) > 0 {
			fail(join(path, "address"), "addresses given while enabled is false")
		}
	}
	family := "IPv4"
	if v6 {
		family = "IPv6"
	}
	seen := map[netip.Prefix]bool{}
	for i, a := range c.Address {
		p := index(join(path, "address"), i)
		ip, err := netip.ParseAddr(a.IP)
		if err != nil || ip.Zone() != "" {
			fail(join(p, "ip"), "%q is not an IP address", a.IP)
			continue
		}
		if ip.Is4() == v6 || (ip.Is4In6() && !v6) {
			fail(join(p, "ip"), "%s is not an %s address", a.IP, family)
			continue
		}
		if ip.IsMulticast() || ip.IsUnspecified() {
			fail(join(p, "ip"), "%s cannot be an interface address", a.IP)
		}
		prefix := netip.PrefixFrom(ip, a.PrefixLength)
		if seen[prefix] {
			fail(p, "%s/%d is listed twice", a.IP, a.PrefixLength)
		}
		seen[prefix] = true
	}
}

func validateRoute(p string, r Route, fail func(string, string, ...any)) {
	var dst netip.Prefix
	if r.Destination == "" {
		if r.State != "absent" {
			fail(join(p, "destination"), "required")
		}
	} else {
		var err error
		dst, err = netip.ParsePrefix(r.Destination)
		if err != nil {
			fail(join(p, "destination"), "%q is not a prefix (address/length)", r.Destination)
		} else if dst.Masked() != dst {
			fail(join(p, "destination"), "%q has host bits set (want %s)", r.Destination, dst.Masked())
		}
	}
	if r.NextHopAddress != "" {
		nh, err := netip.ParseAddr(r.NextHopAddress)
		switch {
		case err != nil:
			fail(join(p, "next-hop-address"), "%q is not an IP address", r.NextHopAddress)
		case dst.IsValid() && nh.Is4() != dst.Addr().Is4():
			fail(join(p, "next-hop-address"), "%s and destination %s are of different IP families", r.NextHopAddress, r.Destination)
		}
	}
	if r.Source != "" {
		src, err := netip.ParseAddr(r.Source)
		switch {
		case err != nil:
			fail(join(p, "source"), "%q is not an IP address", r.Source)
		case dst.IsValid() && src.Is4() != dst.Addr().Is4():
			fail(join(p, "source"), "%s and destination %s are of different IP families", r.Source, r.Destination)
		}
	}
	if r.VRFName != "" {
		if e := checkIfname(r.VRFName); e != "" {
			fail(join(p, "vrf-name"), "%q %s", r.VRFName, e)
		} else if r.State == "absent" {
			fail(join(p, "vrf-name"), "an absent route names its VRF's route table by table-id")
		}
	}
	if r.RouteType != "" {
		switch {
		case r.NextHopAddress != "":
			fail(join(p, "next-hop-address"), "a %s route has no next hop", r.RouteType)
		case r.NextHopInterface != "" && r.NextHopInterface != LoopbackName:
			fail(join(p, "next-hop-interface"), "%s routes have no next hop: give their VRF with vrf-name, or none (they go on %s's profile)", r.RouteType, LoopbackName)
		case r.NextHopInterface == LoopbackName && r.VRFName != "":
			fail(join(p, "next-hop-interface"), "%s routes go on their VRF's profile (vrf-name) or on %s's, not both", r.RouteType, LoopbackName)
		}
	}
	if r.NextHopInterface != "" {
		if e := checkIfname(r.NextHopInterface); e != "" {
			fail(join(p, "next-hop-interface"), "%q %s", r.NextHopInterface, e)
		}
	} else if r.State != "absent" && r.VRFName == "" && r.RouteType == "" {
		fail(join(p, "next-hop-interface"), "required: NetworkManager keeps routes on a connection profile")
	}
	if r.State == "absent" && r.Destination == "" && r.NextHopInterface == "" && r.NextHopAddress == "" && (r.TableID == nil || *r.TableID == 0) {
		fail(p, "an absent route must name a destination, next-hop-interface, next-hop-address or table-id: every field left out matches any route, so this one would remove them all")
	}
}

// validateControllers checks the ports that name their controller (controller:) against
// the controllers' port lists, as nmstate does: a port list that is given is the whole of
// the controller's ports, so it must name the port too, and no other controller may list
// it; "" (a port of none) contradicts any list naming it.
func validateControllers(s State, byName map[string]int, controllerOf map[string]string, fail func(string, string, ...any)) {
	for i, it := range s.Interfaces {
		if it.State == Absent || it.Controller == nil {
			continue
		}
		p := join(index("interfaces", i), "controller")
		c := *it.Controller
		listedBy, listed := controllerOf[it.Name]
		switch {
		case c == it.Name:
			fail(p, "%q is this interface: an interface cannot be its own controller", c)
			continue
		case c != "" && checkIfname(c) != "":
			fail(p, "%q %s", c, checkIfname(c))
			continue
		case listed && c == "":
			fail(p, "\"\" makes it a port of none, but %q lists it as its port", listedBy)
			continue
		case listed && listedBy != c:
			fail(p, "%q, but %q lists it as its port; an interface has one controller", c, listedBy)
			continue
		}
		if _, ovs := byName[Interface{Name: c, Type: OVSBridge}.Key()]; ovs && c != "" {
			fail(p, "%q is an OVS bridge: name the port in the bridge's port list, which makes its OVS port", c)
			continue
		}
		j, given := byName[c]
		if c == "" || !given || listed {
			continue
		}
		ctrl := s.Interfaces[j]
		if ports := ctrl.portNames(); len(ports) > 0 {
			fail(p, "%q (interfaces[%d]) lists its ports without it: list it there too, or leave controller out", c, j)
		}
	}
}
