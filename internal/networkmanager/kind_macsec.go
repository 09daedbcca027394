package networkmanager

import "github.com/nmoverlay/nmoverlay/internal/state"

// A MACsec interface, as nmstate writes it: pre-shared-key mode (MACsec Key Agreement
// through wpa_supplicant), the key stored in the profile (mka-cak-flags 0: NetworkManager
// keeps it there), nmstate's port 0 leaving NetworkManager's.
func init() {
	register(&kind{typ: state.MACsec, connType: "macsec", deviceType: 21,
		write: func(s settings, it state.Interface, _ profileExtras) {
			m := state.SectionOf[*state.MACsecConfig](it)
			if m == nil {
				return
			}
			s.set("macsec", "parent", m.BaseIface)
			s.set("macsec", "mode", int32(macsecModePSK))
			s.set("macsec", "encrypt", m.Encrypt)
			s.set("macsec", "mka-cak", string(m.MKACAK))
			s.set("macsec", "mka-cak-flags", uint32(0))
			s.set("macsec", "mka-ckn", m.MKACKN)
			if m.Port > 0 {
				s.set("macsec", "port", int32(m.Port))
			} else {
				delete(s["macsec"], "port")
			}
			s.set("macsec", "validation", macsecValidation[macsecOr(m.Validation, "disabled")])
			s.set("macsec", "send-sci", m.SendSCI)
			if m.Offload != "" {
				s.set("macsec", "offload", macsecOffload[m.Offload])
			}
		},
		read: func(it *state.Interface, r readBack) {
			// NetworkManager leaves out what has its default: encrypt and send-sci true,
			// port 1, validation strict.
			m := &state.MACsecConfig{BaseIface: r.applied.str("macsec", "parent"), MKACKN: r.applied.str("macsec", "mka-ckn"),
				Encrypt: *flagOr(r.applied, "macsec", "encrypt", true), SendSCI: *flagOr(r.applied, "macsec", "send-sci", true), Port: 1}
			if p, ok := r.applied["macsec"]["port"].Value().(int32); ok {
				m.Port = int(p)
			}
			v := macsecValidation["strict"]
			if n, ok := r.applied["macsec"]["validation"].Value().(int32); ok {
				v = n
			}
			for name, n := range macsecValidation {
				if n == v {
					m.Validation = name
				}
			}
			if o, ok := r.applied["macsec"]["offload"].Value().(int32); ok {
				for name, n := range macsecOffload {
					if n == o {
						m.Offload = name
					}
				}
			}
			it.Section = m
		},
	})
}

// NetworkManager's numbers (NMSettingMacsecMode, NMSettingMacsecValidation,
// NMSettingMacsecOffload).
const macsecModePSK = 0

var (
	macsecValidation = map[string]int32{"disabled": 0, "check": 1, "strict": 2}
	macsecOffload    = map[string]int32{"off": 0, "phy": 1, "mac": 2}
)

func macsecOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
