package networkmanager

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"

	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/internal/state"

	"github.com/nmoverlay/nmoverlay/api/field"
)

// Route rules live on a profile, as NetworkManager's ipv4.routing-rules and
// ipv6.routing-rules; the kernel's rules follow the profiles that are active.

// Linux's address families and FR_ACT_* rule actions, as NetworkManager's D-Bus API has them.
const (
	afInet  = 2
	afInet6 = 10
)

var ruleActions = map[string]byte{"": 1, "blackhole": 6, "unreachable": 7, "prohibit": 8}

// ruleToNM is a rule (normalized) as a routing-rules entry.
func ruleToNM(r state.RouteRule) map[string]dbus.Variant {
	n := r.Normalized()
	family := int32(afInet)
	if n.Family == "ipv6" {
		family = afInet6
	}
	m := map[string]dbus.Variant{
		"family":   dbus.MakeVariant(family),
		"priority": dbus.MakeVariant(uint32(*n.Priority)),
		"action":   dbus.MakeVariant(ruleActions[n.Action]),
	}
	for _, f := range [][3]string{{n.IPFrom, "from", "from-len"}, {n.IPTo, "to", "to-len"}} {
		if pfx, err := netip.ParsePrefix(f[0]); err == nil {
			m[f[1]] = dbus.MakeVariant(pfx.Addr().String())
			m[f[2]] = dbus.MakeVariant(byte(pfx.Bits()))
		}
	}
	if n.RouteTable != nil {
		m["table"] = dbus.MakeVariant(uint32(*n.RouteTable))
	}
	if n.FWMark != nil {
		m["fwmark"] = dbus.MakeVariant(uint32(*n.FWMark))
		mask := uint32(0xffffffff) // the kernel's default: the whole mark
		if n.FWMask != nil {
			mask = uint32(*n.FWMask)
		}
		m["fwmask"] = dbus.MakeVariant(mask)
	}
	if n.IIF != "" {
		m["iifname"] = dbus.MakeVariant(n.IIF)
	}
	if n.SuppressPrefixLength != nil {
		m["suppress-prefixlength"] = dbus.MakeVariant(int32(*n.SuppressPrefixLength))
	}
	return m
}

// ruleFromNM reads a routing-rules entry back as nmstate shows it.
func ruleFromNM(m map[string]dbus.Variant) state.RouteRule {
	r := state.RouteRule{Family: "ipv4"}
	if f, _ := m["family"].Value().(int32); f == afInet6 {
		r.Family = "ipv6"
	}
	for _, f := range []struct {
		addr, length string
		dst          *string
	}{{"from", "from-len", &r.IPFrom}, {"to", "to-len", &r.IPTo}} {
		if s, ok := m[f.addr].Value().(string); ok && s != "" {
			bits, _ := m[f.length].Value().(byte)
			if a, err := netip.ParseAddr(s); err == nil {
				*f.dst = netip.PrefixFrom(a, int(bits)).String()
			}
		}
	}
	u32 := func(key string) *int {
		if v, ok := m[key].Value().(uint32); ok {
			i := int(v)
			return &i
		}
		return nil
	}
	r.Priority, r.RouteTable, r.FWMark, r.FWMask = u32("priority"), u32("table"), u32("fwmark"), u32("fwmask")
	if r.RouteTable != nil && *r.RouteTable == 0 {
		r.RouteTable = nil
	}
	if r.FWMark == nil || *r.FWMark == 0 && (r.FWMask == nil || *r.FWMask == 0) {
		r.FWMark, r.FWMask = nil, nil
	} else if r.FWMask != nil && uint32(*r.FWMask) == 0xffffffff {
		r.FWMask = nil
	}
	if iif, ok := m["iifname"].Value().(string); ok {
		r.IIF = iif
	}
	if a, ok := m["action"].Value().(byte); ok {
		for name, code := range ruleActions {
			if code == a {
				r.Action = name
			}
		}
	}
	if v, ok := m["suppress-prefixlength"].Value().(int32); ok && v >= 0 {
		i := int(v)
		r.SuppressPrefixLength = &i
	}
	return r
}

// profileRules are the rules a profile holds, both families.
func profileRules(s settings) []state.RouteRule {
	var out []state.RouteRule
	for _, fam := range ipFamilies {
		for _, m := range dictList(s[fam]["routing-rules"]) {
			out = append(out, ruleFromNM(m))
		}
	}
	return out
}

// setRoutingRules adds the family's rules to those the profile has and removes those an
// absent rule selects; rules of the other family are skipped.
func setRoutingRules(s settings, family string, want []state.RouteRule) {
	v6 := family == "ipv6"
	var rules []map[string]dbus.Variant
	rules = append(rules, dictList(s[family]["routing-rules"])...)
	for _, r := range want {
		if r.State == "absent" {
			if n := r.Normalized(); n.Family == "" || (n.Family == "ipv6") == v6 {
				rules = slices.DeleteFunc(rules, func(m map[string]dbus.Variant) bool { return r.Selects(ruleFromNM(m)) })
			}
			continue
		}
		if r.IsIPv6() != v6 {
			continue
		}
		if !slices.ContainsFunc(rules, func(m map[string]dbus.Variant) bool { return r.Same(ruleFromNM(m)) }) {
			rules = append(rules, ruleToNM(r))
		}
	}
	if rules == nil {
		rules = []map[string]dbus.Variant{}
	}
	s.set(family, "routing-rules", rules)
}

// ruleCarriers are the interfaces whose profiles the rule at index i changes. A rule to
// add goes on its iif; else on an interface of the desired state that routes the rule's
// table (one of its routes there, of the family), else one with the family on; none of
// them: refused, nothing changed. A rule to remove leaves every profile (owned, or the
// persistent one the interface runs, shadowed) holding a rule it selects.
func (h *host) ruleCarriers(i int, r state.RouteRule, desired state.State, prune bool) ([]string, error) {
	if r.State == "absent" {
		return h.holders(prune, func(s settings, _ string) bool { return slices.ContainsFunc(profileRules(s), r.Selects) }), nil
	}
	if r.IIF != "" {
		return []string{r.IIF}, nil
	}
	v6 := r.IsIPv6()
	if table := r.Table(); table != 0 && desired.Routes != nil {
		var via []string
		for _, rt := range desired.Routes.Config {
			t := state.MainRouteTable
			if rt.TableID != nil && *rt.TableID != 0 {
				t = *rt.TableID
			}
			if rt.State != "absent" && t == table && (rt.Family() == 6) == v6 && rt.NextHopInterface != "" {
				via = append(via, rt.NextHopInterface)
			}
		}
		if len(via) > 0 {
			sort.Strings(via)
			return via[:1], nil
		}
	}
	for _, it := range desired.Interfaces {
		c := it.IPv4
		if v6 {
			c = it.IPv6
		}
		if it.State != state.Absent && it.State != state.Down && c != nil && (c.Enabled == nil || *c.Enabled) &&
			(len(c.Address) > 0 || c.DHCP != nil && *c.DHCP || c.Autoconf != nil && *c.Autoconf) {
			return []string{it.Name}, nil
		}
	}
	return nil, &field.Error{Path: fmt.Sprintf("route-rules.config[%d]", i), Reason: fmt.Sprintf(
		"no interface can carry %s (NetworkManager keeps rules on an interface's profile): name its iif, or route its table through an interface of this desired state (nothing was changed)", r.Normalized())}
}
