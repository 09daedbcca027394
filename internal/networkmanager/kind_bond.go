package networkmanager

import "github.com/nmoverlay/nmoverlay/internal/state"

func init() {
	register(&kind{typ: state.Bond, connType: "bond", deviceType: 10, portType: "bond",
		write: func(s settings, it state.Interface, _ profileExtras) {
			if b := state.SectionOf[*state.BondConfig](it); b != nil {
				opts := map[string]string{"mode": string(b.Mode)}
				for k, v := range b.Options {
					opts[k] = state.KernelBondOption(k, v)
				}
				s.set("bond", "options", opts)
			}
			s.set("connection", "autoconnect-slaves", int32(1))
		},
		read: func(it *state.Interface, r readBack) {
			opts, _ := r.applied["bond"]["options"].Value().(map[string]string)
			rest := map[string]string{}
			for k, v := range opts {
				if k != "mode" {
					rest[k] = v
				}
			}
			it.Section = &state.BondConfig{Mode: state.BondMode(opts["mode"]), Options: rest, Port: r.ports}
		},
	})
}
