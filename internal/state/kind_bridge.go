package state

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// LinuxBridge is a Linux bridge. An OVS bridge (OVSBridge) has the same section.
const LinuxBridge InterfaceType = "linux-bridge"

func init() { registerSection(func() Section { return &BridgeConfig{} }) }

// BridgeConfig is a bridge's bridge section, a Linux or an OVS one.
type BridgeConfig struct {
	Options *BridgeOptions `json:"options,omitempty"`
	Port    []BridgePort   `json:"port" nmstate:"alias=ports,nonnil"`
	// AllowExtraPatchPorts (ovs-bridge) lets ports nmoverlay did not make stay on the
	// bridge (OVN's patch ports). nmoverlay never removes OVS objects it did not make, so
	// false does not remove them either: it is accepted for compatibility.
	AllowExtraPatchPorts *bool `json:"allow-extra-patch-ports,omitempty" nmstate:"only=ovs-bridge"`
}

func (*BridgeConfig) Key() string            { return "bridge" }
func (*BridgeConfig) Types() []InterfaceType { return []InterfaceType{LinuxBridge, OVSBridge} }

// references are the bridge's ports; an OVS bond's members are its bridge's ports, the
// bond being an OVSDB port, no interface.
func (b *BridgeConfig) references(ref func(RefKind, string, *string)) {
	for i := range b.Port {
		if bond := b.Port[i].LinkAggregation; bond != nil {
			for j := range bond.Port {
				ref(RefPort, index(join(index("port", i), "link-aggregation.port"), j), &bond.Port[j].Name)
			}
			continue
		}
		ref(RefPort, index("port", i), &b.Port[i].Name)
	}
}

func (b *BridgeConfig) validate(it Interface, p string, fail failFunc) {
	validateBridge(p, b, it.Type == OVSBridge, fail)
}

func (b *BridgeConfig) verify(add addFunc, it Interface, got Section) {
	g, _ := got.(*BridgeConfig)
	verifyBridge(add, it.Key(), b, g, it.Type == OVSBridge)
}

// BridgeOptions are a bridge's options; all but stp are ovs-bridge only.
type BridgeOptions struct {
	_ struct{} `key:"vlan-protocol" refused:"not applied yet" nmstate:"only=!ovs-bridge"`
	_ struct{} `key:"hash-max" refused:"not applied yet" nmstate:"only=!ovs-bridge"`
	_ struct{} `key:"group-addr" refused:"not applied yet" nmstate:"only=!ovs-bridge"`

	STP                 *STP  `json:"stp,omitempty"`
	RSTP                *bool `json:"rstp,omitempty" nmstate:"only=ovs-bridge"`
	MCastSnoopingEnable *bool `json:"mcast-snooping-enable,omitempty" nmstate:"only=ovs-bridge"`
	// FailMode and Datapath take the values Open vSwitch knows; the datapath is system (the
	// kernel's) or netdev (userspace); '' sets neither, as in nmstate.
	FailMode *string `json:"fail-mode,omitempty" nmstate:"only=ovs-bridge,one-of=secure|standalone,empty-unset"`
	Datapath *string `json:"datapath,omitempty" nmstate:"only=ovs-bridge,one-of=system|netdev,empty-unset"`
	// A Linux bridge's: the link-local groups it forwards (a bit per 01:80:C2:00:00:0X),
	// the seconds it keeps a learnt MAC address, and IGMP/MLD snooping.
	GroupForwardMask  *int  `json:"group-forward-mask,omitempty" nmstate:"only=!ovs-bridge,range=0..65535"`
	MACAgeingTime     *int  `json:"mac-ageing-time,omitempty" nmstate:"only=!ovs-bridge,range=0..1000000"`
	MulticastSnooping *bool `json:"multicast-snooping,omitempty" nmstate:"only=!ovs-bridge"`
}

// STP is a bridge's spanning tree; an OVS bridge's may be a boolean (nmstate 1's form).
type STP struct {
	// An OVS bridge's timers are Open vSwitch's other_config, not applied yet.
	_ struct{} `key:"forward-delay" refused:"not applied yet" nmstate:"only=ovs-bridge"`
	_ struct{} `key:"hello-time" refused:"not applied yet" nmstate:"only=ovs-bridge"`
	_ struct{} `key:"max-age" refused:"not applied yet" nmstate:"only=ovs-bridge"`
	_ struct{} `key:"priority" refused:"not applied yet" nmstate:"only=ovs-bridge"`

	Enabled *bool `json:"enabled,omitempty"`
	// A Linux bridge's timers in seconds, in the kernel's bounds, and its priority.
	ForwardDelay *int `json:"forward-delay,omitempty" nmstate:"only=!ovs-bridge,range=2..30"`
	HelloTime    *int `json:"hello-time,omitempty" nmstate:"only=!ovs-bridge,range=1..10"`
	MaxAge       *int `json:"max-age,omitempty" nmstate:"only=!ovs-bridge,range=6..40"`
	Priority     *int `json:"priority,omitempty" nmstate:"only=!ovs-bridge,range=0..65535"`
}

// BridgePort is a bridge port with its optional VLAN filtering.
type BridgePort struct {
	Name string      `json:"name" nmstate:"required"`
	VLAN *BridgeVLAN `json:"vlan,omitempty"`
	// LinkAggregation makes an OVS bridge's port a bond: one OVSDB port over several
	// interfaces, named by Name, which is no kernel interface.
	LinkAggregation *OVSBond `json:"link-aggregation,omitempty" nmstate:"only=ovs-bridge"`
	// A Linux bridge port's spanning tree: hairpin mode (frames sent back out of the port
	// they came in on), path cost and priority.
	STPHairpinMode *bool `json:"stp-hairpin-mode,omitempty" nmstate:"only=!ovs-bridge"`
	STPPathCost    *int  `json:"stp-path-cost,omitempty" nmstate:"only=!ovs-bridge,range=1..65535"`
	STPPriority    *int  `json:"stp-priority,omitempty" nmstate:"only=!ovs-bridge,range=0..63"`
}

// Interfaces are the interfaces the port puts on its bridge: a bond's members, else the
// port itself.
func (p BridgePort) Interfaces() []string {
	if p.LinkAggregation == nil {
		return []string{p.Name}
	}
	return p.LinkAggregation.Members()
}

// OVSBond is an OVS bridge port's link-aggregation: Open vSwitch's bonding, not the
// kernel's.
type OVSBond struct {
	Mode      string        `json:"mode" nmstate:"required"`
	Port      []OVSBondPort `json:"port" nmstate:"required"`
	UpDelay   *int          `json:"bond-updelay,omitempty" nmstate:"range=0..u32"`
	DownDelay *int          `json:"bond-downdelay,omitempty" nmstate:"range=0..u32"`
	// OVSDB is the bond's port row's columns.
	OVSDB *OVSDBColumns `json:"ovs-db,omitempty"`
}

// Members are the names of the bond's ports.
func (b *OVSBond) Members() []string {
	names := make([]string, len(b.Port))
	for i, m := range b.Port {
		names[i] = m.Name
	}
	return names
}

// OVSBondPort is a member of an OVS bond.
type OVSBondPort struct {
	Name string `json:"name" nmstate:"required"`
}

// OVSBondModes are nmstate's OVS bond modes: Open vSwitch's three bond modes, and lacp
// (LACP negotiated, Open vSwitch's default active-backup hashing).
var OVSBondModes = []string{"active-backup", "balance-slb", "balance-tcp", "lacp"}

// BridgeVLAN is a bridge port's VLAN filtering.
type BridgeVLAN struct {
	Mode         string     `json:"mode,omitempty"` // access or trunk
	Tag          *int       `json:"tag,omitempty" nmstate:"range=1..4094"`
	EnableNative *bool      `json:"enable-native,omitempty"`
	TrunkTags    []TrunkTag `json:"trunk-tags,omitempty"`
}

// TrunkTag is one VLAN id or a range of them.
type TrunkTag struct {
	ID      *int     `json:"id,omitempty" nmstate:"range=1..4094"`
	IDRange *IDRange `json:"id-range,omitempty"`
}

// IDRange is a range of VLAN ids, both ends included.
type IDRange struct {
	Min int `json:"min" nmstate:"required,range=1..4094"`
	Max int `json:"max" nmstate:"required,range=1..4094"`
}

// decodeValue takes an OVS bridge's stp as a boolean too, nmstate 1's form.
func (s *STP) decodeValue(d *decoder, path string, v any) bool {
	if b, ok := v.(bool); ok && d.typ == OVSBridge {
		s.Enabled = &b
		return true
	}
	return d.structure(path, v, reflect.ValueOf(s).Elem())
}

// checkDecoded takes Open vSwitch's bond modes, and the columns of its port's row.
func (b *OVSBond) checkDecoded(d *decoder, path string, _ map[string]any) {
	if b.Mode != "" && !slices.Contains(OVSBondModes, b.Mode) {
		d.fail(join(path, "mode"), "%q is not an OVS bond mode (%s)", b.Mode, strings.Join(OVSBondModes, ", "))
	}
	if b.OVSDB != nil {
		b.OVSDB.validate(join(path, "ovs-db"), d.fail)
	}
}

// validateBridge checks the bridge section of the bridge at p (an OVS bridge when ovs):
// options only the other kind has, each port's VLAN filtering, then the port names.
func validateBridge(p string, b *BridgeConfig, ovs bool, fail func(string, string, ...any)) {
	if o := b.Options; o != nil && !ovs {
		for _, f := range []struct {
			field string
			set   bool
		}{{"rstp", o.RSTP != nil}, {"mcast-snooping-enable", o.MCastSnoopingEnable != nil}, {"fail-mode", o.FailMode != nil}, {"datapath", o.Datapath != nil}} {
			if f.set {
				fail(join(p, "options."+f.field), "only for type ovs-bridge")
			}
		}
	}
	if o := b.Options; o != nil && o.GroupForwardMask != nil && *o.GroupForwardMask&7 != 0 {
		fail(join(p, "options.group-forward-mask"), "%d has bit 0, 1 or 2 set: the kernel never forwards STP, pause or LACP frames (01:80:C2:00:00:00 to 02)", *o.GroupForwardMask)
	}
	if b.AllowExtraPatchPorts != nil && !ovs {
		fail(join(p, "allow-extra-patch-ports"), "only for type ovs-bridge")
	}
	names := make([]string, len(b.Port))
	for i, port := range b.Port {
		names[i] = port.Name
		if port.VLAN != nil {
			validateBridgePortVLAN(index(join(p, "port"), i), port.VLAN, fail)
		}
		if b := port.LinkAggregation; b != nil {
			bp := join(index(join(p, "port"), i), "link-aggregation")
			if len(b.Port) < 2 {
				fail(join(bp, "port"), "an OVS bond needs two ports or more, got %d", len(b.Port))
			}
			checkPorts(join(bp, "port"), b.Members(), fail)
		}
	}
	checkPorts(join(p, "port"), names, fail)
}

// validateOVSBonds checks the OVS bonds of the bridge at p against the rest of the state:
// a bond is an OVSDB port, so its name is no interface's, and its members are interfaces
// of the system (an ovs-interface is a port of its own).
func validateOVSBonds(p, bridge string, br *BridgeConfig, byName map[string]int, all []Interface, fail func(string, string, ...any)) {
	for i, port := range br.Port {
		b := port.LinkAggregation
		if b == nil {
			continue
		}
		pp := index(join(p, "bridge.port"), i)
		if j, ok := byName[port.Name]; ok {
			fail(join(pp, "name"), "%q is also interfaces[%d]: an OVS bond is a port of the bridge, not an interface; give it a name of its own", port.Name, j)
		} else if port.Name == bridge {
			fail(join(pp, "name"), "%q is the bridge's own name, its internal interface's: give the bond a name of its own", port.Name)
		}
		for j, m := range b.Port {
			if k, ok := byName[m.Name]; ok && all[k].Type == OVSInterface || m.Name == bridge {
				fail(index(join(pp, "link-aggregation.port"), j), "%q is an OVS internal interface: a bond's ports are interfaces of the system", m.Name)
			}
		}
	}
}

// validateBridgePortVLAN checks the vlan section of the bridge port at pp: the fields its
// mode requires or forbids, and each trunk tag.
func validateBridgePortVLAN(pp string, v *BridgeVLAN, fail func(string, string, ...any)) {
	switch v.Mode {
	case "access":
		if v.Tag == nil {
			fail(join(pp, "vlan.tag"), "required in access mode")
		}
		if len(v.TrunkTags) > 0 {
			fail(join(pp, "vlan.trunk-tags"), "only in trunk mode")
		}
	case "trunk":
		if len(v.TrunkTags) == 0 {
			fail(join(pp, "vlan.trunk-tags"), "required in trunk mode")
		}
	default:
		fail(join(pp, "vlan.mode"), "%q is not access or trunk", v.Mode)
	}
	for j, t := range v.TrunkTags {
		tp := index(join(pp, "vlan.trunk-tags"), j)
		switch {
		case (t.ID == nil) == (t.IDRange == nil):
			fail(tp, "give exactly one of id and id-range")
		case t.IDRange != nil && t.IDRange.Min > t.IDRange.Max:
			fail(join(tp, "id-range"), "min %d is above max %d", t.IDRange.Min, t.IDRange.Max)
		}
	}
}

// verifyBridge compares the bridge n's bridge section: the options the policy sets, the
// ports, and each port's VLAN filtering. An OVS bridge's ports must include the policy's:
// ports others added (OVN's patch ports) are not nmoverlay's to judge. A missing section
// (got nil) is compared as an empty one.
func verifyBridge(add func(string, ...any), n string, w, g *BridgeConfig, ovs bool) {
	if g == nil {
		g = &BridgeConfig{}
	}
	if wo := w.Options; wo != nil {
		gotOpts := g.Options
		if gotOpts == nil {
			gotOpts = &BridgeOptions{}
		}
		var stp *bool
		if gotOpts.STP != nil {
			stp = gotOpts.STP.Enabled
		}
		if wo.STP != nil {
			verifyField(add, n+".bridge.options.stp.enabled", wo.STP.Enabled, stp)
		}
		opt := n + ".bridge.options."
		verifyField(add, opt+"rstp", wo.RSTP, gotOpts.RSTP)
		verifyField(add, opt+"mcast-snooping-enable", wo.MCastSnoopingEnable, gotOpts.MCastSnoopingEnable)
		verifyField(add, opt+"fail-mode", wo.FailMode, gotOpts.FailMode)
		verifyField(add, opt+"datapath", wo.Datapath, gotOpts.Datapath)
		verifyField(add, opt+"group-forward-mask", wo.GroupForwardMask, gotOpts.GroupForwardMask)
		verifyField(add, opt+"mac-ageing-time", wo.MACAgeingTime, gotOpts.MACAgeingTime)
		verifyField(add, opt+"multicast-snooping", wo.MulticastSnooping, gotOpts.MulticastSnooping)
		if ws, gs := wo.STP, gotOpts.STP; ws != nil {
			if gs == nil {
				gs = &STP{}
			}
			verifyField(add, opt+"stp.forward-delay", ws.ForwardDelay, gs.ForwardDelay)
			verifyField(add, opt+"stp.hello-time", ws.HelloTime, gs.HelloTime)
			verifyField(add, opt+"stp.max-age", ws.MaxAge, gs.MaxAge)
			verifyField(add, opt+"stp.priority", ws.Priority, gs.Priority)
		}
	}
	if ovs {
		have := bridgePortNames(g)
		for _, p := range bridgePortNames(w) {
			if !slices.Contains(have, p) {
				add("%s.bridge.port: %v, want %s among them", n, have, p)
			}
		}
	} else {
		verifyPorts(add, n+".bridge.port", bridgePortNames(w), bridgePortNames(g))
	}
	for _, wp := range w.Port {
		var have BridgePort
		for _, gp := range g.Port {
			if gp.Name == wp.Name {
				have = gp
			}
		}
		if wp.VLAN != nil && !wp.VLAN.Equivalent(have.VLAN) {
			add("%s.bridge.port[name=%s].vlan: %s, want %s", n, wp.Name, have.VLAN, wp.VLAN)
		}
		pp := fmt.Sprintf("%s.bridge.port[name=%s].", n, wp.Name)
		verifyField(add, pp+"stp-hairpin-mode", wp.STPHairpinMode, have.STPHairpinMode)
		verifyField(add, pp+"stp-path-cost", wp.STPPathCost, have.STPPathCost)
		verifyField(add, pp+"stp-priority", wp.STPPriority, have.STPPriority)
		if wp.LinkAggregation != nil {
			verifyOVSBond(add, fmt.Sprintf("%s.bridge.port[name=%s].link-aggregation", n, wp.Name), wp.LinkAggregation, have.LinkAggregation)
		}
	}
}

// verifyOVSBond compares an OVS bond: its mode, its ports (all of them: a bond's members
// are the policy's), and the delays the policy sets.
func verifyOVSBond(add func(string, ...any), path string, w, g *OVSBond) {
	if g == nil {
		add("%s: not a bond, want mode %s", path, w.Mode)
		return
	}
	if g.Mode != w.Mode {
		add("%s.mode: %s, want %s", path, g.Mode, w.Mode)
	}
	verifyPorts(add, path+".port", w.Members(), g.Members())
	if w.OVSDB != nil {
		verifyOVSDB(add, path+".ovs-db", w.OVSDB, g.OVSDB)
	}
	for _, f := range []struct {
		name      string
		want, got *int
	}{{"bond-updelay", w.UpDelay, g.UpDelay}, {"bond-downdelay", w.DownDelay, g.DownDelay}} {
		got := 0 // Open vSwitch's default
		if f.got != nil {
			got = *f.got
		}
		if f.want != nil && *f.want != got {
			add("%s.%s: %d, want %d", path, f.name, got, *f.want)
		}
	}
}

func bridgePortNames(b *BridgeConfig) []string {
	n := make([]string, len(b.Port))
	for i, p := range b.Port {
		n[i] = p.Name
	}
	return n
}

// Equivalent says whether the port VLAN configuration got does what v asks, as nmstate
// reads it back: an access port's tag, a trunk's tags (ranges and single ids alike) and
// its native VLAN when enable-native is on. The bridge's default PVID (VLAN 1) is the
// kernel's and nmstate leaves it out on both sides.
func (v *BridgeVLAN) Equivalent(got *BridgeVLAN) bool {
	if got == nil {
		got = &BridgeVLAN{}
	}
	mode := func(b *BridgeVLAN) string {
		if b.Mode == "" && len(b.TrunkTags) > 0 {
			return "trunk"
		}
		if b.Mode == "" {
			return "access"
		}
		return b.Mode
	}
	if mode(v) != mode(got) {
		return false
	}
	native := func(b *BridgeVLAN) int {
		if b.Tag == nil || (mode(b) == "trunk" && !isTrue(b.EnableNative)) {
			return 0
		}
		return *b.Tag
	}
	return native(v) == native(got) && slices.Equal(v.vlanIDs(), got.vlanIDs())
}

// vlanIDs are a trunk's tagged VLANs, ranges expanded, sorted.
func (v *BridgeVLAN) vlanIDs() []int {
	var ids []int
	for _, t := range v.TrunkTags {
		switch {
		case t.ID != nil:
			ids = append(ids, *t.ID)
		case t.IDRange != nil:
			for id := t.IDRange.Min; id <= t.IDRange.Max; id++ {
				ids = append(ids, id)
			}
		}
	}
	sort.Ints(ids)
	return slices.Compact(ids)
}

func (v *BridgeVLAN) String() string {
	if v == nil {
		return "none"
	}
	s := "mode=" + v.Mode
	if v.Tag != nil {
		s += fmt.Sprintf(",tag=%d", *v.Tag)
	}
	if v.EnableNative != nil {
		s += fmt.Sprintf(",enable-native=%t", *v.EnableNative)
	}
	if ids := v.vlanIDs(); len(ids) > 0 {
		s += fmt.Sprintf(",trunk-tags=%v", ids)
	}
	return s
}

func (b *BridgeConfig) addPort(name string) { b.Port = append(b.Port, BridgePort{Name: name}) }
