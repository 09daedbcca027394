package state

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
)

// CriticalInterfaces are the interfaces of current (a node's state, as shown) the node
// needs to reach its cluster, each with why: those of its default routes (main table), of
// its route to the API server (the most specific in the main table), and those holding
// one of its InternalIPs. A change to one can cut the node off; a profile of one must
// outlive a reboot. An invalid apiServer or none of internalIPs adds nothing.
func CriticalInterfaces(current State, apiServer netip.Addr, internalIPs []netip.Addr) map[string]string {
	out := map[string]string{}
	add := func(name, why string) {
		if _, ok := out[name]; name != "" && !ok {
			out[name] = why
		}
	}
	var running []Route
	if current.Routes != nil {
		running = current.Routes.Running
	}
	for _, r := range running {
		if r.IsDefault() && tableOf(r) == mainTable && r.RouteType == "" {
			add(r.NextHopInterface, fmt.Sprintf("%s carries the node's default route", r.NextHopInterface))
		}
	}
	if apiServer.IsValid() {
		best, bestBits := "", -1
		for _, r := range running {
			p, err := netip.ParsePrefix(r.Destination)
			if err != nil || tableOf(r) != mainTable || r.RouteType != "" || !p.Contains(apiServer) {
				continue
			}
			if p.Bits() > bestBits {
				best, bestBits = r.NextHopInterface, p.Bits()
			}
		}
		add(best, fmt.Sprintf("%s carries the node's route to the API server %s", best, apiServer))
	}
	for _, ip := range internalIPs {
		for _, it := range current.Interfaces {
			for _, c := range []*IPConfig{it.IPv4, it.IPv6} {
				if c == nil {
					continue
				}
				for _, a := range c.Address {
					if addr, err := netip.ParseAddr(a.IP); err == nil && addr == ip {
						add(it.Name, fmt.Sprintf("%s holds the node's InternalIP %s", it.Name, ip))
					}
				}
			}
		}
	}
	return out
}

// NeededToBoot are critical's interfaces and, through the policies in force, what each
// needs to carry traffic: its ports, its base (a VLAN's), and its controller (an OVS
// internal interface's bridge), and so on from those. Not what is built on them: a
// storage VLAN on the node's bond is not needed to boot.
func NeededToBoot(policies []Source, critical map[string]string) map[string]string {
	needs := map[string][]string{}
	for _, pol := range policies {
		for _, it := range pol.State.Interfaces {
			if it.State == Absent {
				continue
			}
			for _, r := range it.References() {
				switch r.Kind {
				case RefPort:
					needs[it.Name] = append(needs[it.Name], r.Name)
					needs[r.Name] = append(needs[r.Name], it.Name) // a port carries its controller's traffic only through it
				case RefBase:
					needs[it.Name] = append(needs[it.Name], r.Name)
				case RefController:
					needs[it.Name] = append(needs[it.Name], r.Name)
					needs[r.Name] = append(needs[r.Name], it.Name)
				}
			}
		}
	}
	out := map[string]string{}
	var visit func(name, why string)
	visit = func(name, why string) {
		if _, ok := out[name]; ok {
			return
		}
		out[name] = why
		for _, n := range needs[name] {
			visit(n, why)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(critical)) {
		visit(name, critical[name])
	}
	return out
}
