package networkmanager

import "github.com/nmoverlay/nmoverlay/internal/state"

// An InfiniBand port's link layer is its own section.
func init() {
	register(&kind{typ: state.InfiniBand, connType: "infiniband", deviceType: 9, link: "infiniband",
		write: func(s settings, it state.Interface, _ profileExtras) {
			if ib := state.SectionOf[*state.InfiniBandConfig](it); ib != nil {
				if ib.Mode != "" {
					s.set("infiniband", "transport-mode", ib.Mode)
				}
				if ib.PKey != nil && *ib.PKey != state.DefaultPKey {
					s.set("infiniband", "p-key", int32(*ib.PKey))
				}
				if ib.BaseIface != "" {
					s.set("infiniband", "parent", ib.BaseIface)
				}
			}
			emptySection(s, "infiniband")
		},
		read: func(it *state.Interface, r readBack) {
			ib := &state.InfiniBandConfig{Mode: r.applied.str("infiniband", "transport-mode"), BaseIface: r.applied.str("infiniband", "parent")}
			if p, ok := r.applied["infiniband"]["p-key"].Value().(int32); ok && p >= 0 {
				pkey := int(p)
				ib.PKey = &pkey
			}
			it.Section = ib
		},
	})
}
