package state

import "fmt"

// IPVLAN is an IPVLAN: an interface sharing its base interface's MAC address, its
// traffic told apart by IP address.
const IPVLAN InterfaceType = "ipvlan"

func init() { registerSection(func() Section { return &IPVLANConfig{} }) }

// IPVLANConfig is an IPVLAN's ipvlan section.
type IPVLANConfig struct {
	BaseIface string `json:"base-iface" nmstate:"required"`
	Mode      string `json:"mode,omitempty" nmstate:"one-of=l2|l3|l3s"`
	Private   *bool  `json:"private,omitempty"`
	VEPA      *bool  `json:"vepa,omitempty"`
}

func (*IPVLANConfig) Key() string            { return "ipvlan" }
func (*IPVLANConfig) Types() []InterfaceType { return []InterfaceType{IPVLAN} }

// needs: NetworkManager has ipvlan profiles since 1.52.
func (*IPVLANConfig) needs() Capability { return CapabilityIPVLAN }

func (v *IPVLANConfig) references(ref func(RefKind, string, *string)) {
	ref(RefBase, "base-iface", &v.BaseIface)
}

func (v *IPVLANConfig) validate(it Interface, p string, fail failFunc) {
	checkOther(fail, join(p, "base-iface"), v.BaseIface, it.Name, "an IPVLAN cannot sit on itself")
	if isTrue(v.Private) && isTrue(v.VEPA) {
		fail(join(p, "vepa"), "true with private: an IPVLAN is private or VEPA, not both")
	}
}

// mode is nmstate's default, l3, when not given.
func (v *IPVLANConfig) mode() string {
	if v.Mode == "" {
		return "l3"
	}
	return v.Mode
}

func (v *IPVLANConfig) verify(add addFunc, it Interface, got Section) {
	g, _ := got.(*IPVLANConfig)
	if g == nil || g.BaseIface != v.BaseIface || g.mode() != v.mode() {
		add("%s.ipvlan: %s, want %s", it.Key(), g, v)
		return
	}
	verifyField(add, it.Key()+".ipvlan.private", v.Private, g.Private)
	verifyField(add, it.Key()+".ipvlan.vepa", v.VEPA, g.VEPA)
}

func (v *IPVLANConfig) String() string {
	if v == nil {
		return "none"
	}
	return fmt.Sprintf("%s on %s", v.mode(), orNone(v.BaseIface))
}
