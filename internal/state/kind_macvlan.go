package state

import (
	"fmt"
	"slices"
)

// MACVLAN is a MAC-VLAN: an interface with its own MAC address on a base interface;
// MACVTAP the same with a tap device (/dev/tapN) for a VM's NIC.
const (
	MACVLAN InterfaceType = "mac-vlan"
	MACVTAP InterfaceType = "mac-vtap"
)

func init() {
	registerSection(func() Section { return &MACVLANConfig{} })
	registerSection(func() Section { return &MACVTAPConfig{} })
}

// MACVLANConfig is a MAC-VLAN's mac-vlan section.
type MACVLANConfig struct {
	BaseIface   string `json:"base-iface" nmstate:"required"`
	Mode        string `json:"mode" nmstate:"required"`
	Promiscuous *bool  `json:"promiscuous,omitempty"`
}

// MACVLANModes are the modes nmstate names.
var MACVLANModes = []string{"vepa", "bridge", "private", "passthru", "source"}

func (*MACVLANConfig) Key() string            { return "mac-vlan" }
func (*MACVLANConfig) Types() []InterfaceType { return []InterfaceType{MACVLAN} }

func (m *MACVLANConfig) references(ref func(RefKind, string, *string)) {
	ref(RefBase, "base-iface", &m.BaseIface)
}

func (m *MACVLANConfig) validate(_ Interface, p string, fail failFunc) {
	if e := checkIfname(m.BaseIface); e != "" {
		fail(join(p, "base-iface"), "%q %s", m.BaseIface, e)
	}
	if m.Mode != "" && !slices.Contains(MACVLANModes, m.Mode) {
		fail(join(p, "mode"), "%q is not one of %v", m.Mode, MACVLANModes)
	}
}

func (m *MACVLANConfig) verify(add addFunc, it Interface, got Section) {
	g, _ := got.(*MACVLANConfig)
	m.compare(add, it.Key()+"."+m.Key(), g)
}

// compare reports g (nil: none) against m under path.
func (m *MACVLANConfig) compare(add addFunc, path string, g *MACVLANConfig) {
	if g == nil || g.BaseIface != m.BaseIface || g.Mode != m.Mode {
		add("%s: %s, want %s", path, g, m)
	}
}

func (m *MACVLANConfig) String() string {
	if m == nil {
		return "none"
	}
	return fmt.Sprintf("%s on %s", orNone(m.Mode), orNone(m.BaseIface))
}

// MACVTAPConfig is a MAC-VTAP's mac-vtap section: a MAC-VLAN's fields.
type MACVTAPConfig MACVLANConfig

func (*MACVTAPConfig) Key() string            { return "mac-vtap" }
func (*MACVTAPConfig) Types() []InterfaceType { return []InterfaceType{MACVTAP} }

func (m *MACVTAPConfig) references(ref func(RefKind, string, *string)) {
	(*MACVLANConfig)(m).references(ref)
}

func (m *MACVTAPConfig) validate(it Interface, p string, fail failFunc) {
	(*MACVLANConfig)(m).validate(it, p, fail)
}

func (m *MACVTAPConfig) verify(add addFunc, it Interface, got Section) {
	g, _ := got.(*MACVTAPConfig)
	(*MACVLANConfig)(m).compare(add, it.Key()+"."+m.Key(), (*MACVLANConfig)(g))
}
