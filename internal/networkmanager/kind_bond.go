package networkmanager

import (
	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

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
		portEntry: func(it state.Interface, port string) any {
			if b := state.SectionOf[*state.BondConfig](it); b != nil {
				if pc := b.PortConfig(port); pc != nil {
					return pc
				}
			}
			return nil
		},
		// What the bond gives a port; NetworkManager's defaults for what it does not.
		writePort: func(s settings, entry any) {
			delete(s, "bond-port")
			pc, _ := entry.(*state.BondPort)
			if pc == nil {
				return
			}
			s["bond-port"] = map[string]dbus.Variant{}
			if pc.QueueID != nil {
				s.set("bond-port", "queue-id", uint32(*pc.QueueID))
			}
			if pc.Priority != nil { // NetworkManager 1.44 and later: Backend.Check refuses it on older ones
				s.set("bond-port", "prio", int32(*pc.Priority))
			}
		},
		portSection: "bond-port",
		// A port's queue is read from the kernel: NetworkManager writes it through the bond's
		// sysfs, and a write that fails there (a read-only /sys) fails nothing it reports.
		portSysfs: []string{"bonding_slave/queue_id"},
		read: func(it *state.Interface, r readBack) {
			opts, _ := r.applied["bond"]["options"].Value().(map[string]string)
			rest := map[string]string{}
			for k, v := range opts {
				if k != "mode" {
					rest[k] = v
				}
			}
			b := &state.BondConfig{Mode: state.BondMode(opts["mode"]), Options: rest, Port: r.ports}
			for _, p := range r.ports {
				pc := state.BondPort{Name: p, QueueID: kernelNumber(r.sysfs[p], "bonding_slave/queue_id", 1)}
				if prio, ok := r.all[p]["bond-port"]["prio"].Value().(int32); ok {
					n := int(prio)
					pc.Priority = &n
				}
				if pc.QueueID != nil || pc.Priority != nil {
					b.PortsConfig = append(b.PortsConfig, pc)
				}
			}
			it.Section = b
		},
	})
}
