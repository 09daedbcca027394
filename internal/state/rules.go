package state

import (
	"fmt"
	"slices"
	"strings"
)

// fullMask is a firewall mark mask that keeps the whole mark.
const fullMask = 0xffffffff

// IsIPv6 says whether the rule is of the IPv6 family: its family, else its addresses.
func (r RouteRule) IsIPv6() bool {
	if r.Family != "" {
		return r.Family == "ipv6"
	}
	for _, s := range []string{r.IPFrom, r.IPTo} {
		if pfx, err := parseRulePrefix(s); err == nil {
			return pfx.Addr().Is6()
		}
	}
	return false
}

// Normalized is the rule as NetworkManager holds it and reads it back: its family stated,
// addresses as prefixes, and, for a rule to add, the priority and table nmstate fills in
// when left out (30000; main for a rule without an action). An absent rule keeps its
// wildcards.
func (r RouteRule) Normalized() RouteRule {
	n := r
	n.Family = "ipv4"
	if r.IsIPv6() {
		n.Family = "ipv6"
	}
	for _, f := range []*string{&n.IPFrom, &n.IPTo} {
		if pfx, err := parseRulePrefix(*f); err == nil {
			*f = pfx.String()
		}
	}
	if n.FWMask != nil && *n.FWMask == fullMask {
		n.FWMask = nil // the kernel's default for a mark: NetworkManager reads it back so
	}
	if r.State == "absent" {
		if r.Family == "" && r.IPFrom == "" && r.IPTo == "" {
			n.Family = "" // any family
		}
		return n
	}
	if n.Priority == nil {
		p := DefaultRulePriority
		n.Priority = &p
	}
	if n.RouteTable == nil && n.Action == "" {
		t := MainRouteTable
		n.RouteTable = &t
	}
	return n
}

// Selects says whether the absent rule r selects the rule other: every field r states
// equals other's (both normalized).
func (r RouteRule) Selects(other RouteRule) bool {
	a, b := r.Normalized(), other.Normalized()
	eqInt := func(x, y *int) bool { return x == nil || (y != nil && *x == *y) }
	eqStr := func(x, y string) bool { return x == "" || x == y }
	return eqStr(a.Family, b.Family) && eqStr(a.IPFrom, b.IPFrom) && eqStr(a.IPTo, b.IPTo) && eqStr(a.IIF, b.IIF) &&
		eqStr(a.Action, b.Action) && eqInt(a.Priority, b.Priority) && eqInt(a.RouteTable, b.RouteTable) &&
		eqInt(a.FWMark, b.FWMark) && eqInt(a.FWMask, b.FWMask) && eqInt(a.SuppressPrefixLength, b.SuppressPrefixLength)
}

// Same says whether two rules to add are the same rule once normalized.
func (r RouteRule) Same(other RouteRule) bool {
	a, b := r.Normalized(), other.Normalized()
	a.State, b.State = "", ""
	return a.String() == b.String()
}

// Table is the table the rule looks up, 0 for a rule with an action.
func (r RouteRule) Table() int {
	if n := r.Normalized(); n.RouteTable != nil {
		return *n.RouteTable
	}
	return 0
}

// String is the rule as ip rule would say it, for messages.
func (r RouteRule) String() string {
	var parts []string
	add := func(k string, v any) { parts = append(parts, fmt.Sprintf("%s %v", k, v)) }
	if r.Family != "" {
		parts = append(parts, r.Family)
	}
	if r.Priority != nil {
		add("priority", *r.Priority)
	}
	if r.IPFrom != "" {
		add("from", r.IPFrom)
	}
	if r.IPTo != "" {
		add("to", r.IPTo)
	}
	if r.FWMark != nil {
		mark := fmt.Sprintf("0x%x", *r.FWMark)
		if r.FWMask != nil {
			mark += fmt.Sprintf("/0x%x", *r.FWMask)
		}
		add("fwmark", mark)
	}
	if r.IIF != "" {
		add("iif", r.IIF)
	}
	if r.RouteTable != nil {
		add("table", *r.RouteTable)
	}
	if r.SuppressPrefixLength != nil {
		add("suppress_prefixlength", *r.SuppressPrefixLength)
	}
	if r.Action != "" {
		parts = append(parts, r.Action)
	}
	if r.State == "absent" {
		parts = append(parts, "(absent)")
	}
	return strings.Join(parts, " ")
}

func verifyRouteRules(add func(string, ...any), desired, current *RouteRules) {
	if desired == nil {
		return
	}
	var have []RouteRule
	if current != nil {
		have = current.Config
	}
	for _, want := range desired.Config {
		if want.State == "absent" {
			for _, r := range have {
				// Removing and adding a rule in one state replaces it (nmstate's way).
				wanted := slices.ContainsFunc(desired.Config, func(d RouteRule) bool { return d.State != "absent" && d.Same(r) })
				if want.Selects(r) && !wanted {
					add("route-rules.config[%s]: %s still configured, want absent", want, r)
				}
			}
			continue
		}
		found := false
		for _, r := range have {
			found = found || want.Same(r)
		}
		if !found {
			add("route-rules.config[%s]: missing", want.Normalized())
		}
	}
}
