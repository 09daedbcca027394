package networkmanager

import "github.com/nmoverlay/nmoverlay/internal/state"

// An existing veth end given without its section is configured like any Ethernet device.
func init() {
	register(&kind{typ: state.Veth, connType: "veth", deviceType: 20, sectionless: state.Ethernet,
		write: func(s settings, it state.Interface, _ profileExtras) {
			if v := state.SectionOf[*state.VethConfig](it); v != nil {
				s.set("veth", "peer", v.Peer)
			}
		},
		read: func(it *state.Interface, r readBack) {
			if peer := r.applied.str("veth", "peer"); peer != "" {
				it.Section = &state.VethConfig{Peer: peer}
			}
		},
	})
}
