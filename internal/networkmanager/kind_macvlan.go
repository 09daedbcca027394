package networkmanager

import (
	"github.com/nmoverlay/nmoverlay/internal/state"
)

func init() {
	register(&kind{typ: state.MACVLAN, connType: "macvlan", deviceType: 18,
		write: func(s settings, it state.Interface, _ profileExtras) {
			m := state.SectionOf[*state.MACVLANConfig](it)
			if m == nil {
				return
			}
			s.set("macvlan", "parent", m.BaseIface)
			s.set("macvlan", "mode", macvlanMode[m.Mode])
			s.set("macvlan", "tap", false)
			if m.Promiscuous != nil {
				s.set("macvlan", "promiscuous", *m.Promiscuous)
			}
		},
		read: func(it *state.Interface, r readBack) {
			mode, _ := r.applied["macvlan"]["mode"].Value().(uint32)
			name := ""
			for k, v := range macvlanMode {
				if v == mode {
					name = k
				}
			}
			it.Section = &state.MACVLANConfig{BaseIface: r.applied.str("macvlan", "parent"), Mode: name}
		},
	})
}

// macvlanMode is NetworkManager's number of each of nmstate's modes (NMSettingMacvlanMode).
var macvlanMode = map[string]uint32{"vepa": 1, "bridge": 2, "private": 3, "passthru": 4, "source": 5}
