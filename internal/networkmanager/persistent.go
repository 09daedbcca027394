package networkmanager

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nmoverlay/nmoverlay/internal/backend"
	"github.com/nmoverlay/nmoverlay/internal/migration"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// PersistentPlan is the backend's plan of the profiles in dir, NetworkManager's
// persistent keyfile dir, for the policies in force (backend.PersistentPlanner).
func (Backend) PersistentPlan(dir string, sources []backend.Parsed, critical map[string]string) (migration.Plan, error) {
	profiles, err := migration.ReadProfiles(dir)
	if err != nil {
		return migration.Plan{}, err
	}
	in, err := backend.NMStateSources(sources)
	if err != nil {
		return migration.Plan{}, err
	}
	return PersistentPlan(profiles, in, critical), nil
}

// PersistentPlan decides, for the profiles in a node's persistent keyfile dir, which the
// policies in force (their desired states, captures resolved) wrote, as nmstate writes
// them through NetworkManager: a profile for an interface a policy names
// (connection.interface-name, and the connection.type of its kind), the OVS port profile
// of each port of a policy's OVS bridge, and a port's profile whose controller is a
// policy's interface or such an OVS port. Those move; the rest stay, each with why. A
// profile the node needs to boot stays too, whatever wrote it: critical's interfaces
// and, through the policies, what they need (their ports, their base, their controller),
// so that the node still reaches the cluster before its handler runs (critical: interface
// -> why, as state.CriticalInterfaces says).
func PersistentPlan(profiles []migration.Profile, policies []state.Source, critical map[string]string) migration.Plan {
	names := policyInterfaces(policies)
	needed := state.NeededToBoot(policies, critical)
	// owners: for each profile a policy accounts for, the interface of the policy's that
	// makes it (for a port, its controller). Ports are found from their controllers'
	// profiles, so the search runs until it finds no more (an OVS system port's profile is
	// controlled by its OVS port profile, which its bridge controls).
	owners := map[int]string{}
	for i, p := range profiles {
		if n, ok := names[p.Interface]; ok && typeFits(p.Type, n.types) {
			owners[i] = p.Interface
		}
	}
	for found := true; found; {
		found = false
		for i, p := range profiles {
			if _, ok := owners[i]; ok || p.Controller == "" {
				continue
			}
			if owner, ok := controllerOwner(p, profiles, owners, names); ok {
				owners[i], found = owner, true
			}
		}
	}
	plan := migration.Plan{Move: []migration.Entry{}, Stay: []migration.Entry{}}
	for i, p := range profiles {
		e := migration.Entry{Profile: p}
		owner, owned := owners[i]
		switch n, named := names[p.Interface]; {
		case owned:
			if why, ok := needed[owner]; ok {
				e.Why = fmt.Sprintf("%s: the node needs it to boot, so it stays persistent (policies %s)", why, strings.Join(names[owner].policies, ", "))
			} else {
				e.Policies = names[owner].policies
			}
		case p.Interface == "":
			e.Why = "names no interface: no policy accounts for it"
		case named:
			e.Why = fmt.Sprintf("a %s profile, and the policies in force make %s a %s: no policy accounts for it",
				p.Type, p.Interface, strings.Join(kindNames(n.types), " or "))
		default:
			e.Why = fmt.Sprintf("no policy in force names %s", p.Interface)
		}
		if e.Policies != nil {
			plan.Move = append(plan.Move, e)
		} else {
			plan.Stay = append(plan.Stay, e)
		}
	}
	return plan
}

// controllerOwner finds, for a port's profile p, the policy interface that makes it: its
// controller (by name, or by the UUID of a profile a policy accounts for) is a policy's
// interface whose ports include p's interface; or it is an OVS port profile a policy
// accounts for, named as p's interface or by its UUID, whose owner is then p's.
func controllerOwner(p migration.Profile, profiles []migration.Profile, owners map[int]string, names map[string]*named) (string, bool) {
	for j, c := range profiles {
		owner, ok := owners[j]
		if !ok || (c.UUID != p.Controller && c.Interface != p.Controller) {
			continue
		}
		if ovsPort := connectionType(state.OVSPort); c.Type == ovsPort && p.PortType == ovsPort {
			return owner, true
		}
		if c.Interface == owner && slices.Contains(names[owner].ports, p.Interface) {
			return owner, true
		}
	}
	if n, ok := names[p.Controller]; ok && slices.Contains(n.ports, p.Interface) {
		return p.Controller, true
	}
	return "", false
}

// named is what the policies say of one interface name.
type named struct {
	types    []state.InterfaceType
	policies []string
	// ports are the names of its ports, as a controller.
	ports []string
}

// policyInterfaces are the interfaces the policies in force name, but those they remove: for each,
// its kinds (an OVS bridge and its internal interface share a name) and the policies.
func policyInterfaces(policies []state.Source) map[string]*named {
	out := map[string]*named{}
	for _, pol := range policies {
		for _, it := range pol.State.Interfaces {
			if it.State == state.Absent {
				continue
			}
			n := out[it.Name]
			if n == nil {
				n = &named{}
				out[it.Name] = n
			}
			if it.Type != "" && !slices.Contains(n.types, it.Type) {
				n.types = append(n.types, it.Type)
			}
			if !slices.Contains(n.policies, pol.Policy) {
				n.policies = append(n.policies, pol.Policy)
			}
			for _, r := range it.References() {
				if r.Kind == state.RefPort && !slices.Contains(n.ports, r.Name) {
					n.ports = append(n.ports, r.Name)
				}
			}
			// An OVS bond is a port of its bridge, with an OVS port profile of its name,
			// though it is no interface.
			if b, ok := it.Section.(*state.BridgeConfig); ok {
				for _, port := range b.Port {
					if port.LinkAggregation != nil && !slices.Contains(n.ports, port.Name) {
						n.ports = append(n.ports, port.Name)
					}
				}
			}
		}
	}
	for _, n := range out {
		slices.Sort(n.policies)
	}
	return out
}

// typeFits says whether a profile of NetworkManager type t is one of the kinds; an
// ethernet interface's profile may be a veth's, as nmstate makes it.
func typeFits(t string, kinds []state.InterfaceType) bool {
	for _, k := range kinds {
		if connectionType(k) == t || k == state.Ethernet && t == connectionType(state.Veth) {
			return true
		}
	}
	return false
}

func kindNames(kinds []state.InterfaceType) []string {
	var out []string
	for _, k := range kinds {
		out = append(out, string(k))
	}
	return out
}
