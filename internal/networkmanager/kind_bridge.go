package networkmanager

import (
	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

func init() {
	register(&kind{typ: state.LinuxBridge, connType: "bridge", deviceType: 13, portType: "bridge",
		write: func(s settings, it state.Interface, _ profileExtras) {
			setBridgeSection(s, state.SectionOf[*state.BridgeConfig](it))
			s.set("connection", "autoconnect-slaves", int32(1))
		},
		portVLAN: func(it state.Interface, port string) *state.BridgeVLAN {
			for _, bp := range state.SectionOf[*state.BridgeConfig](it).Port {
				if bp.Name == port {
					return bp.VLAN
				}
			}
			return nil
		},
		read: func(it *state.Interface, r readBack) {
			stp := true // NetworkManager's default
			if v, ok := r.applied["bridge"]["stp"].Value().(bool); ok {
				stp = v
			}
			b := &state.BridgeConfig{Options: &state.BridgeOptions{STP: &state.STP{Enabled: &stp}}, Port: make([]state.BridgePort, len(r.ports))}
			for i, p := range r.ports {
				b.Port[i] = state.BridgePort{Name: p, VLAN: portVLAN(r.all[p])}
			}
			it.Section = b
		},
	})
}

// setBridgeSection writes the bridge section: STP if the desired state sets it, and VLAN
// filtering on when any port filters. The section is written even when empty.
func setBridgeSection(s settings, b *state.BridgeConfig) {
	if b != nil {
		if b.Options != nil && b.Options.STP != nil && b.Options.STP.Enabled != nil {
			s.set("bridge", "stp", *b.Options.STP.Enabled)
		}
		filtering := false
		for _, port := range b.Port {
			filtering = filtering || port.VLAN != nil
		}
		s.set("bridge", "vlan-filtering", filtering)
	}
	if _, ok := s["bridge"]; !ok {
		s["bridge"] = map[string]dbus.Variant{}
	}
}

// bridgeVLANs turns a port's VLAN filtering into bridge-port.vlans.
func bridgeVLANs(v *state.BridgeVLAN) []map[string]dbus.Variant {
	out := []map[string]dbus.Variant{}
	if v == nil {
		return out
	}
	entry := func(start, end int, pvid, untagged bool) map[string]dbus.Variant {
		return map[string]dbus.Variant{
			"vid-start": dbus.MakeVariant(uint16(start)), "vid-end": dbus.MakeVariant(uint16(end)),
			"pvid": dbus.MakeVariant(pvid), "untagged": dbus.MakeVariant(untagged),
		}
	}
	if v.Mode == "access" && v.Tag != nil {
		return append(out, entry(*v.Tag, *v.Tag, true, true))
	}
	for _, t := range v.TrunkTags {
		switch {
		case t.ID != nil:
			out = append(out, entry(*t.ID, *t.ID, false, false))
		case t.IDRange != nil:
			out = append(out, entry(t.IDRange.Min, t.IDRange.Max, false, false))
		}
	}
	if v.EnableNative != nil && *v.EnableNative && v.Tag != nil {
		out = append(out, entry(*v.Tag, *v.Tag, true, true))
	}
	return out
}

// portVLAN reads bridge-port.vlans back as nmstate reports a port's VLAN filtering: one
// PVID untagged entry is an access port; otherwise a trunk whose PVID untagged entry is
// its native VLAN.
func portVLAN(a settings) *state.BridgeVLAN {
	entries := dictList(a["bridge-port"]["vlans"])
	if len(entries) == 0 {
		return nil
	}
	type entry struct {
		start, end     int
		pvid, untagged bool
	}
	var es []entry
	for _, e := range entries {
		start, _ := e["vid-start"].Value().(uint16)
		end, _ := e["vid-end"].Value().(uint16)
		pvid, _ := e["pvid"].Value().(bool)
		untagged, _ := e["untagged"].Value().(bool)
		es = append(es, entry{int(start), int(end), pvid, untagged})
	}
	if len(es) == 1 && es[0].pvid && es[0].untagged {
		tag := es[0].start
		return &state.BridgeVLAN{Mode: "access", Tag: &tag}
	}
	v := &state.BridgeVLAN{Mode: "trunk"}
	native := false
	for _, e := range es {
		switch {
		case e.pvid && e.untagged:
			tag := e.start
			v.Tag, native = &tag, true
		case e.start == e.end:
			id := e.start
			v.TrunkTags = append(v.TrunkTags, state.TrunkTag{ID: &id})
		default:
			v.TrunkTags = append(v.TrunkTags, state.TrunkTag{IDRange: &state.IDRange{Min: e.start, Max: e.end}})
		}
	}
	v.EnableNative = &native
	return v
}
