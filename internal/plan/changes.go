package plan

import (
	"cmp"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// The forms of the engine's verification lines (state.Verify: "<path>: <what>"), from the
// most particular; TestClassify runs Verify itself to pin them.
var (
	doesNotExist = regexp.MustCompile(`^(\S+): does not exist$`)
	stillUp      = regexp.MustCompile(`^(\S+): still exists and is up, want absent$`)
	isState      = regexp.MustCompile(`^(\S+): is (\S+), want (\S+)$`)
	missing      = regexp.MustCompile(`^(\S+\.address): (\S+) missing \(has .*\)$`)
	entryMissing = regexp.MustCompile(`^((?:routes|route-rules)\.config)\[(.*)\]: missing$`)
	entryStill   = regexp.MustCompile(`^((?:routes|route-rules)\.config)\[.*\]: (.*) still configured, want absent$`)
	notInUse     = regexp.MustCompile(`^(dns-resolver\.config\.(?:server|search)): (\S+) not in use \(in use: .*\)$`)
	haveWant     = regexp.MustCompile(`^(\S+): (.*), want (.*)$`)
)

// classify reads one line of the engine's verification of the merged desired state
// against the node's current state as the change the apply makes there.
func classify(line string, desired state.State) Change {
	if m := doesNotExist.FindStringSubmatch(line); m != nil {
		c := Change{Kind: Create, Path: m[1]}
		if i := slices.IndexFunc(desired.Interfaces, func(it state.Interface) bool { return it.Key() == m[1] }); i >= 0 {
			c.New = describe(desired.Interfaces[i])
		}
		return c
	}
	if m := stillUp.FindStringSubmatch(line); m != nil {
		return Change{Kind: Remove, Path: m[1]}
	}
	if m := isState.FindStringSubmatch(line); m != nil {
		return Change{Kind: Set, Path: m[1] + ".state", Old: m[2], New: m[3]}
	}
	if m := missing.FindStringSubmatch(line); m != nil {
		return Change{Kind: Add, Path: m[1], New: m[2]}
	}
	if m := entryMissing.FindStringSubmatch(line); m != nil {
		return Change{Kind: Add, Path: m[1], New: m[2]}
	}
	if m := entryStill.FindStringSubmatch(line); m != nil {
		return Change{Kind: Drop, Path: m[1], Old: m[2]}
	}
	if m := notInUse.FindStringSubmatch(line); m != nil {
		return Change{Kind: Add, Path: m[1], New: m[2]}
	}
	if m := haveWant.FindStringSubmatch(line); m != nil {
		return Change{Kind: Set, Path: m[1], Old: m[2], New: m[3]}
	}
	path, what, _ := strings.Cut(line, ": ")
	return Change{Kind: Set, Path: path, New: what}
}

// describe is what a created interface is made of: its type, what it is built on, its
// ports, addresses and MTU (the engine verifies none of them before it exists).
func describe(it state.Interface) string {
	parts := []string{string(it.Type)}
	var ports []string
	for _, r := range it.References() {
		switch r.Kind {
		case state.RefBase:
			parts = append(parts, "on "+r.Name)
		case state.RefPort:
			ports = append(ports, r.Name)
		}
	}
	if len(ports) > 0 {
		parts = append(parts, "ports "+strings.Join(ports, ", "))
	}
	for _, c := range []*state.IPConfig{it.IPv4, it.IPv6} {
		if c != nil {
			for _, a := range c.Address {
				parts = append(parts, fmt.Sprintf("%s/%d", a.IP, a.PrefixLength))
			}
		}
	}
	if it.MTU != nil {
		parts = append(parts, fmt.Sprintf("mtu %d", *it.MTU))
	}
	return "(" + strings.Join(parts, "; ") + ")"
}

// adopted are the existing interfaces a created controller takes as its ports: the engine
// verifies a port's controller only once its controller exists. A port comes up with its
// controller, and holds no address of its own (its profile has no IP configuration).
func adopted(changes []Change, desired, current state.State) []Change {
	controllerOf := map[string]string{}
	exists := map[string]state.Interface{}
	for _, it := range current.Interfaces {
		exists[it.Name] = it
		for _, r := range it.References() {
			if r.Kind == state.RefPort && r.Name != it.Name {
				controllerOf[r.Name] = it.Name
			}
		}
	}
	var out []Change
	for _, c := range changes {
		made, ok := created(c, desired)
		if !ok {
			continue
		}
		for _, r := range made.References() {
			port, ok := exists[r.Name]
			if r.Kind != state.RefPort || !ok || r.Name == made.Name {
				continue
			}
			out = append(out, Change{Kind: Set, Path: r.Name + ".controller", Old: cmp.Or(controllerOf[r.Name], "none"), New: made.Name})
			if port.State != state.Up {
				out = append(out, Change{Kind: Set, Path: r.Name + ".state", Old: string(port.State), New: string(state.Up)})
			}
			if made.Type == state.Bond && port.MACAddress != nil {
				// The kernel gives a bond's ports the bond's MAC address.
				out = append(out, Change{Kind: Set, Path: r.Name + ".mac-address", Old: *port.MACAddress, New: "(" + made.Name + "'s)"})
			}
			if userspaceDatapath(made) && port.AcceptAllMACAddresses != nil && !*port.AcceptAllMACAddresses {
				out = append(out, Change{Kind: Set, Path: r.Name + ".accept-all-mac-addresses", Old: "false", New: "true"})
			}
			for _, fam := range []struct {
				name string
				c    *state.IPConfig
			}{{"ipv4", port.IPv4}, {"ipv6", port.IPv6}} {
				if fam.c == nil {
					continue
				}
				for _, a := range fam.c.Address {
					out = append(out, Change{Kind: Drop, Path: r.Name + "." + fam.name + ".address", Old: fmt.Sprintf("%s/%d", a.IP, a.PrefixLength)})
				}
			}
		}
	}
	return out
}

// userspaceDatapath: it is an OVS bridge on Open vSwitch's userspace datapath, which puts
// its system ports in promiscuous mode as an administrator would (the kernel's datapath
// does so too, but only in a count the node's state does not show).
func userspaceDatapath(it state.Interface) bool {
	b := state.SectionOf[*state.BridgeConfig](it)
	return it.Type == state.OVSBridge && b != nil && b.Options != nil && b.Options.Datapath != nil && *b.Options.Datapath == "netdev"
}

// released is what the policies in force made (was) and the merged state after the change
// (will) no longer states: the handler builds the node's profiles from the merged state
// alone, so those go. An interface no policy states runs its persistent profile again
// (one the policies made is gone with its profile); an address, route, route rule or DNS
// entry no longer stated is dropped, where the node still has it.
func released(was, will, current state.State) []Change {
	var out []Change
	willIf := map[string]state.Interface{}
	for _, it := range will.Interfaces {
		willIf[it.Key()] = it
	}
	curIf := map[string]state.Interface{}
	for _, it := range current.Interfaces {
		curIf[it.Key()] = it
	}
	for _, it := range was.Interfaces {
		if it.State == state.Absent {
			continue
		}
		now, stated := willIf[it.Key()]
		if !stated {
			why := "no policy states it any more: it runs its persistent profile again"
			if it.Type != "" && it.Type != state.Ethernet && it.Type != state.Veth {
				why = "no policy states it any more: removed with its profile, unless a persistent profile makes it"
			}
			out = append(out, Change{Kind: Release, Path: it.Key(), Old: why})
			continue
		}
		cur, exists := curIf[it.Key()]
		for _, fam := range []struct {
			name           string
			was, will, cur *state.IPConfig
		}{{"ipv4", it.IPv4, now.IPv4, cur.IPv4}, {"ipv6", it.IPv6, now.IPv6, cur.IPv6}} {
			if fam.was == nil || !exists {
				continue
			}
			for _, a := range fam.was.Address {
				if !holds(fam.will, a) && holds(fam.cur, a) {
					out = append(out, Change{Kind: Drop, Path: it.Key() + "." + fam.name + ".address", Old: fmt.Sprintf("%s/%d", a.IP, a.PrefixLength)})
				}
			}
		}
	}
	if was.Routes != nil {
		for _, r := range was.Routes.Config {
			if r.State == "absent" || (will.Routes != nil && slices.ContainsFunc(will.Routes.Config, func(w state.Route) bool { return w.String() == r.String() })) {
				continue
			}
			out = append(out, Change{Kind: Drop, Path: "routes.config", Old: r.String()})
		}
	}
	if was.RouteRules != nil {
		for _, r := range was.RouteRules.Config {
			if r.State == "absent" || (will.RouteRules != nil && slices.ContainsFunc(will.RouteRules.Config, func(w state.RouteRule) bool { return w.String() == r.String() })) {
				continue
			}
			out = append(out, Change{Kind: Drop, Path: "route-rules.config", Old: r.String()})
		}
	}
	if was.DNSResolver != nil && was.DNSResolver.Config != nil {
		var willCfg state.DNSConfig
		if will.DNSResolver != nil && will.DNSResolver.Config != nil {
			willCfg = *will.DNSResolver.Config
		}
		for _, s := range was.DNSResolver.Config.Server {
			if !slices.Contains(willCfg.Server, s) {
				out = append(out, Change{Kind: Drop, Path: "dns-resolver.config.server", Old: s})
			}
		}
		for _, s := range was.DNSResolver.Config.Search {
			if !slices.Contains(willCfg.Search, s) {
				out = append(out, Change{Kind: Drop, Path: "dns-resolver.config.search", Old: s})
			}
		}
	}
	return out
}

func holds(c *state.IPConfig, a state.Address) bool {
	if c == nil {
		return false
	}
	return slices.ContainsFunc(c.Address, func(h state.Address) bool {
		x, errX := netip.ParseAddr(h.IP)
		y, errY := netip.ParseAddr(a.IP)
		return errX == nil && errY == nil && x == y && h.PrefixLength == a.PrefixLength
	})
}

// risks are the changes to what the node needs to reach its cluster: the interfaces of
// its default route, of its route to the API server and holding its InternalIP, and its
// default routes themselves.
func risks(changes []Change, n Node, apiServer netip.Addr) []string {
	critical := state.CriticalInterfaces(n.Current, apiServer, n.InternalIPs)
	var out []string
	seen := map[string]bool{}
	var names []string
	for name := range critical {
		names = append(names, name)
	}
	for _, c := range changes {
		iface := interfaceOf(c.Path, names, n.Current, changes)
		if why, ok := critical[iface]; ok && !seen[iface] {
			seen[iface] = true
			// The node's own addresses left out: nodes with the same change print once.
			for _, ip := range n.InternalIPs {
				why = strings.ReplaceAll(why, " "+ip.String(), "")
			}
			out = append(out, why+": the change touches it")
		}
		if c.Path == "routes.config" && (defaultRoute(c.New) || defaultRoute(c.Old)) && !seen["default"] {
			seen["default"] = true
			out = append(out, "the change adds or drops a default route")
		}
	}
	slices.Sort(out)
	return out
}

// interfaceOf is the interface of names a change's path is about ("" for none): its
// owner (state.OwnerOf) among names, the node's interfaces and those the changes create,
// so that a VLAN's path (eth0.100.mtu) is not its base's (eth0).
func interfaceOf(path string, names []string, current state.State, changes []Change) string {
	all := slices.Clone(names)
	for _, it := range current.Interfaces {
		all = append(all, it.Name, it.Key()) // an OVS bridge's path is its own, not its internal interface's
	}
	for _, c := range changes {
		if c.Kind == Create {
			all = append(all, c.Path)
		}
	}
	if best := state.OwnerOf(path, all); slices.Contains(names, best) {
		return best
	}
	return ""
}

// defaultRoute: a route as state.Route.String shows it goes to 0.0.0.0/0 or ::/0.
func defaultRoute(route string) bool {
	return strings.HasPrefix(route, "destination=0.0.0.0/0,") || strings.HasPrefix(route, "destination=::/0,")
}
