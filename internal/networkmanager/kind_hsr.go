package networkmanager

import "github.com/nmoverlay/nmoverlay/internal/state"

func init() {
	register(&kind{typ: state.HSR, connType: "hsr", deviceType: 33,
		write: func(s settings, it state.Interface, _ profileExtras) {
			if h := state.SectionOf[*state.HSRConfig](it); h != nil {
				s.set("hsr", "port1", h.Port1)
				s.set("hsr", "port2", h.Port2)
				s.set("hsr", "multicast-spec", uint32(h.MulticastSpec))
				s.set("hsr", "prp", h.Protocol == "prp")
			}
		},
		read: func(it *state.Interface, r readBack) {
			spec, _ := r.applied["hsr"]["multicast-spec"].Value().(uint32)
			prp, _ := r.applied["hsr"]["prp"].Value().(bool)
			h := &state.HSRConfig{Port1: r.applied.str("hsr", "port1"), Port2: r.applied.str("hsr", "port2"), MulticastSpec: int(spec), Protocol: "hsr"}
			if prp {
				h.Protocol = "prp"
			}
			it.Section = h
		},
	})
}
