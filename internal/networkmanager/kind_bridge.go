package networkmanager

import (
	"strconv"

	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

func init() {
	register(&kind{typ: state.LinuxBridge, connType: "bridge", deviceType: 13, portType: "bridge",
		write: func(s settings, it state.Interface, _ profileExtras) {
			setBridgeSection(s, state.SectionOf[*state.BridgeConfig](it))
			s.set("connection", "autoconnect-slaves", int32(1))
		},
		portEntry: func(it state.Interface, port string) any {
			b := state.SectionOf[*state.BridgeConfig](it)
			for i := range b.Port {
				if b.Port[i].Name == port {
					return &b.Port[i]
				}
			}
			return nil
		},
		writePort: func(s settings, entry any) {
			bp, _ := entry.(*state.BridgePort)
			setBridgePort(s, bp)
		},
		portSection: "bridge-port",
		// The options and the ports' spanning tree are read from the kernel: NetworkManager
		// writes the ports' through sysfs, and a write that fails there (a read-only /sys)
		// fails nothing it reports.
		sysfs: []string{"bridge/stp_state", "bridge/forward_delay", "bridge/hello_time", "bridge/max_age", "bridge/priority",
			"bridge/ageing_time", "bridge/group_fwd_mask", "bridge/multicast_snooping"},
		portSysfs: []string{"brport/priority", "brport/path_cost", "brport/hairpin_mode"},
		read: func(it *state.Interface, r readBack) {
			k := r.sysfs[it.Name]
			o := &state.BridgeOptions{
				// The kernel's times are in hundredths of a second.
				STP: &state.STP{Enabled: kernelFlag(k, "bridge/stp_state"), ForwardDelay: kernelNumber(k, "bridge/forward_delay", 100),
					HelloTime: kernelNumber(k, "bridge/hello_time", 100), MaxAge: kernelNumber(k, "bridge/max_age", 100),
					Priority: kernelNumber(k, "bridge/priority", 1)},
				GroupForwardMask: kernelNumber(k, "bridge/group_fwd_mask", 1), MACAgeingTime: kernelNumber(k, "bridge/ageing_time", 100),
				MulticastSnooping: kernelFlag(k, "bridge/multicast_snooping"),
			}
			b := &state.BridgeConfig{Options: o, Port: make([]state.BridgePort, len(r.ports))}
			for i, p := range r.ports {
				pk := r.sysfs[p]
				b.Port[i] = state.BridgePort{Name: p, VLAN: portVLAN(r.all[p]), STPHairpinMode: kernelFlag(pk, "brport/hairpin_mode"),
					STPPathCost: kernelNumber(pk, "brport/path_cost", 1), STPPriority: kernelNumber(pk, "brport/priority", 1)}
			}
			it.Section = b
		},
	})
}

// setBridgeSection writes the bridge section: STP if the desired state sets it, and VLAN
// filtering on when any port filters. The section is written even when empty.
func setBridgeSection(s settings, b *state.BridgeConfig) {
	if b != nil {
		if o := b.Options; o != nil {
			setFlag(s, "bridge", "multicast-snooping", o.MulticastSnooping)
			setNumber(s, "bridge", "group-forward-mask", o.GroupForwardMask)
			setNumber(s, "bridge", "ageing-time", o.MACAgeingTime)
			if stp := o.STP; stp != nil {
				setFlag(s, "bridge", "stp", stp.Enabled)
				setNumber(s, "bridge", "forward-delay", stp.ForwardDelay)
				setNumber(s, "bridge", "hello-time", stp.HelloTime)
				setNumber(s, "bridge", "max-age", stp.MaxAge)
				setNumber(s, "bridge", "priority", stp.Priority)
			}
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

// setBridgePort writes what a Linux bridge port's profile says of it: its VLANs (none
// when the bridge names none) and the spanning tree settings the bridge gives it.
func setBridgePort(s settings, bp *state.BridgePort) {
	var vlan *state.BridgeVLAN
	if bp != nil {
		vlan = bp.VLAN
		setFlag(s, "bridge-port", "hairpin-mode", bp.STPHairpinMode)
		setNumber(s, "bridge-port", "path-cost", bp.STPPathCost)
		setNumber(s, "bridge-port", "priority", bp.STPPriority)
	}
	s.set("bridge-port", "vlans", bridgeVLANs(vlan))
}

// kernelFlag and kernelNumber read a sysfs attribute of the snapshot as a switch (not
// 0) or a number (decimal or 0x hex) divided by unit; nil when it was not read.
func kernelFlag(attrs map[string]string, attr string) *bool {
	v, ok := attrs[attr]
	if !ok {
		return nil
	}
	on := v != "0"
	return &on
}

func kernelNumber(attrs map[string]string, attr string, unit int) *int {
	n, err := strconv.ParseUint(attrs[attr], 0, 32)
	if err != nil {
		return nil
	}
	v := int(n) / unit
	return &v
}
