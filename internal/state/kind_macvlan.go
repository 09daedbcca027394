package state

import (
	"fmt"
	"slices"
)

// MACVLAN is a MAC-VLAN: an interface with its own MAC address on a base interface.
const MACVLAN InterfaceType = "mac-vlan"

func init() { registerSection(func() Section { return &MACVLANConfig{} }) }

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
	n := it.Key()
	if g, _ := got.(*MACVLANConfig); g == nil || g.BaseIface != m.BaseIface || g.Mode != m.Mode {
		add("%s.mac-vlan: %s, want %s", n, g, m)
	}
}

func (m *MACVLANConfig) String() string {
	if m == nil {
		return "none"
	}
	return fmt.Sprintf("%s on %s", orNone(m.Mode), orNone(m.BaseIface))
}
