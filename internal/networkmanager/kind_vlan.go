package networkmanager

import "github.com/nmoverlay/nmoverlay/internal/state"

func init() {
	register(&kind{typ: state.VLAN, connType: "vlan", deviceType: 11,
		write: func(s settings, it state.Interface, _ profileExtras) {
			if v := state.SectionOf[*state.VLANConfig](it); v != nil {
				s.set("vlan", "id", uint32(v.ID))
				s.set("vlan", "parent", v.BaseIface)
			}
		},
		read: func(it *state.Interface, r readBack) {
			id, _ := r.applied["vlan"]["id"].Value().(uint32)
			it.Section = &state.VLANConfig{ID: int(id), BaseIface: r.applied.str("vlan", "parent")}
		},
	})
}
