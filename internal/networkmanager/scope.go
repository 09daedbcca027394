package networkmanager

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager/nmdbus"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// A scope is what an apply's reads of the node cover: the interfaces it names, or the
// whole node. Read by name, both reads (the host before the apply, the state after it)
// cost what the policy has, not what the node has: on a node of 2,000 interfaces, reading
// the whole of it took 0.45 s before the apply and 0.6 s for each verification.
type scope struct {
	// names are the interfaces to read; nil reads the whole node.
	names []string
	// whole says why the whole node is read, when it is.
	whole string
}

func (sc scope) String() string {
	if sc.names == nil {
		return "the whole node: " + sc.whole
	}
	return fmt.Sprintf("%d interfaces by name", len(sc.names))
}

// scopeOf is the scope desired needs: its interfaces, those they refer to (ports, base
// interfaces, controllers, a MAC address's source) and its routes' next hops, unless
// something in it is placed or matched among all the node's interfaces.
func scopeOf(desired state.State) scope {
	names := map[string]bool{}
	for _, it := range desired.Interfaces {
		switch {
		case it.Identifier != "":
			return scope{whole: fmt.Sprintf("%s is named by its %s", it.Name, it.Identifier)}
		case it.Type == state.OVSBridge || it.Type == state.OVSPort || it.Type == state.OVSInterface:
			return scope{whole: "an Open vSwitch bridge, its port and its interface share a name"}
		case it.Type == state.InfiniBand:
			return scope{whole: "InfiniBand is checked against every InfiniBand device"}
		case kinds[it.Type] != nil && kinds[it.Type].deviceless:
			return scope{whole: fmt.Sprintf("%s has no device", it.Name)}
		case it.Controller != nil && *it.Controller == "":
			return scope{whole: fmt.Sprintf("%s leaves whichever controller it has", it.Name)}
		}
		names[it.Name] = true
		for _, ref := range it.References() {
			names[ref.Name] = true
		}
	}
	switch {
	case desired.DNSResolver != nil:
		return scope{whole: "DNS is placed among the node's interfaces"}
	case desired.RouteRules != nil:
		return scope{whole: "route rules are placed among the node's interfaces"}
	}
	if desired.Routes != nil {
		for _, r := range desired.Routes.Config {
			switch {
			case r.State == "absent":
				return scope{whole: "a route removal is matched against every interface's routes"}
			case r.NextHopInterface == "" || r.VRFName != "":
				return scope{whole: fmt.Sprintf("the route %s is placed by the node's interfaces", r)}
			}
			names[r.NextHopInterface] = true
		}
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	return scope{names: out}
}

// objectSource is where a read by name finds NetworkManager's objects: the bus, or, in
// tests, a whole read recorded on a real node.
type objectSource interface {
	// deviceNamed is the path of the device of that (IP) interface name, "" for none.
	deviceNamed(ctx context.Context, name string) (dbus.ObjectPath, error)
	// properties are the properties of the object's interface iface, nil when the object
	// or the interface is gone.
	properties(ctx context.Context, path dbus.ObjectPath, iface string) (map[string]dbus.Variant, error)
}

// readNamed reads, as a whole read would have them, the objects of the devices named, of
// their ports, and of what each runs (its active connection, its IP configurations), with
// the DNS manager's. known are device paths by name, from an earlier read (each is checked:
// a name may have moved to another device since). For the host (forHost), each device's
// active connection and permanent MAC address are read too; the state (Snapshot.State)
// needs neither, and leaving them out saves a third of the calls. ok is false when a device
// read is an Open vSwitch one, whose name its bridge, port and interface share: only the
// whole node tells them apart.
func readNamed(ctx context.Context, src objectSource, names []string, known map[string]dbus.ObjectPath, forHost bool) (objects, bool, error) {
	objs := objects{}
	var mu sync.Mutex
	keep := func(path dbus.ObjectPath, iface string, props map[string]dbus.Variant) {
		mu.Lock()
		defer mu.Unlock()
		if objs[path] == nil {
			objs[path] = map[string]map[string]dbus.Variant{}
		}
		objs[path][iface] = props
	}
	read := func(path dbus.ObjectPath, iface string) error {
		props, err := src.properties(ctx, path, iface)
		if err == nil && props != nil {
			keep(path, iface, props)
		}
		return err
	}
	err := inWindow(len(names), callsInFlight, func(i int) error {
		name := names[i]
		if p := known[name]; p != "" {
			props, err := src.properties(ctx, p, nmdbus.DeviceIface)
			if err != nil {
				return err
			}
			if n, _ := props["Interface"].Value().(string); n == name {
				keep(p, nmdbus.DeviceIface, props)
				return nil
			}
		}
		p, err := src.deviceNamed(ctx, name)
		if err != nil || p == "" {
			return err
		}
		return read(p, nmdbus.DeviceIface)
	})
	if err != nil {
		return nil, false, err
	}
	// Their ports, which the state lists by name, and the ports' own (a bond in a bridge).
	for asked := map[dbus.ObjectPath]bool{}; ; {
		var ports []dbus.ObjectPath
		for _, ifaces := range objs {
			pp, _ := ifaces[nmdbus.DeviceIface]["Ports"].Value().([]dbus.ObjectPath)
			for _, p := range pp {
				if _, done := objs[p]; !done && !asked[p] {
					asked[p] = true
					ports = append(ports, p)
				}
			}
		}
		if len(ports) == 0 {
			break
		}
		if err := inWindow(len(ports), callsInFlight, func(i int) error { return read(ports[i], nmdbus.DeviceIface) }); err != nil {
			return nil, false, err
		}
	}
	type part struct {
		path  dbus.ObjectPath
		iface string
	}
	parts := []part{{nmdbus.DNSManagerPath, nmdbus.DNSIface}}
	for p, ifaces := range objs {
		props := ifaces[nmdbus.DeviceIface]
		nmType, _ := props["DeviceType"].Value().(uint32)
		switch typeOfDevice(nmType) {
		case state.OVSBridge, state.OVSPort, state.OVSInterface:
			return nil, false, nil
		case state.Ethernet, state.Veth:
			if forHost {
				parts = append(parts, part{p, nmdbus.WiredIface})
			}
		}
		for prop, iface := range map[string]string{"ActiveConnection": nmdbus.ActiveIface, "Ip4Config": nmdbus.IP4Iface, "Ip6Config": nmdbus.IP6Iface} {
			if sub, _ := props[prop].Value().(dbus.ObjectPath); sub != "" && sub != "/" && (forHost || iface != nmdbus.ActiveIface) {
				parts = append(parts, part{sub, iface})
			}
		}
	}
	if err := inWindow(len(parts), callsInFlight, func(i int) error { return read(parts[i].path, parts[i].iface) }); err != nil {
		return nil, false, err
	}
	return objs, true, nil
}

// busObjects reads objects by name over the bus.
type busObjects struct{ c *Client }

func (b busObjects) deviceNamed(ctx context.Context, name string) (dbus.ObjectPath, error) {
	var p dbus.ObjectPath
	err := b.c.call(ctx, nmdbus.Path, nmdbus.Iface+".GetDeviceByIpIface", name).Store(&p)
	if isDBusError(err, nmdbus.Iface+".UnknownDevice") {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("GetDeviceByIpIface %s: %w", name, err)
	}
	return p, nil
}

func (b busObjects) properties(ctx context.Context, path dbus.ObjectPath, iface string) (map[string]dbus.Variant, error) {
	var props map[string]dbus.Variant
	err := b.c.call(ctx, path, nmdbus.PropsIface+".GetAll", iface).Store(&props)
	// Gone since it was named: a device deleted, an IP configuration replaced.
	if isDBusError(err, "org.freedesktop.DBus.Error.UnknownObject") || isDBusError(err, "org.freedesktop.DBus.Error.UnknownMethod") ||
		isDBusError(err, "org.freedesktop.DBus.Error.InvalidArgs") {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s GetAll %s: %w", path, iface, err)
	}
	return props, nil
}

// objectsIn reads the objects sc covers (readNamed says what forHost adds): by name, or the
// whole node's. The scope it says is the one it read: the whole node when a name was an
// Open vSwitch device's.
func (c *Client) objectsIn(ctx context.Context, sc scope, known map[string]dbus.ObjectPath, forHost bool) (objects, scope, error) {
	if sc.names != nil {
		objs, ok, err := readNamed(ctx, busObjects{c}, sc.names, known, forHost)
		if err != nil || ok {
			return objs, sc, err
		}
		sc = scope{whole: "an Open vSwitch device is named"}
	}
	objs, err := c.managedObjects(ctx)
	return objs, sc, err
}

// showIn reads the state of what sc covers: the interfaces it names and their ports, or
// the whole node.
func (c *Client) showIn(ctx context.Context, sc scope, known map[string]dbus.ObjectPath) (state.State, error) {
	objs, _, err := c.objectsIn(ctx, sc, known, false)
	if err != nil {
		return state.State{}, err
	}
	snap, err := c.snapshotOf(ctx, objs)
	if err != nil {
		return state.State{}, err
	}
	return snap.State(), nil
}

// ShowInterfaces reads the state of the interfaces named and of their ports, with the
// routes they run and the DNS in use, as Show would read them, at a cost that grows with
// the names and not with the node. With an Open vSwitch name among them, or none named,
// it reads the whole node.
func (c *Client) ShowInterfaces(ctx context.Context, names []string) (state.State, error) {
	return c.showIn(ctx, scope{names: slices.Clip(names)}, nil)
}
