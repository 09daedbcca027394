package networkmanager

import (
	"context"
	"fmt"
	"net/netip"
	"sort"

	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/reconciler/state"
)

// deviceType maps NetworkManager's NMDeviceType to nmstate's interface type.
var deviceType = map[uint32]state.InterfaceType{
	1: state.Ethernet, 10: state.Bond, 11: state.VLAN, 13: state.LinuxBridge, 18: state.MACVLAN,
	19: state.VXLAN, 20: state.Veth, 22: state.Dummy, 31: state.VRF,
}

// device is what Show reads of one device.
type device struct {
	path   dbus.ObjectPath
	name   string
	typ    state.InterfaceType
	nmType uint32
	state  uint32
	active dbus.ObjectPath
}

// objects is one snapshot of every NetworkManager object and its properties.
type objects map[dbus.ObjectPath]map[string]map[string]dbus.Variant

// snapshot reads all of NetworkManager's objects in one call (its ObjectManager):
// per-device property reads would cost a round trip each.
func (c *Client) snapshot(ctx context.Context) (objects, error) {
	var objs objects
	if err := c.call(ctx, "/org/freedesktop", "org.freedesktop.DBus.ObjectManager.GetManagedObjects").Store(&objs); err != nil {
		return nil, fmt.Errorf("GetManagedObjects: %w", err)
	}
	return objs, nil
}

func (c *Client) devices(ctx context.Context) ([]device, error) {
	objs, err := c.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return objs.devices(), nil
}

func (o objects) devices() []device {
	var out []device
	for p, ifaces := range o {
		props, ok := ifaces[deviceIface]
		if !ok {
			continue
		}
		d := device{path: p}
		d.name, _ = props["Interface"].Value().(string)
		d.nmType, _ = props["DeviceType"].Value().(uint32)
		d.state, _ = props["State"].Value().(uint32)
		d.active, _ = props["ActiveConnection"].Value().(dbus.ObjectPath)
		d.typ = deviceType[d.nmType]
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// Show reads the current state in the model's schema. It holds nothing that changes by
// itself (no lifetimes, counters or timestamps), so two reads of an unchanged host are equal.
func (c *Client) Show(ctx context.Context) (state.State, error) {
	objs, err := c.snapshot(ctx)
	if err != nil {
		return state.State{}, err
	}
	devs := objs.devices()
	var s state.State
	routes := &state.Routes{}
	byPath := map[dbus.ObjectPath]string{}
	for _, d := range devs {
		byPath[d.path] = d.name
	}
	for _, d := range devs {
		if d.typ == "" {
			continue // loopback, generic, tun...: not part of the model
		}
		props := objs[d.path][deviceIface]
		it := state.Interface{Name: d.name, Type: d.typ, State: state.Down}
		if d.state == deviceStateActivated {
			it.State = state.Up
		}
		if mtu, ok := props["Mtu"].Value().(uint32); ok && mtu > 0 {
			m := int(mtu)
			it.MTU = &m
		}
		if hw, ok := props["HwAddress"].Value().(string); ok && hw != "" {
			it.MACAddress = &hw
		}
		for _, fam := range []struct {
			prop, iface string
			dst         **state.IPConfig
		}{{"Ip4Config", ip4Iface, &it.IPv4}, {"Ip6Config", ip6Iface, &it.IPv6}} {
			cfgPath, _ := props[fam.prop].Value().(dbus.ObjectPath)
			ipProps, ok := objs[cfgPath][fam.iface]
			if !ok {
				continue
			}
			ip := &state.IPConfig{}
			for _, a := range dictList(ipProps["AddressData"]) {
				addr, _ := a["address"].Value().(string)
				prefix, _ := a["prefix"].Value().(uint32)
				ip.Address = append(ip.Address, state.Address{IP: addr, PrefixLength: int(prefix)})
			}
			enabled := len(ip.Address) > 0
			ip.Enabled = &enabled
			*fam.dst = ip
			for _, r := range dictList(ipProps["RouteData"]) {
				routes.Running = append(routes.Running, runningRoute(r, d.name))
			}
		}
		ports := []string{}
		if pp, ok := props["Ports"].Value().([]dbus.ObjectPath); ok {
			for _, p := range pp {
				ports = append(ports, byPath[p])
			}
			sort.Strings(ports)
		}
		// The type-specific configuration is in the profile applied to the device: one
		// more call, only for the types that have such a section.
		if d.state == deviceStateActivated && d.typ != state.Ethernet && d.typ != state.Dummy {
			var applied settings
			var version uint64
			if err := c.call(ctx, d.path, deviceIface+".GetAppliedConnection", uint32(0)).Store(&applied, &version); err == nil {
				describe(&it, applied, ports)
			}
		}
		s.Interfaces = append(s.Interfaces, it)
	}
	sort.Slice(routes.Running, func(i, j int) bool { return routeSortKey(routes.Running[i]) < routeSortKey(routes.Running[j]) })
	if len(routes.Running) > 0 {
		s.Routes = routes
	}
	if dns := runningDNS(objs); dns != nil {
		s.DNSResolver = &state.DNSResolver{Running: dns}
	}
	return s, nil
}

// describe fills the type-specific sections from the profile applied to the device.
func describe(it *state.Interface, applied settings, ports []string) {
	switch it.Type {
	case state.Bond:
		opts, _ := applied["bond"]["options"].Value().(map[string]string)
		it.LinkAggregation = &state.BondConfig{Mode: state.BondMode(opts["mode"]), Port: ports}
	case state.LinuxBridge:
		it.Bridge = &state.BridgeConfig{Port: make([]state.BridgePort, len(ports))}
		for i, p := range ports {
			it.Bridge.Port[i] = state.BridgePort{Name: p}
		}
	case state.VRF:
		table, _ := applied["vrf"]["table"].Value().(uint32)
		it.VRF = &state.VRFConfig{Port: ports, RouteTableID: int(table)}
	case state.VLAN:
		id, _ := applied["vlan"]["id"].Value().(uint32)
		it.VLAN = &state.VLANConfig{ID: int(id), BaseIface: applied.str("vlan", "parent")}
	case state.MACVLAN:
		mode, _ := applied["macvlan"]["mode"].Value().(uint32)
		name := ""
		for k, v := range macvlanMode {
			if v == mode {
				name = k
			}
		}
		it.MACVLAN = &state.MACVLANConfig{BaseIface: applied.str("macvlan", "parent"), Mode: name}
	case state.VXLAN:
		id, _ := applied["vxlan"]["id"].Value().(uint32)
		it.VXLAN = &state.VXLANConfig{ID: int(id), BaseIface: applied.str("vxlan", "parent"), Remote: applied.str("vxlan", "remote")}
	case state.Veth:
		if peer := applied.str("veth", "peer"); peer != "" {
			it.Veth = &state.VethConfig{Peer: peer}
		}
	}
}

func runningRoute(r map[string]dbus.Variant, dev string) state.Route {
	dest, _ := r["dest"].Value().(string)
	prefix, _ := r["prefix"].Value().(uint32)
	rt := state.Route{Destination: netip.PrefixFrom(netip.MustParseAddr(dest), int(prefix)).String(), NextHopInterface: dev}
	if nh, ok := r["next-hop"].Value().(string); ok {
		rt.NextHopAddress = nh
	}
	if m, ok := r["metric"].Value().(uint32); ok {
		v := int(m)
		rt.Metric = &v
	}
	table := 254
	if t, ok := r["table"].Value().(uint32); ok && t != 0 {
		table = int(t)
	}
	rt.TableID = &table
	return rt
}

func routeSortKey(r state.Route) string {
	return fmt.Sprintf("%s %s %s %d", r.NextHopInterface, r.Destination, r.NextHopAddress, *r.TableID)
}

func runningDNS(objs objects) *state.DNSConfig {
	cfg := dictList(objs[dnsManagerPath][dnsIface]["Configuration"])
	out := &state.DNSConfig{}
	for _, entry := range cfg {
		ns, _ := entry["nameservers"].Value().([]string)
		out.Server = appendNew(out.Server, ns...)
		domains, _ := entry["domains"].Value().([]string)
		out.Search = appendNew(out.Search, domains...)
	}
	if len(out.Server) == 0 && len(out.Search) == 0 {
		return nil
	}
	return out
}

func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		found := false
		for _, e := range list {
			found = found || e == it
		}
		if !found {
			list = append(list, it)
		}
	}
	return list
}

func dictList(v dbus.Variant) []map[string]dbus.Variant {
	l, _ := v.Value().([]map[string]dbus.Variant)
	return l
}
