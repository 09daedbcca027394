package networkmanager

import (
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// A MAC-VLAN and a MAC-VTAP are one NetworkManager type, and one device type: the
// profile's tap tells them apart.
func init() {
	register(&kind{typ: state.MACVLAN, connType: "macvlan", deviceType: 18,
		write: func(s settings, it state.Interface, _ profileExtras) {
			writeMACVLAN(s, state.SectionOf[*state.MACVLANConfig](it), false)
		},
		read: func(it *state.Interface, r readBack) { it.Section = readMACVLAN(r.applied) },
	})
	register(&kind{typ: state.MACVTAP, connType: "macvlan", deviceType: 18,
		claims: func(a settings) bool { tap, _ := a["macvlan"]["tap"].Value().(bool); return tap },
		write: func(s settings, it state.Interface, _ profileExtras) {
			writeMACVLAN(s, (*state.MACVLANConfig)(state.SectionOf[*state.MACVTAPConfig](it)), true)
		},
		read: func(it *state.Interface, r readBack) { it.Section = (*state.MACVTAPConfig)(readMACVLAN(r.applied)) },
	})
}

func writeMACVLAN(s settings, m *state.MACVLANConfig, tap bool) {
	if m == nil {
		return
	}
	s.set("macvlan", "parent", m.BaseIface)
	s.set("macvlan", "mode", macvlanMode[m.Mode])
	s.set("macvlan", "tap", tap)
	if m.Promiscuous != nil {
		s.set("macvlan", "promiscuous", *m.Promiscuous)
	}
}

func readMACVLAN(a settings) *state.MACVLANConfig {
	mode, _ := a["macvlan"]["mode"].Value().(uint32)
	name := ""
	for k, v := range macvlanMode {
		if v == mode {
			name = k
		}
	}
	return &state.MACVLANConfig{BaseIface: a.str("macvlan", "parent"), Mode: name}
}

// macvlanMode is NetworkManager's number of each of nmstate's modes (NMSettingMacvlanMode).
var macvlanMode = map[string]uint32{"vepa": 1, "bridge": 2, "private": 3, "passthru": 4, "source": 5}
