package networkmanager

import (
	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// kind is what the engine knows of one interface type: NetworkManager's connection and
// device types for it, how a profile says its section, and how its applied profile reads
// back. Each kind is in its own file (kind_*.go) and registers itself.
type kind struct {
	typ state.InterfaceType
	// connType is NetworkManager's connection.type; deviceType its NMDeviceType.
	connType   string
	deviceType uint32
	// link is the settings section holding the link layer's MTU and matched MAC address
	// (802-3-ethernet unless the kind has its own); noMTU: the kind takes no MTU.
	link  string
	noMTU bool
	// deviceless: the kind's profile has no device (a VPN's): no device is read back as it,
	// and the engine, which activates profiles on devices, does not activate it.
	deviceless bool
	// sectionless is the type an existing device of this kind is configured as when the
	// desired state gives no section ("" for its own).
	sectionless state.InterfaceType
	// write sets the kind's settings from it; what it does not say stays as in s.
	write func(s settings, it state.Interface, p profileExtras)
	// fixIP makes the IP sections, once written, what NetworkManager requires of the kind
	// (lo's: manual, with the loopback address); nil for most.
	fixIP func(s settings)
	// portType is NetworkManager's slave-type of the kind's ports, for a controller whose
	// ports its profile names (its ports are the references state walks); portsKeepIP:
	// they keep an IP configuration of their own.
	portType    string
	portsKeepIP bool
	// portEntry is the controller's entry for one port (a Linux bridge's VLANs and
	// spanning tree, a bond's queue and priority), nil when it gives none; writePort
	// writes it, or its absence, into the port's profile, in the kind's portSection.
	portEntry   func(it state.Interface, port string) any
	writePort   func(s settings, entry any)
	portSection string
	// read fills it's section from what its device's profile and the kernel say.
	read func(it *state.Interface, r readBack)
	// sysfs and portSysfs are the kernel's attributes (under /sys/class/net/<name>/) a
	// device of the kind, and each of its ports, has read into the snapshot: what
	// NetworkManager writes there it does not report failing to (a read-only /sys).
	sysfs, portSysfs []string
	// claims tells this kind's devices from another's of the same device type by the
	// profile applied to them; nil when the device type is the kind's alone. A device with
	// no profile applied is the type's first kind.
	claims func(applied settings) bool
}

// readBack is what Show has read for one device: its applied profile, its ports, and
// everything applied (a bridge's ports' VLANs are in their own profiles).
type readBack struct {
	applied settings
	ports   []string
	portsOf map[string][]string
	all     map[string]settings
	// sysfs is the snapshot's kernel attributes, by device name.
	sysfs map[string]map[string]string
}

var kinds = map[state.InterfaceType]*kind{}

func register(k *kind) {
	if k.link == "" {
		k.link = "802-3-ethernet"
	}
	kinds[k.typ] = k
}

// connectionType is NetworkManager's connection.type for interfaces of type t ("" for a
// type it has no profile for).
func connectionType(t state.InterfaceType) string {
	if k, ok := kinds[t]; ok {
		return k.connType
	}
	return ""
}

// typeOfDevice is the nmstate type of a device of NMDeviceType nmType, "" for one not
// modelled: of several kinds sharing the device type, the one that claims none.
func typeOfDevice(nmType uint32) state.InterfaceType {
	for t, k := range kinds {
		if k.deviceType == nmType && k.claims == nil && !k.deviceless {
			return t
		}
	}
	return ""
}

// typeOfApplied is the type of a device of type t whose applied profile a, if another
// kind of its device type claims it (a MAC-VTAP is a MAC-VLAN device); t otherwise.
func typeOfApplied(t state.InterfaceType, a settings) state.InterfaceType {
	k := kinds[t]
	if k == nil || a == nil {
		return t
	}
	for other, ok := range kinds {
		if ok.deviceType == k.deviceType && !ok.deviceless && ok.claims != nil && ok.claims(a) {
			return other
		}
	}
	return t
}

// emptySection makes sure s has section sec, as NetworkManager requires of some types
// even when nothing in it is set.
func emptySection(s settings, sec string) {
	if _, ok := s[sec]; !ok {
		s[sec] = map[string]dbus.Variant{}
	}
}

// The kinds without a section of their own.
func init() {
	register(&kind{typ: state.Ethernet, connType: "802-3-ethernet", deviceType: 1})
	register(&kind{typ: state.Dummy, connType: "dummy", deviceType: 22,
		write: func(s settings, _ state.Interface, _ profileExtras) { emptySection(s, "dummy") }})
}

// setFlag and setNumber set a boolean or a uint32 setting the desired state gives (nil:
// what the base says stays).
func setFlag(s settings, sec, key string, v *bool) {
	if v != nil {
		s.set(sec, key, *v)
	}
}

func setNumber(s settings, sec, key string, v *int) {
	if v != nil {
		s.set(sec, key, uint32(*v))
	}
}

// flagOr reads a boolean setting of an applied profile, or NetworkManager's default for
// it: a profile carries only what differs from it.
func flagOr(a settings, sec, key string, def bool) *bool {
	if v, ok := a[sec][key].Value().(bool); ok {
		return &v
	}
	return &def
}
