package state

import "slices"

// Features are the nmstate features a desired state uses, by the names nmstate's
// statistics give them (`nmstatectl statistic`, NmstateFeature in kebab case), which
// kubernetes-nmstate exports as kubernetes_nmstate_features_applied{name}: so a dashboard
// built on the peer counts the same policies. Features nmoverlay refuses (DHCP custom
// hostnames, the global ovs-db, DPDK, the hostname, MPTCP) never appear. Sorted.
func Features(s State) []string {
	set := map[string]bool{}
	up := 0
	for _, it := range s.Interfaces {
		if it.State != Absent && it.State != Down {
			up++
		}
		if it.Identifier == IdentifyByMAC {
			set["mac-based-identifier"] = true
		}
		if it.LLDP != nil {
			set["lldp"] = true
		}
		if it.OVSDB != nil && (len(it.OVSDB.ExternalIDs) > 0 || len(it.OVSDB.OtherConfig) > 0) {
			set["ovs-db-interface"] = true
		}
		if it.Ethernet != nil && it.Ethernet.SRIOV != nil {
			set["sriov"] = true
		}
		if it.Type == OVSBridge {
			if b := SectionOf[*BridgeConfig](it); b != nil && slices.ContainsFunc(b.Port, func(p BridgePort) bool { return p.LinkAggregation != nil }) {
				set["ovs-bond"] = true
			}
		}
		if SectionOf[*OVSPatch](it) != nil {
			set["ovs-patch"] = true
		}
	}
	// nmstate counts the interfaces a state brings up, in steps.
	for _, step := range []struct {
		at   int
		name string
	}{{500, "iface-count500-plus"}, {200, "iface-count200-plus"}, {100, "iface-count100-plus"}, {50, "iface-count50-plus"}, {10, "iface-count10-plus"}} {
		if up >= step.at {
			set[step.name] = true
			break
		}
	}
	if s.OVN != nil {
		set["ovn-mapping"] = true
	}
	if s.Routes != nil && s.Routes.Config != nil {
		set["static-route"] = true
	}
	if s.RouteRules != nil && len(s.RouteRules.Config) > 0 {
		set["static-route-rule"] = true
		if slices.ContainsFunc(s.RouteRules.Config, func(r RouteRule) bool { return r.State != "absent" && r.SuppressPrefixLength != nil }) {
			set["static-route-rule-suppress-prefix-length"] = true
		}
	}
	if s.DNSResolver != nil && s.DNSResolver.Config != nil {
		c := s.DNSResolver.Config
		if c.Server != nil {
			set["static-dns-name-server"] = true
		}
		if c.Search != nil {
			set["static-dns-search"] = true
		}
		if c.Options != nil {
			set["static-dns-option"] = true
		}
	}
	out := make([]string, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}
