package state

import "fmt"

// HSR is a High-availability Seamless Redundancy (or, by its protocol, a Parallel
// Redundancy Protocol) interface: every frame sent over two ports at once.
const HSR InterfaceType = "hsr"

func init() { registerSection(func() Section { return &HSRConfig{} }) }

// HSRConfig is an HSR interface's hsr section.
type HSRConfig struct {
	Port1 string `json:"port1" nmstate:"required"`
	Port2 string `json:"port2" nmstate:"required"`
	// MulticastSpec is the last byte of the supervision frames' address.
	MulticastSpec int `json:"multicast-spec" nmstate:"range=0..255"`
	// Protocol is hsr (the default) or prp.
	Protocol string `json:"protocol,omitempty" nmstate:"one-of=hsr|prp"`
	// SupervisionAddress is the supervision frames' address, which the kernel chooses.
	SupervisionAddress string `json:"supervision-address,omitempty" nmstate:"ignored"`
}

func (*HSRConfig) Key() string            { return "hsr" }
func (*HSRConfig) Types() []InterfaceType { return []InterfaceType{HSR} }

// needs: NetworkManager has hsr profiles since 1.46.
func (*HSRConfig) needs() Capability { return CapabilityHSR }

func (h *HSRConfig) references(ref func(RefKind, string, *string)) {
	ref(RefBase, "port1", &h.Port1)
	ref(RefBase, "port2", &h.Port2)
}

func (h *HSRConfig) validate(it Interface, p string, fail failFunc) {
	checkOther(fail, join(p, "port1"), h.Port1, it.Name, "an HSR interface cannot be its own port")
	checkOther(fail, join(p, "port2"), h.Port2, it.Name, "an HSR interface cannot be its own port")
	if h.Port1 != "" && h.Port1 == h.Port2 {
		fail(join(p, "port2"), "%q is port1 too: an HSR interface has two ports", h.Port2)
	}
}

func (h *HSRConfig) protocol() string {
	if h.Protocol == "" {
		return "hsr"
	}
	return h.Protocol
}

func (h *HSRConfig) verify(add addFunc, it Interface, got Section) {
	g, _ := got.(*HSRConfig)
	if g == nil || g.Port1 != h.Port1 || g.Port2 != h.Port2 || g.MulticastSpec != h.MulticastSpec || g.protocol() != h.protocol() {
		add("%s.hsr: %s, want %s", it.Key(), g, h)
	}
}

func (h *HSRConfig) String() string {
	if h == nil {
		return "none"
	}
	return fmt.Sprintf("%s over %s and %s, multicast-spec %d", h.protocol(), orNone(h.Port1), orNone(h.Port2), h.MulticastSpec)
}
