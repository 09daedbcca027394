package networkmanager

import "github.com/nmoverlay/nmoverlay/internal/state"

// A VRF takes no MTU; its ports keep IP configurations of their own (it is a layer-3
// domain).
func init() {
	register(&kind{typ: state.VRF, connType: "vrf", deviceType: 31, noMTU: true, portType: "vrf", portsKeepIP: true,
		write: func(s settings, it state.Interface, _ profileExtras) {
			if v := state.SectionOf[*state.VRFConfig](it); v != nil {
				s.set("vrf", "table", uint32(v.RouteTableID))
			}
			s.set("connection", "autoconnect-slaves", int32(1))
		},
		read: func(it *state.Interface, r readBack) {
			table, _ := r.applied["vrf"]["table"].Value().(uint32)
			it.Section = &state.VRFConfig{Port: r.ports, RouteTableID: int(table)}
		},
	})
}
