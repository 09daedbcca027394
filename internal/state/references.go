package state

import "slices"

// RefKind is how an interface names another.
type RefKind int

const (
	// RefBase: the interface it is built on (a VLAN's, MAC-VLAN's, VXLAN's or InfiniBand
	// partition's base-iface).
	RefBase RefKind = iota
	// RefPort: one of its ports (a bond's, a Linux or OVS bridge's, an OVS bond's in its
	// bridge, a VRF's).
	RefPort
	// RefMACSource: the interface whose MAC address it takes (copy-mac-from).
	RefMACSource
)

// Reference is one mention of another interface in an interface's fields.
type Reference struct {
	Kind RefKind
	// Field is its path under the interface: "vlan.base-iface",
	// "bridge.port[2].link-aggregation.port[0]".
	Field string
	Name  string
	at    *string // where the interface holds it
}

// References walks the fields of it that name other interfaces, in field order. It is
// the one place that knows which fields those are: validation, ordering and renaming all
// go through it, so a kind's new reference is added here alone.
func (it Interface) References() []Reference {
	var refs []Reference
	add := func(kind RefKind, field string, at *string) {
		refs = append(refs, Reference{Kind: kind, Field: field, Name: *at, at: at})
	}
	switch {
	case it.VLAN != nil:
		add(RefBase, "vlan.base-iface", &it.VLAN.BaseIface)
	case it.MACVLAN != nil:
		add(RefBase, "mac-vlan.base-iface", &it.MACVLAN.BaseIface)
	case it.VXLAN != nil && it.VXLAN.BaseIface != "": // optional: a VXLAN may be built on none
		add(RefBase, "vxlan.base-iface", &it.VXLAN.BaseIface)
	case it.InfiniBand != nil && it.InfiniBand.BaseIface != "": // a partition's adapter port
		add(RefBase, "infiniband.base-iface", &it.InfiniBand.BaseIface)
	}
	switch {
	case it.LinkAggregation != nil:
		for i := range it.LinkAggregation.Port {
			add(RefPort, index("link-aggregation.port", i), &it.LinkAggregation.Port[i])
		}
	case it.Bridge != nil:
		for i := range it.Bridge.Port {
			if b := it.Bridge.Port[i].LinkAggregation; b != nil {
				// An OVS bond's members are its bridge's ports: the bond is an OVSDB port, no
				// interface.
				for j := range b.Port {
					add(RefPort, index(join(index("bridge.port", i), "link-aggregation.port"), j), &b.Port[j].Name)
				}
				continue
			}
			add(RefPort, index("bridge.port", i), &it.Bridge.Port[i].Name)
		}
	case it.VRF != nil:
		for i := range it.VRF.Port {
			add(RefPort, index("vrf.port", i), &it.VRF.Port[i])
		}
	}
	if it.CopyMACFrom != nil {
		add(RefMACSource, "copy-mac-from", it.CopyMACFrom)
	}
	return refs
}

// refsOf are it's references of the kinds given.
func (it Interface) refsOf(kinds ...RefKind) []Reference {
	return slices.DeleteFunc(it.References(), func(r Reference) bool { return !slices.Contains(kinds, r.Kind) })
}

// BaseIface is the interface this one is built on (a VLAN's, MAC-VLAN's, VXLAN's or
// InfiniBand partition's base-iface), and the field that names it; "" for none.
func (it Interface) BaseIface() (name, field string) {
	if refs := it.refsOf(RefBase); len(refs) > 0 {
		return refs[0].Name, refs[0].Field
	}
	return "", ""
}

// portNames are the interfaces this one controls.
func (it Interface) portNames() []string {
	var names []string
	for _, r := range it.refsOf(RefPort) {
		names = append(names, r.Name)
	}
	return names
}

// renamed is it with each reference passed through rename, on copies of its sections:
// the state it came from keeps its own.
func (it Interface) renamed(rename func(string) string) Interface {
	if it.CopyMACFrom != nil {
		v := *it.CopyMACFrom
		it.CopyMACFrom = &v
	}
	if b := it.LinkAggregation; b != nil {
		c := *b
		c.Port = slices.Clone(b.Port)
		it.LinkAggregation = &c
	}
	if b := it.Bridge; b != nil {
		c := *b
		c.Port = slices.Clone(b.Port)
		for j, bp := range c.Port {
			if bond := bp.LinkAggregation; bond != nil {
				cb := *bond
				cb.Port = slices.Clone(bond.Port)
				c.Port[j].LinkAggregation = &cb
			}
		}
		it.Bridge = &c
	}
	if v := it.VRF; v != nil {
		c := *v
		c.Port = slices.Clone(v.Port)
		it.VRF = &c
	}
	if v := it.VLAN; v != nil {
		c := *v
		it.VLAN = &c
	}
	if v := it.MACVLAN; v != nil {
		c := *v
		it.MACVLAN = &c
	}
	if v := it.VXLAN; v != nil {
		c := *v
		it.VXLAN = &c
	}
	if v := it.InfiniBand; v != nil {
		c := *v
		it.InfiniBand = &c
	}
	for _, r := range it.References() {
		*r.at = rename(*r.at)
	}
	return it
}

// portField is the field of the list of it's ports.
func portField(it Interface) string {
	switch {
	case it.LinkAggregation != nil:
		return "link-aggregation.port"
	case it.Bridge != nil:
		return "bridge.port"
	}
	return "vrf.port"
}
