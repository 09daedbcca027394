package state

import (
	"fmt"
	"net/netip"
)

// VXLAN is a VXLAN tunnel endpoint.
const VXLAN InterfaceType = "vxlan"

func init() { registerSection(func() Section { return &VXLANConfig{} }) }

// VXLANConfig is a VXLAN's vxlan section.
type VXLANConfig struct {
	ID              int    `json:"id" nmstate:"required,range=0..16777215"`
	BaseIface       string `json:"base-iface,omitempty"`
	Remote          string `json:"remote,omitempty"`
	Local           string `json:"local,omitempty"`
	DestinationPort *int   `json:"destination-port,omitempty" nmstate:"range=1..65535"`
	// Learning: the VTEP learns remote MAC addresses from the packets it receives.
	Learning *bool `json:"learning,omitempty"`
}

func (*VXLANConfig) Key() string            { return "vxlan" }
func (*VXLANConfig) Types() []InterfaceType { return []InterfaceType{VXLAN} }

// references: the base is optional; a VXLAN may be built on none.
func (x *VXLANConfig) references(ref func(RefKind, string, *string)) {
	if x.BaseIface != "" {
		ref(RefBase, "base-iface", &x.BaseIface)
	}
}

func (x *VXLANConfig) validate(_ Interface, p string, fail failFunc) {
	if x.BaseIface != "" {
		if e := checkIfname(x.BaseIface); e != "" {
			fail(join(p, "base-iface"), "%q %s", x.BaseIface, e)
		}
	}
	for _, f := range [][2]string{{"remote", x.Remote}, {"local", x.Local}} {
		if _, err := netip.ParseAddr(f[1]); f[1] != "" && err != nil {
			fail(join(p, f[0]), "%q is not an IP address", f[1])
		}
	}
	if x.Remote == "" {
		fail(join(p, "remote"), "required (a multicast group or the remote VTEP)")
	}
}

func (x *VXLANConfig) verify(add addFunc, it Interface, got Section) {
	n := it.Key()
	g, _ := got.(*VXLANConfig)
	if g == nil || g.ID != x.ID || (x.BaseIface != "" && g.BaseIface != x.BaseIface) || (x.Remote != "" && !sameIP(g.Remote, x.Remote)) {
		add("%s.vxlan: %s, want %s", n, g, x)
		return
	}
	verifyField(add, n+".vxlan.learning", x.Learning, g.Learning)
}

func (x *VXLANConfig) String() string {
	if x == nil {
		return "none"
	}
	return fmt.Sprintf("id %d remote %s on %s", x.ID, orNone(x.Remote), orNone(x.BaseIface))
}
