package networkmanager

import (
	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// Open vSwitch's three kinds: a bridge is an OVSDB object, not a kernel interface; each of
// its ports is an ovs-port profile of its own, which steps makes; an ovs-interface is
// internal (a kernel interface) or a patch port.
func init() {
	register(&kind{typ: state.OVSBridge, connType: "ovs-bridge", deviceType: 26,
		// No autoconnect-slaves: the engine starts each OVS port and interface itself, and
		// one NetworkManager started when the bridge came up would replace it midway.
		write: func(s settings, it state.Interface, _ profileExtras) {
			setOVSBridgeSection(s, state.SectionOf[*state.BridgeConfig](it))
		},
		read: func(it *state.Interface, r readBack) {
			b := &state.BridgeConfig{Options: ovsBridgeOptions(r.applied), Port: make([]state.BridgePort, len(r.ports))}
			for i, p := range r.ports {
				key := state.Interface{Name: p, Type: state.OVSPort}.Key()
				b.Port[i] = state.BridgePort{Name: p, VLAN: ovsPortVLAN(r.all[key]), LinkAggregation: ovsPortBond(r.all[key], r.portsOf[key])}
			}
			it.Section = b
		},
	})
	register(&kind{typ: state.OVSPort, connType: "ovs-port", deviceType: 25,
		write: func(s settings, _ state.Interface, p profileExtras) {
			setOVSPortSection(s, p.ovsVLAN)
			setOVSBond(s, p.ovsBond)
		},
	})
	register(&kind{typ: state.OVSInterface, connType: "ovs-interface", deviceType: 24,
		write: func(s settings, it state.Interface, _ profileExtras) {
			kind := "internal"
			if pt := state.SectionOf[*state.OVSPatch](it); pt != nil {
				kind = "patch"
				s.set("ovs-patch", "peer", pt.Peer)
			}
			s.set("ovs-interface", "type", kind)
		},
		read: func(it *state.Interface, r readBack) {
			if peer := r.applied.str("ovs-patch", "peer"); peer != "" {
				it.Section = &state.OVSPatch{Peer: peer}
			}
		},
	})
}

// setOVSBridgeSection writes the ovs-bridge section: the options the desired state sets,
// on top of what the base has. The section is written even when empty.
func setOVSBridgeSection(s settings, b *state.BridgeConfig) {
	if _, ok := s["ovs-bridge"]; !ok {
		s["ovs-bridge"] = map[string]dbus.Variant{}
	}
	if b == nil || b.Options == nil {
		return
	}
	o := b.Options
	if o.STP != nil && o.STP.Enabled != nil {
		s.set("ovs-bridge", "stp-enable", *o.STP.Enabled)
	}
	if o.RSTP != nil {
		s.set("ovs-bridge", "rstp-enable", *o.RSTP)
	}
	if o.MCastSnoopingEnable != nil {
		s.set("ovs-bridge", "mcast-snooping-enable", *o.MCastSnoopingEnable)
	}
	if o.FailMode != nil {
		s.set("ovs-bridge", "fail-mode", *o.FailMode)
	}
	if o.Datapath != nil {
		s.set("ovs-bridge", "datapath-type", *o.Datapath)
	}
}

// setOVSPortSection writes an OVS port's VLAN mode, tag and trunks: none, an access port,
// or a trunk, native-untagged with enable-native.
func setOVSPortSection(s settings, v *state.BridgeVLAN) {
	s["ovs-port"] = map[string]dbus.Variant{}
	if v == nil {
		return
	}
	switch {
	case v.Mode == "access":
		s.set("ovs-port", "vlan-mode", "access")
	case v.EnableNative != nil && *v.EnableNative:
		s.set("ovs-port", "vlan-mode", "native-untagged")
	default:
		s.set("ovs-port", "vlan-mode", "trunk")
	}
	if v.Tag != nil {
		s.set("ovs-port", "tag", uint32(*v.Tag))
	}
	trunks := []map[string]dbus.Variant{}
	for _, t := range v.TrunkTags {
		start, end := 0, 0
		switch {
		case t.ID != nil:
			start, end = *t.ID, *t.ID
		case t.IDRange != nil:
			start, end = t.IDRange.Min, t.IDRange.Max
		}
		// NetworkManager's ranges are 64-bit ("t"): it skips a range of other types.
		trunks = append(trunks, map[string]dbus.Variant{"start": dbus.MakeVariant(uint64(start)), "end": dbus.MakeVariant(uint64(end))})
	}
	if len(trunks) > 0 {
		s.set("ovs-port", "trunks", trunks)
	}
}

// ovsBondSettings are the ovs-port settings of each nmstate OVS bond mode: bond-mode and
// lacp. balance-tcp hashes on layer 4 only over LACP (Open vSwitch falls back to
// active-backup without it), and nmstate's lacp mode is LACP with Open vSwitch's default
// hashing (no bond-mode).
var ovsBondSettings = map[string][2]string{
	"active-backup": {"active-backup", "off"},
	"balance-slb":   {"balance-slb", "off"},
	"balance-tcp":   {"balance-tcp", "active"},
	"lacp":          {"", "active"},
}

// setOVSBond makes an OVS port a bond (setOVSPortSection started its section afresh).
func setOVSBond(s settings, b *state.OVSBond) {
	if b == nil {
		return
	}
	mode := ovsBondSettings[b.Mode]
	if mode[0] != "" {
		s.set("ovs-port", "bond-mode", mode[0])
	}
	s.set("ovs-port", "lacp", mode[1])
	if b.UpDelay != nil {
		s.set("ovs-port", "bond-updelay", uint32(*b.UpDelay))
	}
	if b.DownDelay != nil {
		s.set("ovs-port", "bond-downdelay", uint32(*b.DownDelay))
	}
	setOVSDB(s, b.OVSDB)
}

// ovsBondMode is the nmstate mode of an OVS port's applied bond-mode and lacp.
func ovsBondMode(a settings) string {
	mode, lacp := a.str("ovs-port", "bond-mode"), a.str("ovs-port", "lacp")
	switch {
	case mode == "" && lacp != "" && lacp != "off":
		return "lacp"
	case mode == "":
		return "active-backup" // Open vSwitch's default bond mode
	}
	return mode
}

// ovsPortBond reads an OVS port's bonding from its applied profile and its interfaces: a
// port is a bond when it has more than one, or its profile sets a bond mode or LACP.
func ovsPortBond(a settings, members []string) *state.OVSBond {
	lacp := a.str("ovs-port", "lacp")
	if len(members) < 2 && a.str("ovs-port", "bond-mode") == "" && (lacp == "" || lacp == "off") {
		return nil
	}
	b := &state.OVSBond{Mode: ovsBondMode(a), Port: make([]state.OVSBondPort, len(members)), OVSDB: readOVSDB(a)}
	for i, m := range members {
		b.Port[i] = state.OVSBondPort{Name: m}
	}
	for _, f := range []struct {
		key string
		dst **int
	}{{"bond-updelay", &b.UpDelay}, {"bond-downdelay", &b.DownDelay}} {
		if v, ok := a["ovs-port"][f.key].Value().(uint32); ok && v > 0 {
			n := int(v)
			*f.dst = &n
		}
	}
	return b
}

// ovsBridgeOptions reads an OVS bridge's options from its applied profile.
func ovsBridgeOptions(a settings) *state.BridgeOptions {
	flag := func(key string) *bool {
		v, _ := a["ovs-bridge"][key].Value().(bool) // NetworkManager's default: false
		return &v
	}
	o := &state.BridgeOptions{STP: &state.STP{Enabled: flag("stp-enable")}, RSTP: flag("rstp-enable"), MCastSnoopingEnable: flag("mcast-snooping-enable")}
	if m := a.str("ovs-bridge", "fail-mode"); m != "" {
		o.FailMode = &m
	}
	if dp := a.str("ovs-bridge", "datapath-type"); dp != "" {
		o.Datapath = &dp
	}
	return o
}

// ovsPortVLAN reads an OVS port's VLAN mode, tag and trunks from its applied profile as
// nmstate reports them: native-untagged is a trunk with its native VLAN.
func ovsPortVLAN(a settings) *state.BridgeVLAN {
	mode := a.str("ovs-port", "vlan-mode")
	tag, hasTag := a["ovs-port"]["tag"].Value().(uint32)
	v := &state.BridgeVLAN{}
	switch mode {
	case "access":
		v.Mode = "access"
	case "trunk", "native-untagged":
		v.Mode = "trunk"
		native := mode == "native-untagged"
		v.EnableNative = &native
	default:
		return nil
	}
	if hasTag && tag > 0 {
		t := int(tag)
		v.Tag = &t
	}
	for _, r := range dictList(a["ovs-port"]["trunks"]) {
		start, _ := r["start"].Value().(uint64)
		end, _ := r["end"].Value().(uint64)
		if start == end {
			id := int(start)
			v.TrunkTags = append(v.TrunkTags, state.TrunkTag{ID: &id})
		} else {
			v.TrunkTags = append(v.TrunkTags, state.TrunkTag{IDRange: &state.IDRange{Min: int(start), Max: int(end)}})
		}
	}
	return v
}

// withoutPorts is an OVS bridge without its ports, each a profile of its own.
func withoutPorts(it state.Interface) state.Interface {
	if b := state.SectionOf[*state.BridgeConfig](it); b != nil {
		c := *b
		c.Port = nil
		it.Section = &c
	}
	return it
}
