package state

import "slices"

// RefKind is how an interface names another.
type RefKind int

const (
	// RefBase: the interface it is built on (a VLAN's base-iface).
	RefBase RefKind = iota
	// RefPort: one of its ports, as a controller (a bond, a bridge; an OVS bond's are its
	// bridge's).
	RefPort
	// RefMACSource: the interface whose MAC address it takes (copy-mac-from).
	RefMACSource
	// RefController: its controller, named on the port (controller).
	RefController
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
	if it.Section != nil {
		key := it.Section.Key()
		it.Section.references(func(kind RefKind, field string, at *string) { add(kind, join(key, field), at) })
	}
	if it.CopyMACFrom != nil {
		add(RefMACSource, "copy-mac-from", it.CopyMACFrom)
	}
	if it.Controller != nil && *it.Controller != "" {
		add(RefController, "controller", it.Controller)
	}
	return refs
}

// refsOf are it's references of the kinds given.
func (it Interface) refsOf(kinds ...RefKind) []Reference {
	return slices.DeleteFunc(it.References(), func(r Reference) bool { return !slices.Contains(kinds, r.Kind) })
}

// BaseIface is the interface this one is built on (a VLAN's base-iface), and the field
// that names it; "" for none.
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
	if it.Controller != nil {
		v := *it.Controller
		it.Controller = &v
	}
	it.Section = copySection(it.Section)
	for _, r := range it.References() {
		*r.at = rename(*r.at)
	}
	return it
}

// portField is the field of the list of it's ports.
func portField(it Interface) string {
	if it.Section == nil {
		return "port"
	}
	return join(it.Section.Key(), "port")
}

// portRefs walks a controller's list of port names.
func portRefs(ref func(RefKind, string, *string), ports []string) {
	for i := range ports {
		ref(RefPort, index("port", i), &ports[i])
	}
}

// portAdder is a section with a list of ports that a port naming its controller
// (controller:) joins.
type portAdder interface{ addPort(name string) }

// adoptPorts adds each port that names its controller to that controller's port list,
// when the state has the controller and its list lacks the port: nmstate applies
// policies one after another, each port joining the ports its controller has, and the
// merged state must say the same of the controller. The controller's section is copied
// first: the sources' stay as they were.
func adoptPorts(s *State) {
	for _, it := range s.Interfaces {
		if it.State == Absent || it.Controller == nil || *it.Controller == "" {
			continue
		}
		for j := range s.Interfaces {
			ctrl := &s.Interfaces[j]
			if ctrl.Name != *it.Controller || ctrl.State == Absent || slices.Contains(ctrl.portNames(), it.Name) {
				continue
			}
			if _, ok := ctrl.Section.(portAdder); ok {
				ctrl.Section = copySection(ctrl.Section)
				ctrl.Section.(portAdder).addPort(it.Name)
			}
		}
	}
}
