package state

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
)

// Verify compares a desired state with the current one and lists, one line each, what did
// not converge. Only what the desired state names is compared (nmstate's semantics).
func Verify(desired, current State) []string {
	var diffs []string
	add := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }
	cur := map[string]Interface{}
	for _, it := range current.Interfaces {
		cur[it.Name] = it
	}
	for _, want := range desired.Interfaces {
		got, exists := cur[want.Name]
		switch want.State {
		case Absent:
			if exists && got.State == Up && got.Type != Ethernet && got.Type != Veth {
				add("%s: still exists and is up, want absent", want.Name)
			}
			continue
		case Down:
			if exists && got.State == Up {
				add("%s: is up, want down", want.Name)
			}
			continue
		}
		if !exists {
			add("%s: does not exist", want.Name)
			continue
		}
		if got.State != Up {
			add("%s: is %s, want up", want.Name, orNone(string(got.State)))
			continue
		}
		// A veth is an Ethernet device: nmstate accepts type ethernet for it.
		if want.Type != "" && got.Type != "" && want.Type != got.Type && !(want.Type == Ethernet && got.Type == Veth) {
			add("%s: is a %s, want %s", want.Name, got.Type, want.Type)
		}
		if want.MTU != nil && (got.MTU == nil || *got.MTU != *want.MTU) {
			add("%s: mtu %s, want %d", want.Name, intOrNone(got.MTU), *want.MTU)
		}
		if want.MACAddress != nil && (got.MACAddress == nil || !sameMAC(*got.MACAddress, *want.MACAddress)) {
			add("%s: mac-address %s, want %s", want.Name, strOrNone(got.MACAddress), *want.MACAddress)
		}
		verifyIP(add, want.Name+".ipv4", want.IPv4, got.IPv4)
		verifyIP(add, want.Name+".ipv6", want.IPv6, got.IPv6)
		if want.LinkAggregation != nil {
			if got.LinkAggregation == nil {
				add("%s: not a bond", want.Name)
			} else {
				if want.LinkAggregation.Mode != got.LinkAggregation.Mode {
					add("%s: bond mode %s, want %s", want.Name, orNone(string(got.LinkAggregation.Mode)), want.LinkAggregation.Mode)
				}
				verifyPorts(add, want.Name, want.LinkAggregation.Port, got.LinkAggregation.Port)
			}
		}
		if want.Bridge != nil {
			if got.Bridge == nil {
				add("%s: not a bridge", want.Name)
			} else {
				verifyPorts(add, want.Name, bridgePortNames(want.Bridge), bridgePortNames(got.Bridge))
			}
		}
		if want.VRF != nil {
			if got.VRF == nil || got.VRF.RouteTableID != want.VRF.RouteTableID {
				add("%s: vrf route table %v, want %d", want.Name, got.VRF, want.VRF.RouteTableID)
			} else {
				verifyPorts(add, want.Name, want.VRF.Port, got.VRF.Port)
			}
		}
		if want.VLAN != nil && (got.VLAN == nil || *got.VLAN != *want.VLAN) {
			add("%s: vlan %v, want id %d on %s", want.Name, got.VLAN, want.VLAN.ID, want.VLAN.BaseIface)
		}
		if want.MACVLAN != nil && (got.MACVLAN == nil || got.MACVLAN.BaseIface != want.MACVLAN.BaseIface || got.MACVLAN.Mode != want.MACVLAN.Mode) {
			add("%s: mac-vlan %v, want %s on %s", want.Name, got.MACVLAN, want.MACVLAN.Mode, want.MACVLAN.BaseIface)
		}
		if want.VXLAN != nil && (got.VXLAN == nil || got.VXLAN.ID != want.VXLAN.ID) {
			add("%s: vxlan %v, want id %d", want.Name, got.VXLAN, want.VXLAN.ID)
		}
	}
	if desired.Routes != nil {
		var running []Route
		if current.Routes != nil {
			running = current.Routes.Running
		}
		for _, want := range desired.Routes.Config {
			found := slices.ContainsFunc(running, func(r Route) bool { return routeMatches(want, r) })
			switch {
			case want.State == "absent" && found:
				add("route %s via %s dev %s: still present, want absent", want.Destination, orNone(want.NextHopAddress), orNone(want.NextHopInterface))
			case want.State != "absent" && !found:
				add("route %s via %s dev %s: missing", want.Destination, orNone(want.NextHopAddress), want.NextHopInterface)
			}
		}
	}
	if desired.DNSResolver != nil && desired.DNSResolver.Config != nil {
		var servers []string
		if current.DNSResolver != nil && current.DNSResolver.Running != nil {
			servers = current.DNSResolver.Running.Server
		}
		for _, s := range desired.DNSResolver.Config.Server {
			if !slices.Contains(servers, s) {
				add("dns server %s: not in use (in use: %v)", s, servers)
			}
		}
	}
	return diffs
}

func verifyIP(add func(string, ...any), name string, want, got *IPConfig) {
	if want == nil {
		return
	}
	if want.Enabled != nil && !*want.Enabled {
		if got != nil && len(got.Address) > 0 && !onlyLinkLocal(got.Address) {
			add("%s: has addresses %v, want disabled", name, got.Address)
		}
		return
	}
	var have []Address
	if got != nil {
		have = got.Address
	}
	for _, a := range want.Address {
		if !slices.ContainsFunc(have, func(h Address) bool { return sameIP(h.IP, a.IP) && h.PrefixLength == a.PrefixLength }) {
			add("%s: address %s/%d missing (has %v)", name, a.IP, a.PrefixLength, have)
		}
	}
}

func verifyPorts(add func(string, ...any), name string, want, got []string) {
	w, g := slices.Clone(want), slices.Clone(got)
	sort.Strings(w)
	sort.Strings(g)
	if !slices.Equal(w, g) {
		add("%s: ports %v, want %v", name, g, w)
	}
}

func bridgePortNames(b *BridgeConfig) []string {
	n := make([]string, len(b.Port))
	for i, p := range b.Port {
		n[i] = p.Name
	}
	return n
}

// routeMatches: what the desired route names matches the running one (nmstate matches
// absent routes on the given fields only).
func routeMatches(want, got Route) bool {
	if want.Destination != "" {
		wp, err1 := netip.ParsePrefix(want.Destination)
		gp, err2 := netip.ParsePrefix(got.Destination)
		if err1 != nil || err2 != nil || wp.Masked() != gp.Masked() {
			return false
		}
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
	wt, gt := 254, 254 // 0 and unset both mean the main table
	if want.TableID != nil && *want.TableID != 0 {
		wt = *want.TableID
	}
	if got.TableID != nil && *got.TableID != 0 {
		gt = *got.TableID
	}
	return wt == gt
}

func sameIP(a, b string) bool {
	x, err1 := netip.ParseAddr(a)
	y, err2 := netip.ParseAddr(b)
	return err1 == nil && err2 == nil && x == y
}

func sameMAC(a, b string) bool {
	return normalizeMAC(a) == normalizeMAC(b)
}

func normalizeMAC(s string) string {
	out := []byte(s)
	for i, c := range out {
		if c >= 'a' && c <= 'f' {
			out[i] = c - 'a' + 'A'
		}
	}
	return string(out)
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

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func intOrNone(p *int) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

func strOrNone(p *string) string {
	if p == nil {
		return "none"
	}
	return *p
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
		if err != nil || gw.IsUnspecified() || !r.IsDefault() {
			continue
		}
		if r.TableID != nil && *r.TableID != 254 && *r.TableID != 0 {
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
