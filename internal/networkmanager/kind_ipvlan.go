package networkmanager

import "github.com/nmoverlay/nmoverlay/internal/state"

func init() {
	register(&kind{typ: state.IPVLAN, connType: "ipvlan", deviceType: 34,
		write: func(s settings, it state.Interface, _ profileExtras) {
			if v := state.SectionOf[*state.IPVLANConfig](it); v != nil {
				s.set("ipvlan", "parent", v.BaseIface)
				mode := v.Mode
				if mode == "" {
					mode = "l3" // nmstate's and the kernel's default; NetworkManager has none
				}
				s.set("ipvlan", "mode", ipvlanMode[mode])
				setFlag(s, "ipvlan", "private", v.Private)
				setFlag(s, "ipvlan", "vepa", v.VEPA)
			}
		},
		read: func(it *state.Interface, r readBack) {
			mode, _ := r.applied["ipvlan"]["mode"].Value().(uint32)
			v := &state.IPVLANConfig{BaseIface: r.applied.str("ipvlan", "parent")}
			for k, n := range ipvlanMode {
				if n == mode {
					v.Mode = k
				}
			}
			if p, ok := r.applied["ipvlan"]["private"].Value().(bool); ok {
				v.Private = &p
			}
			if p, ok := r.applied["ipvlan"]["vepa"].Value().(bool); ok {
				v.VEPA = &p
			}
			it.Section = v
		},
	})
}

// ipvlanMode is NetworkManager's number of each of nmstate's modes (NMSettingIpvlanMode).
var ipvlanMode = map[string]uint32{"l2": 1, "l3": 2, "l3s": 3}
