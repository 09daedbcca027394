package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/nmoverlay/nmoverlay/api/field"
)

// Source is one policy's desired state for a node.
type Source struct {
	Policy string
	State  State
}

// Merged is the one desired state of a node, merged from its policies.
type Merged struct {
	State State
	// Owners names, for each interface (and "routes", "dns-resolver"), the policies that set it.
	Owners map[string][]string
}

// Conflict is a field two policies set differently, or a problem that only the merged
// state has; it names the policies involved.
type Conflict struct {
	Path     string
	Reason   string
	Policies []string
}

func (c *Conflict) Error() string {
	return fmt.Sprintf("%s: %s (policies %s)", c.Path, c.Reason, strings.Join(quoteAll(c.Policies), ", "))
}

// Conflicts are every conflict found while merging.
type Conflicts []*Conflict

func (c Conflicts) Error() string {
	parts := make([]string, len(c))
	for i, e := range c {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

// Merge combines the desired states of a node's policies. An interface named by several
// policies gets the union of their fields; a field they set differently is a conflict
// naming both. The result does not depend on the order of sources.
func Merge(sources []Source) (Merged, error) {
	sorted := append([]Source(nil), sources...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Policy < sorted[j].Policy })

	m := Merged{Owners: map[string][]string{}}
	conflicts, err := m.mergeInterfaces(sorted)
	if err != nil {
		return Merged{}, err
	}
	routeOwner := m.mergeRoutes(sorted)
	conflicts = append(conflicts, m.removedRouteConflicts(routeOwner)...)
	conflicts = append(conflicts, m.mergeDNS(sorted)...)
	conflicts = append(conflicts, m.mergeOVN(sorted)...)
	conflicts = append(conflicts, m.mergeRouteRules(sorted)...)

	if m.State.DNSResolver != nil {
		m.State.DNSResolver.Interfaces = namedBy(sorted, m.Owners["dns-resolver"])
	}

	adoptPorts(&m.State)

	// What no single policy shows: two controllers claiming one port, a VLAN on an
	// interface another policy removes.
	if len(conflicts) == 0 {
		for _, e := range Validate(m.State) {
			conflicts = append(conflicts, m.attribute(e))
		}
	}
	if len(conflicts) > 0 {
		return Merged{}, conflicts
	}
	return m, nil
}

// mergeInterfaces sets m's interfaces to the field-by-field union of the sources'
// interfaces, in the order they are first named, and returns the fields two policies
// set differently.
func (m *Merged) mergeInterfaces(sorted []Source) (Conflicts, error) {
	var conflicts Conflicts
	fields := map[string]map[string]json.RawMessage{}     // interface -> field -> value
	fieldOwner := map[string]map[string]string{}          // interface -> field -> policy
	fieldShown := map[string]map[string]json.RawMessage{} // as a conflict shows it: secrets hidden
	var names []string
	for _, src := range sorted {
		for _, it := range src.State.Interfaces {
			f, err := interfaceFields(it)
			if err != nil {
				return nil, err
			}
			shown, err := interfaceFields(hideSecrets(it))
			if err != nil {
				return nil, err
			}
			key := it.Key()
			if _, ok := fields[key]; !ok {
				fields[key], fieldOwner[key] = map[string]json.RawMessage{}, map[string]string{}
				fieldShown[key] = map[string]json.RawMessage{}
				names = append(names, key)
			}
			m.Owners[key] = appendOnce(m.Owners[key], src.Policy)
			keys := make([]string, 0, len(f))
			for k := range f {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				prev, ok := fields[key][k]
				switch {
				case !ok:
					fields[key][k], fieldOwner[key][k], fieldShown[key][k] = f[k], src.Policy, shown[k]
				case !bytes.Equal(prev, f[k]):
					reason := fmt.Sprintf("policy %q sets %s, policy %q sets %s", fieldOwner[key][k], fieldShown[key][k], src.Policy, shown[k])
					if bytes.Equal(fieldShown[key][k], shown[k]) {
						reason += " (their secrets differ)"
					}
					if k == "state" && (string(prev) == `"absent"` || string(f[k]) == `"absent"`) {
						reason += undoHint
					}
					conflicts = append(conflicts, &Conflict{
						Path:     fmt.Sprintf("interfaces[name=%s].%s", key, k),
						Reason:   reason,
						Policies: []string{fieldOwner[key][k], src.Policy},
					})
				}
			}
		}
	}
	for _, name := range names {
		raw, _ := json.Marshal(fields[name])
		var it Interface
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, err
		}
		m.State.Interfaces = append(m.State.Interfaces, it)
	}
	return conflicts, nil
}

// interfaceFields returns the fields an interface sets, each as its JSON value, so that
// policies can be compared and merged field by field.
func interfaceFields(it Interface) (map[string]json.RawMessage, error) {
	if it.State == "" {
		it.State = Up // nmstate's default: saying nothing is saying up
	}
	raw, err := json.Marshal(it)
	if err != nil {
		return nil, err
	}
	var f map[string]json.RawMessage
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, err
	}
	return f, nil
}

// mergeRoutes sets m's routes to every distinct route of the sources, and returns, for
// each route (by routeKey), the policy that first set it.
func (m *Merged) mergeRoutes(sorted []Source) map[string]string {
	routeOwner := map[string]string{}
	for _, src := range sorted {
		if src.State.Routes == nil {
			continue
		}
		for _, r := range src.State.Routes.Config {
			if m.State.Routes == nil {
				m.State.Routes = &Routes{}
			}
			key := routeKey(r)
			if owner, dup := routeOwner[key]; dup {
				if owner != src.Policy {
					m.Owners["routes"] = appendOnce(m.Owners["routes"], src.Policy)
				}
				continue
			}
			routeOwner[key] = src.Policy
			m.State.Routes.Config = append(m.State.Routes.Config, r)
			m.Owners["routes"] = appendOnce(m.Owners["routes"], src.Policy)
		}
	}
	return routeOwner
}

// removedRouteConflicts finds a route one policy adds and another removes (an absent
// route selects it, its left-out fields wildcards): within one policy the removal comes
// first, nmstate's way of replacing routes; across two it is a conflict.
func (m *Merged) removedRouteConflicts(routeOwner map[string]string) Conflicts {
	if m.State.Routes == nil {
		return nil
	}
	var conflicts Conflicts
	for _, gone := range m.State.Routes.Config {
		if gone.State != "absent" {
			continue
		}
		for _, r := range m.State.Routes.Config {
			a, b := routeOwner[routeKey(gone)], routeOwner[routeKey(r)]
			if r.State != "absent" && a != b && gone.Selects(r) {
				conflicts = append(conflicts, &Conflict{
					Path:     "routes.config[" + r.String() + "]",
					Reason:   fmt.Sprintf("policy %q adds the route and policy %q removes it%s", b, a, undoHint),
					Policies: []string{b, a},
				})
			}
		}
	}
	return conflicts
}

// mergeDNS sets m's DNS configuration to the first policy's; a policy that sets a
// different one is a conflict, since DNS configuration is not merged field by field.
func (m *Merged) mergeDNS(sorted []Source) Conflicts {
	var conflicts Conflicts
	dnsOwner := ""
	for _, src := range sorted {
		if src.State.DNSResolver == nil || src.State.DNSResolver.Config == nil {
			continue
		}
		cfg := src.State.DNSResolver.Config
		if m.State.DNSResolver == nil {
			m.State.DNSResolver = &DNSResolver{Config: cfg}
			dnsOwner = src.Policy
			m.Owners["dns-resolver"] = []string{src.Policy}
			continue
		}
		a, _ := json.Marshal(m.State.DNSResolver.Config)
		b, _ := json.Marshal(cfg)
		if !bytes.Equal(a, b) {
			conflicts = append(conflicts, &Conflict{
				Path:     "dns-resolver.config",
				Reason:   fmt.Sprintf("policy %q sets %s, policy %q sets %s", dnsOwner, a, src.Policy, b),
				Policies: []string{dnsOwner, src.Policy},
			})
			continue
		}
		m.Owners["dns-resolver"] = appendOnce(m.Owners["dns-resolver"], src.Policy)
	}
	return conflicts
}

// mergeRouteRules sets m's route rules to every distinct rule of the sources; a rule one
// policy adds and another removes (an absent rule selects it) is a conflict. Within one
// policy the removal comes first, as for routes.
func (m *Merged) mergeRouteRules(sorted []Source) Conflicts {
	owner := map[string]string{}
	for _, src := range sorted {
		if src.State.RouteRules == nil {
			continue
		}
		for _, r := range src.State.RouteRules.Config {
			if m.State.RouteRules == nil {
				m.State.RouteRules = &RouteRules{}
			}
			m.Owners["route-rules"] = appendOnce(m.Owners["route-rules"], src.Policy)
			key := r.Normalized().String()
			if _, dup := owner[key]; dup {
				continue
			}
			owner[key] = src.Policy
			m.State.RouteRules.Config = append(m.State.RouteRules.Config, r)
		}
	}
	if m.State.RouteRules == nil {
		return nil
	}
	var conflicts Conflicts
	for _, gone := range m.State.RouteRules.Config {
		if gone.State != "absent" {
			continue
		}
		for _, r := range m.State.RouteRules.Config {
			a, b := owner[gone.Normalized().String()], owner[r.Normalized().String()]
			if r.State != "absent" && a != b && gone.Selects(r) {
				conflicts = append(conflicts, &Conflict{
					Path:     "route-rules.config[" + r.Normalized().String() + "]",
					Reason:   fmt.Sprintf("policy %q adds the rule and policy %q removes it%s", b, a, undoHint),
					Policies: []string{b, a},
				})
			}
		}
	}
	return conflicts
}

// mergeOVN sets m's bridge mappings to the union of the sources', by localnet: a localnet
// that two policies map differently, or that one maps and another removes, is a conflict.
func (m *Merged) mergeOVN(sorted []Source) Conflicts {
	var conflicts Conflicts
	owner := map[string]string{}
	byLocalnet := map[string]int{}
	for _, src := range sorted {
		if src.State.OVN == nil {
			continue
		}
		for _, bm := range src.State.OVN.BridgeMappings {
			if m.State.OVN == nil {
				m.State.OVN = &OVN{}
			}
			m.Owners["ovn"] = appendOnce(m.Owners["ovn"], src.Policy)
			norm := bm // compared by what it does: present is the default, an absent one's bridge does not matter
			if norm.State == "present" {
				norm.State = ""
			}
			if norm.Absent() {
				norm.Bridge = ""
			}
			i, seen := byLocalnet[bm.Localnet]
			if !seen {
				byLocalnet[bm.Localnet], owner[bm.Localnet] = len(m.State.OVN.BridgeMappings), src.Policy
				m.State.OVN.BridgeMappings = append(m.State.OVN.BridgeMappings, norm)
				continue
			}
			if prev := m.State.OVN.BridgeMappings[i]; prev != norm {
				reason := fmt.Sprintf("policy %q maps it to %s, policy %q to %s", owner[bm.Localnet], mappingText(prev), src.Policy, mappingText(norm))
				if prev.Absent() != norm.Absent() {
					reason += undoHint
				}
				conflicts = append(conflicts, &Conflict{
					Path:     "ovn.bridge-mappings[localnet=" + bm.Localnet + "]",
					Reason:   reason,
					Policies: []string{owner[bm.Localnet], src.Policy},
				})
			}
		}
	}
	return conflicts
}

func mappingText(m BridgeMapping) string {
	if m.Absent() {
		return "nothing (state: absent)"
	}
	return strconv.Quote(m.Bridge)
}

// undoHint: nmoverlay applies a node's policies together where kubernetes-nmstate applies
// them one after another, so a clean-up policy cannot undo a policy that is still there.
const undoHint = "; a node's policies apply together here, so a policy cannot undo another that still exists: " +
	"delete the policy that made the change instead (deleting a policy reverts what it applied)"

var ifaceIndex = regexp.MustCompile(`interfaces\[(\d+)\]`)

// attribute turns an error in the merged state into a conflict: indexes of the merged
// list become interface names, and every policy behind an interface it mentions is named.
func (m Merged) attribute(e *field.Error) *Conflict {
	named := func(s string) string {
		return ifaceIndex.ReplaceAllStringFunc(s, func(match string) string {
			i, _ := strconv.Atoi(ifaceIndex.FindStringSubmatch(match)[1])
			return "interfaces[name=" + m.State.Interfaces[i].Key() + "]"
		})
	}
	c := &Conflict{Path: named(e.Path), Reason: named(e.Reason)}
	for name, policies := range m.Owners {
		if strings.Contains(c.Path, "[name="+name+"]") || strings.Contains(c.Reason, strconv.Quote(name)) ||
			strings.Contains(c.Reason, "[name="+name+"]") || strings.HasPrefix(c.Path, name) {
			for _, p := range policies {
				c.Policies = appendOnce(c.Policies, p)
			}
		}
	}
	sort.Strings(c.Policies)
	return c
}

// namedBy lists, once each and in policy order, the interfaces the given policies name
// with a state other than absent, and those their routes go through.
func namedBy(sources []Source, policies []string) []string {
	var names []string
	for _, src := range sources {
		if !slices.Contains(policies, src.Policy) {
			continue
		}
		for _, it := range src.State.Interfaces {
			if it.State != Absent {
				names = appendOnce(names, it.Name)
			}
		}
		if src.State.Routes != nil {
			for _, r := range src.State.Routes.Config {
				if r.State != "absent" && r.NextHopInterface != "" {
					names = appendOnce(names, r.NextHopInterface)
				}
			}
		}
	}
	return names
}

func routeKey(r Route) string {
	b, _ := json.Marshal(r)
	return string(b)
}

func appendOnce(list []string, s string) []string {
	for _, e := range list {
		if e == s {
			return list
		}
	}
	return append(list, s)
}

func quoteAll(s []string) []string {
	q := make([]string, len(s))
	for i, e := range s {
		q[i] = strconv.Quote(e)
	}
	return q
}
