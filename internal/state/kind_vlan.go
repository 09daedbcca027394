package state

import "fmt"

// VLAN is an 802.1Q VLAN on a base interface.
const VLAN InterfaceType = "vlan"

func init() { registerSection(func() Section { return &VLANConfig{} }) }

// VLANConfig is a VLAN's vlan section.
type VLANConfig struct {
	_ struct{} `key:"reorder-headers" refused:"not applied yet"`
	_ struct{} `key:"loose-binding" refused:"not applied yet"`
	_ struct{} `key:"registration-protocol" refused:"not applied yet"`

	ID        int    `json:"id" nmstate:"required,range=1..4094"`
	BaseIface string `json:"base-iface" nmstate:"required"`
	// Protocol is 802.1q, the kernel's default and the only one applied.
	Protocol string `json:"protocol,omitempty" nmstate:"one-of=802.1q|802.1ad"`
}

// checkDecoded refuses the protocol not applied.
func (v *VLANConfig) checkDecoded(d *decoder, path string, _ map[string]any) {
	if v.Protocol == "802.1ad" {
		d.fail(join(path, "protocol"), "not supported by nmoverlay: 802.1ad is not applied yet")
	}
}

func (*VLANConfig) Key() string            { return "vlan" }
func (*VLANConfig) Types() []InterfaceType { return []InterfaceType{VLAN} }

func (v *VLANConfig) references(ref func(RefKind, string, *string)) {
	ref(RefBase, "base-iface", &v.BaseIface)
}

func (v *VLANConfig) validate(it Interface, p string, fail failFunc) {
	checkOther(fail, join(p, "base-iface"), v.BaseIface, it.Name, "a VLAN cannot sit on itself")
}

func (v *VLANConfig) verify(add addFunc, it Interface, got Section) {
	n := it.Key()
	if g, _ := got.(*VLANConfig); g == nil || g.ID != v.ID || g.BaseIface != v.BaseIface {
		add("%s.vlan: %s, want id %d on %s", n, g, v.ID, v.BaseIface)
	}
}

func (v *VLANConfig) String() string {
	if v == nil {
		return "none"
	}
	return fmt.Sprintf("id %d on %s", v.ID, orNone(v.BaseIface))
}
