package state

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
)

// Verify compares a desired state with the current one and lists, one line each, what did
// not converge, each line starting with the field's path (`eth1.ipv4.dhcp: ...`). Only
// what the desired state states is compared (nmstate's semantics), and every field it
// states is: a policy is never reported in effect while a field it names is not.
// Fields a backend could not read (nil in current) count as not in effect.
func Verify(desired, current State) []string {
	var diffs []string
	add := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }
	cur := map[string]Interface{}
	controllerOf := map[string]string{}
	for _, it := range current.Interfaces {
		cur[it.Key()] = it
		for _, port := range it.portNames() {
			if port != it.Name { // an OVS bridge's internal interface
				controllerOf[port] = it.Name
			}
		}
	}
	for _, want := range desired.Interfaces {
		got, exists := cur[want.Key()]
		n := want.Key()
		switch want.State {
		case Absent:
			if exists && got.State == Up && got.Type != Ethernet && got.Type != Veth {
				add("%s: still exists and is up, want absent", n)
			}
			continue
		case Down:
			if exists && got.State == Up {
				add("%s: is up, want down", n)
			}
			continue
		}
		if !exists {
			add("%s: does not exist", n)
			continue
		}
		if got.State != Up {
			add("%s: is %s, want up", n, orNone(string(got.State)))
			continue
		}
		verifyInterface(add, want, got)
		if c := want.Controller; c != nil && controllerOf[want.Name] != *c {
			add("%s.controller: %s, want %s", n, orNone(controllerOf[want.Name]), orNone(*c))
		}
	}
	verifyRoutes(add, desired.Routes, current.Routes, VRFTables(desired, current))
	verifyDNS(add, desired.DNSResolver, current.DNSResolver)
	verifyRouteRules(add, desired.RouteRules, current.RouteRules)
	verifyOVN(add, desired.OVN, current.OVN)
	return diffs
}

// verifyOVN: every mapping the desired state has present is the host's, and every one it
// has absent is gone. A current state without the section (nil: the host's Open vSwitch
// database could not be read) has none.
func verifyOVN(add func(string, ...any), desired, current *OVN) {
	if desired == nil {
		return
	}
	got := map[string]string{}
	if current != nil {
		for _, m := range current.BridgeMappings {
			got[m.Localnet] = m.Bridge
		}
	}
	for _, m := range desired.BridgeMappings {
		bridge, ok := got[m.Localnet]
		switch {
		case m.Absent() && ok:
			add("ovn.bridge-mappings[localnet=%s]: mapped to %s, want absent", m.Localnet, bridge)
		case !m.Absent() && bridge != m.Bridge:
			add("ovn.bridge-mappings[localnet=%s]: %s, want %s", m.Localnet, orNone(bridge), m.Bridge)
		}
	}
}

func verifyInterface(add func(string, ...any), want, got Interface) {
	n := want.Key()
	// A veth is an Ethernet device: nmstate accepts type ethernet for it.
	if want.Type != "" && got.Type != "" && want.Type != got.Type && !(want.Type == Ethernet && got.Type == Veth) {
		add("%s.type: %s, want %s", n, got.Type, want.Type)
	}
	verifyField(add, n+".mtu", want.MTU, got.MTU)
	verifyField(add, n+".accept-all-mac-addresses", want.AcceptAllMACAddresses, got.AcceptAllMACAddresses)
	if want.WaitIP != "" && got.WaitIP != want.WaitIP {
		add("%s.wait-ip: %s, want %s", n, orNone(got.WaitIP), want.WaitIP)
	}
	if want.MACAddress != nil && want.Identifier != IdentifyByMAC && (got.MACAddress == nil || !sameMAC(*got.MACAddress, *want.MACAddress)) {
		add("%s.mac-address: %s, want %s", n, strOrNone(got.MACAddress), *want.MACAddress)
	}
	verifyIP(add, n+".ipv4", want.IPv4, got.IPv4)
	verifyIP(add, n+".ipv6", want.IPv6, got.IPv6)
	if want.ProfileName != nil && *want.ProfileName != want.Name && (got.ProfileName == nil || *got.ProfileName != *want.ProfileName) {
		add("%s.profile-name: %s, want %s", n, strOrNone(got.ProfileName), *want.ProfileName)
	}
	if want.Ethtool != nil {
		verifyEthtool(add, n+".ethtool", want.Ethtool, got.Ethtool)
	}
	if want.OVSDB != nil {
		verifyOVSDB(add, n+".ovs-db", want.OVSDB, got.OVSDB)
	}
	if want.LLDP != nil && want.LLDP.Enabled != nil {
		on := got.LLDP != nil && isTrue(got.LLDP.Enabled)
		if on != *want.LLDP.Enabled {
			add("%s.lldp.enabled: %t, want %t", n, on, *want.LLDP.Enabled)
		}
	}
	if want.Ethernet != nil && want.Ethernet.SRIOV != nil {
		var sr *SRIOVConfig
		if got.Ethernet != nil {
			sr = got.Ethernet.SRIOV
		}
		verifySRIOV(add, n+".ethernet.sr-iov", want.Ethernet.SRIOV, sr)
	}
	if want.Section != nil {
		want.Section.verify(add, want, got.Section)
	}
}

func verifyIP(add func(string, ...any), path string, want, got *IPConfig) {
	if want == nil {
		return
	}
	if got == nil {
		got = &IPConfig{}
	}
	if want.Enabled != nil && !*want.Enabled {
		if len(got.Address) > 0 && !onlyLinkLocal(got.Address) {
			add("%s.enabled: has addresses %v, want disabled", path, got.Address)
		}
		return
	}
	// Enabled with nothing to run (no address, no DHCP or autoconf) is off in nmstate's
	// reading too; otherwise the family must be on.
	if isTrue(want.Enabled) && (len(want.Address) > 0 || isTrue(want.DHCP) || isTrue(want.Autoconf)) && got.Enabled != nil && !*got.Enabled {
		add("%s.enabled: false, want true", path)
	}
	for _, f := range []struct {
		name      string
		want, got *bool
	}{
		{"dhcp", want.DHCP, got.DHCP}, {"autoconf", want.Autoconf, got.Autoconf}, {"auto-dns", want.AutoDNS, got.AutoDNS},
		{"auto-gateway", want.AutoGateway, got.AutoGateway}, {"auto-routes", want.AutoRoutes, got.AutoRoutes},
		{"forwarding", want.Forwarding, got.Forwarding},
	} {
		if f.want == nil {
			continue
		}
		// auto-* only mean something with DHCP or autoconf on; nmstate ignores them otherwise.
		if strings.HasPrefix(f.name, "auto-") && !isTrue(want.DHCP) && !isTrue(want.Autoconf) {
			continue
		}
		if f.got == nil || *f.got != *f.want {
			add("%s.%s: %s, want %t", path, f.name, boolOrNone(f.got), *f.want)
		}
	}
	if want.AutoRouteMetric != nil && (isTrue(want.DHCP) || isTrue(want.Autoconf)) &&
		(got.AutoRouteMetric == nil || *got.AutoRouteMetric != *want.AutoRouteMetric) {
		add("%s.auto-route-metric: %s, want %d", path, intOrNone(got.AutoRouteMetric), *want.AutoRouteMetric)
	}
	if want.AutoRouteTableID != nil && (isTrue(want.DHCP) || isTrue(want.Autoconf)) && *want.AutoRouteTableID != 0 &&
		(got.AutoRouteTableID == nil || *got.AutoRouteTableID != *want.AutoRouteTableID) {
		add("%s.auto-route-table-id: %s, want %d", path, intOrNone(got.AutoRouteTableID), *want.AutoRouteTableID)
	}
	for _, a := range want.Address {
		if !slices.ContainsFunc(got.Address, func(h Address) bool { return sameIP(h.IP, a.IP) && h.PrefixLength == a.PrefixLength }) {
			add("%s.address: %s/%d missing (has %v)", path, a.IP, a.PrefixLength, got.Address)
		}
	}
}

// verifyRoutes: each present route runs, each absent one is held by no profile. A route
// in a VRF is in that VRF's table (vrfTables, by VRF name).
func verifyRoutes(add func(string, ...any), desired, current *Routes, vrfTables map[string]int) {
	if desired == nil {
		return
	}
	if current == nil {
		current = &Routes{}
	}
	for _, want := range desired.Config {
		if want.State == "absent" {
			// nmstate matches an absent route against the routes profiles hold, every
			// field it leaves out a wildcard: not against the kernel's, which include
			// prefix routes and DHCP's.
			for _, r := range current.Config {
				if want.Selects(r) {
					add("routes.config[%s]: %s still configured, want absent", want, r)
				}
			}
			continue
		}
		if want.VRFName != "" && want.TableID == nil {
			t, ok := vrfTables[want.VRFName]
			if !ok {
				add("routes.config[%s]: no VRF %s", want, want.VRFName)
				continue
			}
			want.TableID = &t
		}
		if !slices.ContainsFunc(current.Running, func(r Route) bool { return routeMatches(want, r) }) {
			add("routes.config[%s]: missing", want)
		}
	}
}

// verifyDNS: the servers and search domains a desired DNS config states are the node's
// static ones, in order; an empty config means none. What DHCP brings is not compared.
// A backend that reads no static config (Config nil) is checked on the servers in use.
func verifyDNS(add func(string, ...any), desired, current *DNSResolver) {
	if desired == nil || desired.Config == nil {
		return
	}
	want := desired.Config
	if current == nil || current.Config != nil {
		var got DNSConfig
		if current != nil && current.Config != nil {
			got = *current.Config
		}
		if !slices.Equal(want.Server, got.Server) {
			add("dns-resolver.config.server: %v, want %v", got.Server, want.Server)
		}
		if !slices.Equal(want.Search, got.Search) {
			add("dns-resolver.config.search: %v, want %v", got.Search, want.Search)
		}
		if want.Options != nil && !slices.Equal(want.Options, got.Options) {
			add("dns-resolver.config.options: %v, want %v", got.Options, want.Options)
		}
		return
	}
	var running DNSConfig
	if current.Running != nil {
		running = *current.Running
	}
	for _, s := range want.Server {
		if !slices.Contains(running.Server, s) {
			add("dns-resolver.config.server: %s not in use (in use: %v)", s, running.Server)
		}
	}
	for _, s := range want.Search {
		if !slices.Contains(running.Search, s) {
			add("dns-resolver.config.search: %s not in use (in use: %v)", s, running.Search)
		}
	}
}

func verifyPorts(add func(string, ...any), path string, want, got []string) {
	w, g := slices.Clone(want), slices.Clone(got)
	sort.Strings(w)
	sort.Strings(g)
	if !slices.Equal(w, g) {
		add("%s: %v, want %v", path, g, w)
	}
}

// routeMatches: the running route got is the desired present route want. Metric and
// table are compared only when want states them (0 and unset both mean the main table).
func routeMatches(want, got Route) bool {
	if !samePrefix(want.Destination, got.Destination) {
		return false
	}
	if want.NextHopInterface != "" && want.NextHopInterface != got.NextHopInterface {
		return false
	}
	if want.NextHopAddress != "" && !sameIP(want.NextHopAddress, got.NextHopAddress) {
		return false
	}
	if want.Metric != nil && (got.Metric == nil || *got.Metric != *want.Metric) {
		return false
	}
	if want.RouteType != got.RouteType { // "" for both: a unicast route
		return false
	}
	if want.Source != "" && !sameIP(want.Source, got.Source) {
		return false
	}
	if want.Cwnd != nil && (got.Cwnd == nil || *got.Cwnd != *want.Cwnd) {
		return false
	}
	return tableOf(want) == tableOf(got)
}

// Selects says whether the absent route r removes other, as nmstate matches them: every
// field r leaves out (destination, next-hop-interface, next-hop-address, table-id, 0
// included) matches anything; the metric is never compared.
func (r Route) Selects(other Route) bool {
	if r.Destination != "" && !samePrefix(r.Destination, other.Destination) {
		return false
	}
	if r.NextHopInterface != "" && r.NextHopInterface != other.NextHopInterface {
		return false
	}
	if r.NextHopAddress != "" && !sameIP(r.NextHopAddress, other.NextHopAddress) {
		return false
	}
	if r.TableID != nil && *r.TableID != 0 && *r.TableID != tableOf(other) {
		return false
	}
	if r.Source != "" && !sameIP(r.Source, other.Source) {
		return false
	}
	return r.Cwnd == nil || other.Cwnd != nil && *other.Cwnd == *r.Cwnd
}

// Family is 4 or 6 for a route whose destination or next hop says which, 0 otherwise.
func (r Route) Family() int {
	for _, s := range []string{r.Destination, r.NextHopAddress} {
		if p, err := netip.ParsePrefix(s); err == nil {
			return map[bool]int{true: 4, false: 6}[p.Addr().Is4()]
		}
		if a, err := netip.ParseAddr(s); err == nil {
			return map[bool]int{true: 4, false: 6}[a.Is4()]
		}
	}
	return 0
}

func (r Route) String() string {
	var parts []string
	for _, kv := range [][2]string{{"destination", r.Destination}, {"next-hop-interface", r.NextHopInterface},
		{"next-hop-address", r.NextHopAddress}, {"table-id", intOrEmpty(r.TableID)}, {"metric", intOrEmpty(r.Metric)},
		{"source", r.Source}, {"cwnd", intOrEmpty(r.Cwnd)}, {"route-type", r.RouteType}, {"vrf-name", r.VRFName}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	return strings.Join(parts, ",")
}

const mainTable = 254

func tableOf(r Route) int {
	if r.TableID == nil || *r.TableID == 0 {
		return mainTable
	}
	return *r.TableID
}

func samePrefix(a, b string) bool {
	x, err1 := netip.ParsePrefix(a)
	y, err2 := netip.ParsePrefix(b)
	return err1 == nil && err2 == nil && x.Masked() == y.Masked()
}

func sameIP(a, b string) bool {
	x, err1 := netip.ParseAddr(a)
	y, err2 := netip.ParseAddr(b)
	return err1 == nil && err2 == nil && x == y
}

func sameMAC(a, b string) bool {
	return strings.EqualFold(a, b)
}

func onlyLinkLocal(as []Address) bool {
	for _, a := range as {
		ip, err := netip.ParseAddr(a.IP)
		if err != nil || !ip.IsLinkLocalUnicast() {
			return false
		}
	}
	return true
}

func isTrue(b *bool) bool { return b != nil && *b }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// verifyField reports a field the desired state sets (want not nil) that current does
// not have, or has otherwise: "path: got, want want".
func verifyField[T comparable](add func(string, ...any), path string, want, got *T) {
	if want == nil || got != nil && *got == *want {
		return
	}
	have := "none"
	if got != nil {
		have = fmt.Sprint(*got)
	}
	add("%s: %s, want %v", path, have, *want)
}

func intOrNone(p *int) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

func intOrEmpty(p *int) string {
	if p == nil {
		return ""
	}
	return fmt.Sprint(*p)
}

func strOrNone(p *string) string {
	if p == nil {
		return "none"
	}
	return *p
}

func boolOrNone(p *bool) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

// DefaultGateway is the next hop of the default route in effect: the IPv4 one with the
// lowest metric, else the IPv6 one; invalid when there is none.
func DefaultGateway(s State) netip.Addr {
	if s.Routes == nil {
		return netip.Addr{}
	}
	best := map[bool]netip.Addr{}
	bestMetric := map[bool]int{}
	for _, r := range s.Routes.Running {
		gw, err := netip.ParseAddr(r.NextHopAddress)
		if err != nil || gw.IsUnspecified() || !r.IsDefault() || tableOf(r) != mainTable {
			continue
		}
		metric := 0
		if r.Metric != nil {
			metric = *r.Metric
		}
		v4 := gw.Is4()
		if !best[v4].IsValid() || metric < bestMetric[v4] {
			best[v4], bestMetric[v4] = gw, metric
		}
	}
	if best[true].IsValid() {
		return best[true]
	}
	return best[false]
}
