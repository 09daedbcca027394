package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// What an apply changes beyond the fields the engine's verification names: what the
// kernel, NetworkManager or Open vSwitch do as a consequence. The node tier and the VM
// tier compare plans with what applies then did (test/accuracy); each of these was found
// there.

// removed are the interfaces the desired state states absent that the node has, in any
// state: verification names only those still up, but the apply removes a down one too.
func removed(changes []Change, desired, current state.State) []Change {
	var out []Change
	for _, it := range desired.Interfaces {
		if it.State != state.Absent {
			continue
		}
		for _, cur := range current.Interfaces {
			if cur.Name != it.Name || (it.Type != "" && cur.Type != it.Type) || has(changes, Remove, cur.Key()) {
				continue
			}
			out = append(out, Change{Kind: Remove, Path: cur.Key()})
		}
	}
	return out
}

// orphaned are the ports of the controllers the change removes: an OVS bridge's internal
// interfaces go with it; any other port is released (no longer a port, it runs its own
// profile, or none), unless the change states it.
func orphaned(changes []Change, desired, current state.State) []Change {
	stated := map[string]bool{}
	for _, it := range desired.Interfaces {
		stated[it.Name] = true
	}
	byKey := map[string]state.Interface{}
	for _, it := range current.Interfaces {
		byKey[it.Key()] = it
	}
	var out []Change
	for _, c := range changes {
		controller, ok := byKey[c.Path]
		if c.Kind != Remove || !ok {
			continue
		}
		for _, r := range controller.References() {
			if r.Kind != state.RefPort || r.Name == controller.Name && controller.Type != state.OVSBridge {
				continue
			}
			internal := controller.Type == state.OVSBridge
			port, exists := byKey[r.Name]
			if !exists || has(changes, Remove, port.Key()) {
				continue
			}
			switch {
			case internal && port.Type == state.OVSInterface:
				out = append(out, Change{Kind: Remove, Path: port.Key()})
			case !stated[port.Name]:
				out = append(out, Change{Kind: Release, Path: port.Key(), Old: fmt.Sprintf("its controller %s goes: no longer a port, it runs its own profile, or none", controller.Name)})
			}
		}
	}
	return out
}

// peers are the peers of the veths the change creates: the kernel makes both ends.
func peers(changes []Change, desired, current state.State) []Change {
	var out []Change
	for _, c := range changes {
		if c.Kind != Create {
			continue
		}
		made, ok := created(c, desired)
		if !ok {
			continue
		}
		v := state.SectionOf[*state.VethConfig](made)
		if v == nil || v.Peer == "" || slices.ContainsFunc(current.Interfaces, func(it state.Interface) bool { return it.Name == v.Peer }) ||
			has(changes, Create, v.Peer) || slices.ContainsFunc(desired.Interfaces, func(it state.Interface) bool { return it.Name == v.Peer }) {
			continue
		}
		out = append(out, Change{Kind: Create, Path: v.Peer, New: fmt.Sprintf("(veth; peer of %s)", made.Name)})
	}
	return out
}

// replacedRoutes are the routes the node has that a stated route replaces: the engine
// keeps one route per destination, next hop and table, the stated one, where
// verification accepts a route that has what is stated and more (a cwnd, a source).
func replacedRoutes(desired, current state.State) []Change {
	if desired.Routes == nil || current.Routes == nil {
		return nil
	}
	var out []Change
	for _, want := range desired.Routes.Config {
		if want.State == "absent" {
			continue
		}
		for _, have := range current.Routes.Config {
			if routeKey(have) == routeKey(want) && normal(have).String() != normal(want).String() && !stillStated(have, desired.Routes.Config) {
				out = append(out, Change{Kind: Set, Path: "routes.config", Old: have.String(), New: want.String()})
			}
		}
	}
	return out
}

// routeKey is what makes two routes one for the engine: destination, next hop and table
// (the main table when none is given).
func routeKey(r state.Route) string {
	table := 254
	if r.TableID != nil && *r.TableID != 0 {
		table = *r.TableID
	}
	return fmt.Sprintf("%s %s %d", r.Destination, r.NextHopAddress, table)
}

// normal is r as the node shows it: in the main table where none is given, and a
// blackhole (unreachable, prohibit) route on lo.
func normal(r state.Route) state.Route {
	if r.TableID == nil || *r.TableID == 0 {
		main := 254
		r.TableID = &main
	}
	if r.RouteType != "" {
		r.NextHopInterface = "lo"
	}
	return r
}

func stillStated(r state.Route, routes []state.Route) bool {
	return slices.ContainsFunc(routes, func(w state.Route) bool { return normal(w).String() == normal(r).String() })
}

// created is the interface of desired a create change makes.
func created(c Change, desired state.State) (state.Interface, bool) {
	i := slices.IndexFunc(desired.Interfaces, func(it state.Interface) bool { return it.Key() == c.Path })
	if c.Kind != Create || i < 0 {
		return state.Interface{}, false
	}
	return desired.Interfaces[i], true
}

func has(changes []Change, kind Kind, path string) bool {
	return slices.ContainsFunc(changes, func(c Change) bool { return c.Kind == kind && c.Path == path })
}

// unique drops repeated changes (a port's state named by verification and by adoption).
func unique(changes []Change) []Change {
	seen := map[string]bool{}
	return slices.DeleteFunc(changes, func(c Change) bool {
		k := strings.Join([]string{string(c.Kind), c.Path, c.Old, c.New}, "\x00")
		if seen[k] {
			return true
		}
		seen[k] = true
		return false
	})
}
