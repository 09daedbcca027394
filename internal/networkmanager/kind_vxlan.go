package networkmanager

import "github.com/nmoverlay/nmoverlay/internal/state"

func init() {
	register(&kind{typ: state.VXLAN, connType: "vxlan", deviceType: 19,
		write: func(s settings, it state.Interface, _ profileExtras) {
			x := state.SectionOf[*state.VXLANConfig](it)
			if x == nil {
				return
			}
			s.set("vxlan", "id", uint32(x.ID))
			if x.BaseIface != "" {
				s.set("vxlan", "parent", x.BaseIface)
			}
			s.set("vxlan", "remote", x.Remote)
			if x.Local != "" {
				s.set("vxlan", "local", x.Local)
			}
			if x.DestinationPort != nil {
				s.set("vxlan", "destination-port", uint32(*x.DestinationPort))
			}
			setFlag(s, "vxlan", "learning", x.Learning)
		},
		read: func(it *state.Interface, r readBack) {
			id, _ := r.applied["vxlan"]["id"].Value().(uint32)
			it.Section = &state.VXLANConfig{ID: int(id), BaseIface: r.applied.str("vxlan", "parent"), Remote: r.applied.str("vxlan", "remote"),
				Learning: flagOr(r.applied, "vxlan", "learning", true)}
		},
	})
}
