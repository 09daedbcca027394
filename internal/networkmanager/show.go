package networkmanager

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/internal/state"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager/nmdbus"
)

// activeStateFlagExternal is NM_ACTIVATION_STATE_FLAG_EXTERNAL.
const activeStateFlagExternal = 0x80

// nmDeviceInterfaceFlagPromisc is NM_DEVICE_INTERFACE_FLAG_PROMISC: NetworkManager's own
// number for the kernel's IFF_PROMISC.
const nmDeviceInterfaceFlagPromisc = 0x4

// nmDeviceTypeTun is NM_DEVICE_TYPE_TUN.
const nmDeviceTypeTun = 16

// device is what Show reads of one device.
type device struct {
	// key identifies it as state.Interface.Key does (br-ex is a bridge, a port and an
	// interface).
	key    string
	path   dbus.ObjectPath
	name   string
	typ    state.InterfaceType
	nmType uint32
	state  uint32
	active dbus.ObjectPath
	// profile is the settings path of the profile active on it, or "".
	profile dbus.ObjectPath
	// mac is its current MAC address; permMAC its permanent one, when the device has one.
	mac, permMAC string
	// pci is its PCI address, from udev's ID_PATH ("pci-0000:03:00.1"), which
	// NetworkManager says as the device's Path; "" for a device elsewhere.
	pci string
	// real: the device exists in the kernel (NetworkManager keeps objects for devices its
	// profiles could create).
	real bool
	// external: NetworkManager only follows what another program configured on it (its
	// profile is generated, in memory): never the engine's to take over.
	external bool
	// vpn: not a device but a VPN's active connection (path and active are its path).
	vpn bool
}

// objects are every NetworkManager object and its properties, as one call reads them.
type objects map[dbus.ObjectPath]map[string]map[string]dbus.Variant

// managedObjects reads all of NetworkManager's objects in one call (its ObjectManager):
// per-device property reads would cost a round trip each.
func (c *Client) managedObjects(ctx context.Context) (objects, error) {
	call := c.call(ctx, "/org/freedesktop", "org.freedesktop.DBus.ObjectManager.GetManagedObjects")
	if call.Err != nil {
		return nil, fmt.Errorf("GetManagedObjects: %w", call.Err)
	}
	// godbus decodes the reply into this very type: taken as it is, not copied by Store,
	// which costs as much again on a node with thousands of devices.
	if len(call.Body) == 1 {
		if objs, ok := call.Body[0].(map[dbus.ObjectPath]map[string]map[string]dbus.Variant); ok {
			return objs, nil
		}
	}
	var objs objects
	if err := call.Store(&objs); err != nil {
		return nil, fmt.Errorf("GetManagedObjects: %w", err)
	}
	return objs, nil
}

func (c *Client) devices(ctx context.Context) ([]device, error) {
	objs, err := c.managedObjects(ctx)
	if err != nil {
		return nil, err
	}
	return objs.devices(), nil
}

func (o objects) devices() []device {
	var out []device
	for p, ifaces := range o {
		props, ok := ifaces[nmdbus.DeviceIface]
		if !ok {
			continue
		}
		d := device{path: p}
		d.name, _ = props["Interface"].Value().(string)
		d.nmType, _ = props["DeviceType"].Value().(uint32)
		d.state, _ = props["State"].Value().(uint32)
		d.active, _ = props["ActiveConnection"].Value().(dbus.ObjectPath)
		d.typ = typeOfDevice(d.nmType)
		d.key = state.Interface{Name: d.name, Type: d.typ}.Key()
		d.real, _ = props["Real"].Value().(bool)
		d.mac, _ = props["HwAddress"].Value().(string)
		d.permMAC, _ = ifaces[nmdbus.WiredIface]["PermHwAddress"].Value().(string)
		if path, _ := props["Path"].Value().(string); strings.HasPrefix(path, "pci-") && !strings.Contains(path[4:], "-") {
			d.pci = path[4:] // not a USB device's "pci-0000:00:14.0-usb-0:2:1.0"
		}
		d.profile, _ = o[d.active][nmdbus.ActiveIface]["Connection"].Value().(dbus.ObjectPath)
		flags, _ := o[d.active][nmdbus.ActiveIface]["StateFlags"].Value().(uint32)
		d.external = flags&activeStateFlagExternal != 0
		out = append(out, d)
	}
	return sortDevices(foldTaps(out))
}

// sortDevices sorts by name, then key: an OVS bridge, its port and its interface may
// share one, and NetworkManager's objects come in no order.
func sortDevices(out []device) []device {
	sort.Slice(out, func(i, j int) bool {
		if out[i].name != out[j].name {
			return out[i].name < out[j].name
		}
		return out[i].key < out[j].key
	})
	return out
}

// profileIP reads a VPN's IP configuration from its profile, as nmstate reports it.
func profileIP(it *state.Interface, a settings) {
	for _, f := range []struct {
		name string
		dst  **state.IPConfig
	}{{"ipv4", &it.IPv4}, {"ipv6", &it.IPv6}} {
		if *f.dst == nil && a.str(f.name, "method") != "" {
			ip := &state.IPConfig{}
			describeIP(ip, a, f.name)
			*f.dst = ip
		}
	}
}

// profileSettings reads a profile's settings, nil if it went meanwhile.
func (c *Client) profileSettings(ctx context.Context, p dbus.ObjectPath) settings {
	s, err := c.nm.Settings(ctx, p)
	if err != nil {
		return nil
	}
	return settings(s)
}

// foldTaps drops the tap NetworkManager shows beside an OVS internal interface of the
// same name on the userspace datapath (the interface's kernel side), giving its MAC
// address to the OVS interface, which has none of its own there.
func foldTaps(devs []device) []device {
	tapMAC, ovsIface := map[string]string{}, map[string]bool{}
	for _, d := range devs {
		switch {
		case d.nmType == nmDeviceTypeTun:
			tapMAC[d.name] = d.mac
		case d.typ == state.OVSInterface:
			ovsIface[d.name] = true
		}
	}
	for i, d := range devs { // every one of the name: one may be going while another comes
		if d.typ == state.OVSInterface && d.mac == "" {
			devs[i].mac = tapMAC[d.name]
		}
	}
	return slices.DeleteFunc(devs, func(d device) bool { return d.nmType == nmDeviceTypeTun && ovsIface[d.name] })
}

// Show reads the current state in the model's schema: it gathers a snapshot and
// translates it.
func (c *Client) Show(ctx context.Context) (state.State, error) {
	snap, err := c.Snapshot(ctx)
	if err != nil {
		return state.State{}, err
	}
	return snap.State(), nil
}

// Snapshot is everything Show reads of a node, before any of it is translated:
// NetworkManager's objects, the profile applied to each activated device, and what the
// kernel runs that NetworkManager does not say (a physical function's VFs, ethtool
// settings). Its translation, State, is a pure function of it.
type Snapshot struct {
	Objects objects `json:"objects"`
	// Applied are the applied profiles by device key.
	Applied map[string]settings `json:"applied"`
	// VFs are the SR-IOV capable Ethernet devices' VFs, by name.
	VFs map[string]*state.SRIOVConfig `json:"vfs,omitempty"`
	// Ethtool is what the kernel runs of the ethtool settings each device's applied
	// profile names, by name.
	Ethtool map[string]*kernelEthtool `json:"ethtool,omitempty"`
	// Sysfs are the kernel attributes each kind reads back (kind.sysfs), by device name
	// and path under /sys/class/net/<name>.
	Sysfs map[string]map[string]string `json:"sysfs,omitempty"`
	// KernelRoutes are the kernel's routes, read only when an applied profile gives a route
	// a source, a congestion window or a type, which RouteData does not report.
	KernelRoutes []kernelRoute `json:"kernel-routes,omitempty"`
	// VPNProfiles are the settings of the profiles the active VPN connections run, by
	// path: a VPN has no device to ask for its applied profile.
	VPNProfiles map[dbus.ObjectPath]settings `json:"vpn-profiles,omitempty"`
}

// devices are the snapshot's devices, its VPNs of a modelled kind among them.
func (snap Snapshot) devices() []device {
	return sortDevices(append(snap.Objects.devices(), snap.Objects.vpnDevices(func(p dbus.ObjectPath) settings { return snap.VPNProfiles[p] })...))
}

// Snapshot reads what Show translates.
func (c *Client) Snapshot(ctx context.Context) (Snapshot, error) {
	objs, err := c.managedObjects(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	return c.snapshotOf(ctx, objs)
}

// snapshotOf completes a snapshot of objs, read whole or by name (readNamed): the applied
// profiles of its devices, and what the kernel runs on them.
func (c *Client) snapshotOf(ctx context.Context, objs objects) (Snapshot, error) {
	devs := objs.devices()
	snap := Snapshot{Objects: objs, Applied: c.appliedProfiles(ctx, devs), VFs: map[string]*state.SRIOVConfig{}, Ethtool: map[string]*kernelEthtool{},
		Sysfs: readSysfs(objs, devs, c.sysfsRoot())}
	read := map[dbus.ObjectPath]settings{} // every VPN's profile; kept, those of a modelled kind
	for _, d := range objs.vpnDevices(func(p dbus.ObjectPath) settings { read[p] = c.profileSettings(ctx, p); return read[p] }) {
		if snap.VPNProfiles == nil {
			snap.VPNProfiles = map[dbus.ObjectPath]settings{}
		}
		snap.VPNProfiles[d.profile] = read[d.profile]
	}
	if err := c.inNetNS(func() error { return snap.readKernel(devs, objs) }); err != nil {
		return Snapshot{}, err
	}
	return snap, nil
}

// readKernel reads what the kernel runs that NetworkManager does not say: the routes'
// attributes, VFs and ethtool settings.
func (snap *Snapshot) readKernel(devs []device, objs objects) error {
	var err error
	if routeAttributesApplied(snap.Applied) {
		if snap.KernelRoutes, err = readKernelRoutes(); err != nil {
			return err
		}
	}
	for _, d := range devs {
		if caps, _ := objs[d.path][nmdbus.DeviceIface]["Capabilities"].Value().(uint32); d.typ == state.Ethernet && caps&nmDeviceCapSRIOV != 0 {
			// NetworkManager's D-Bus API has no ifindex: the kernel's, by name.
			link, err := net.InterfaceByName(d.name)
			if err != nil {
				return fmt.Errorf("reading the VFs of %s: %w", d.name, err)
			}
			if snap.VFs[d.name], err = readSRIOV(uint32(link.Index)); err != nil {
				return fmt.Errorf("reading the VFs of %s: %w", d.name, err)
			}
		}
		if a := snap.Applied[d.key]; a != nil && d.typ != "" && d.typ != state.OVSPort {
			k, err := readKernelEthtool(d.name, a)
			if err != nil {
				return err
			}
			if k != nil {
				snap.Ethtool[d.name] = k
			}
		}
	}
	return nil
}

// State translates the snapshot into the model's schema. It holds nothing that changes
// by itself (no lifetimes, counters or timestamps), so two reads of an unchanged host are
// equal. What the kernel runs (addresses, routes, MTU, ports) comes from the devices;
// what NetworkManager was told (DHCP and autoconf, bond and bridge options, port VLANs,
// the static routes and DNS: nmstate's routes.config and dns-resolver.config) from the
// profile applied to each device.
func (snap Snapshot) State() state.State {
	objs := snap.Objects
	devs := snap.devices()
	var s state.State
	routes := &state.Routes{}
	rules := &state.RouteRules{}
	byPath := map[dbus.ObjectPath]device{}
	for _, d := range devs {
		byPath[d.path] = d
	}
	applied := snap.Applied
	portsOf := map[string][]string{} // by device key, sorted: an OVS bridge's ports are OVS ports, a bond's have members
	for _, d := range devs {
		ports := []string{}
		if pp, ok := objs[d.path][nmdbus.DeviceIface]["Ports"].Value().([]dbus.ObjectPath); ok {
			for _, p := range pp {
				ports = append(ports, byPath[p].name)
			}
			sort.Strings(ports)
		}
		portsOf[d.key] = ports
	}
	static := staticDNS{}
	for _, d := range devs {
		if d.typ == "" || d.typ == state.OVSPort {
			continue // generic, tun...: not part of the model; an OVS port is its bridge's
		}
		props := objs[d.path][nmdbus.DeviceIface]
		a := applied[d.key]
		if d.vpn {
			// What it was told is its profile's; its active connection's IP configuration is
			// that of the device it runs over (it has no tunnel device), not its own.
			props, a = nil, snap.VPNProfiles[d.profile]
		}
		it := deviceInterface(d, props)
		if vfs, ok := snap.VFs[d.name]; ok {
			it.Ethernet = &state.EthernetConfig{SRIOV: vfs}
		}
		it.Type = typeOfApplied(it.Type, a)
		objs.readIP(&it, props, a, routes, &static)
		if d.vpn {
			profileIP(&it, a)
		}
		if a != nil {
			it.WaitIP = waitIP(a)
			describe(&it, a, portsOf, applied, snap.Sysfs)
			it.LLDP = readLLDP(a, props)
			it.Ethtool = ethtoolState(snap.Ethtool[d.name], a)
			if it.Type == state.OVSBridge || it.Type == state.OVSInterface {
				it.OVSDB = readOVSDB(a)
			}
			// As nmstate: the profile's name when it is not the interface's (OVS profiles are
			// named by their role: br-ex-br, ovs-port-eth1).
			if id := a.str("connection", "id"); id != "" && id != it.Name && it.Type != state.OVSBridge && it.Type != state.OVSInterface {
				it.ProfileName = &id
			}
			for _, r := range profileRules(a) {
				if !slices.ContainsFunc(rules.Config, r.Same) {
					rules.Config = append(rules.Config, r)
				}
			}
		}
		s.Interfaces = append(s.Interfaces, it)
	}
	if snap.KernelRoutes != nil {
		for i, r := range routes.Running {
			routes.Running[i] = withKernelAttributes(r, snap.KernelRoutes)
		}
		routes.Running = append(routes.Running, droppingRoutes(snap.KernelRoutes)...)
	}
	sort.Slice(routes.Running, func(i, j int) bool { return routeSortKey(routes.Running[i]) < routeSortKey(routes.Running[j]) })
	sort.Slice(routes.Config, func(i, j int) bool { return routeSortKey(routes.Config[i]) < routeSortKey(routes.Config[j]) })
	if len(routes.Running) > 0 || len(routes.Config) > 0 {
		s.Routes = routes
	}
	if len(rules.Config) > 0 {
		sort.Slice(rules.Config, func(i, j int) bool { return rules.Config[i].String() < rules.Config[j].String() })
		s.RouteRules = rules
	}
	running := runningDNS(objs)
	s.DNSResolver = &state.DNSResolver{Running: running, Config: static.inOrder(running)}
	return s
}

// appliedProfiles reads, by device key, the profile applied to each activated device of
// a modelled type; a device whose read fails has none.
func (c *Client) appliedProfiles(ctx context.Context, devs []device) map[string]settings {
	var active []device
	for _, d := range devs {
		if d.typ != "" && d.state == deviceStateActivated {
			active = append(active, d)
		}
	}
	got := make([]settings, len(active))
	inParallel(len(active), func(i int) {
		var version uint64
		if err := c.call(ctx, active[i].path, nmdbus.DeviceIface+".GetAppliedConnection", uint32(0)).Store(&got[i], &version); err != nil {
			got[i] = nil
		}
	})
	applied := map[string]settings{}
	for i, d := range active {
		if got[i] != nil {
			applied[d.key] = got[i]
		}
	}
	return applied
}

// deviceInterface reads what the device itself says: its name, type, whether it is up,
// its MTU and MAC address (an OVS bridge, not a kernel interface, has neither).
func deviceInterface(d device, props map[string]dbus.Variant) state.Interface {
	it := state.Interface{Name: d.name, Type: d.typ, State: state.Down}
	if d.state == deviceStateActivated {
		it.State = state.Up
	}
	if d.typ == state.OVSBridge {
		return it
	}
	if flags, ok := props["InterfaceFlags"].Value().(uint32); ok {
		promisc := flags&nmDeviceInterfaceFlagPromisc != 0
		it.AcceptAllMACAddresses = &promisc
	}
	if mtu, ok := props["Mtu"].Value().(uint32); ok && mtu > 0 {
		m := int(mtu)
		it.MTU = &m
	}
	if d.mac != "" && d.typ != state.Loopback { // lo's 00:00:00:00:00:00 is no address
		mac := d.mac
		it.MACAddress = &mac
	}
	if d.pci != "" {
		pci := d.pci
		it.PCIAddress = &pci
	}
	return it
}

// readIP fills the interface's ipv4 and ipv6 sections from the device's IP configurations and from
// a, the profile applied to it (nil for none); it adds the device's running routes, and
// the routes and DNS the profile sets, to routes and static.
func (o objects) readIP(it *state.Interface, props map[string]dbus.Variant, a settings, routes *state.Routes, static *staticDNS) {
	for _, fam := range []struct {
		name, prop, iface string
		dst               **state.IPConfig
	}{{"ipv4", "Ip4Config", nmdbus.IP4Iface, &it.IPv4}, {"ipv6", "Ip6Config", nmdbus.IP6Iface, &it.IPv6}} {
		cfgPath, _ := props[fam.prop].Value().(dbus.ObjectPath)
		ipProps, ok := o[cfgPath][fam.iface]
		if !ok {
			continue
		}
		ip := &state.IPConfig{}
		for _, ad := range dictList(ipProps["AddressData"]) {
			addr, _ := ad["address"].Value().(string)
			prefix, _ := ad["prefix"].Value().(uint32)
			ip.Address = append(ip.Address, state.Address{IP: addr, PrefixLength: int(prefix)})
		}
		enabled := len(ip.Address) > 0
		ip.Enabled = &enabled
		describeIP(ip, a, fam.name)
		*fam.dst = ip
		for _, r := range dictList(ipProps["RouteData"]) {
			routes.Running = append(routes.Running, runningRoute(r, it.Name))
		}
		if a != nil {
			for _, r := range dictList(a[fam.name]["route-data"]) {
				routes.Config = append(routes.Config, runningRoute(r, it.Name))
			}
			static.add(a, fam.name)
		}
	}
}

// waitIP is the applied profile's wait-ip, from its families' may-fail (true by
// NetworkManager's default); none for a port, whose profile has no IP configuration.
func waitIP(a settings) string {
	if a.str("ipv4", "method") == "" && a.str("ipv6", "method") == "" {
		return ""
	}
	v4, v6 := *flagOr(a, "ipv4", "may-fail", true), *flagOr(a, "ipv6", "may-fail", true)
	switch {
	case !v4 && !v6:
		return "ipv4+ipv6"
	case !v4:
		return "ipv4"
	case !v6:
		return "ipv6"
	}
	return "any"
}

// describeIP reads the family's method and flags from the applied profile as nmstate
// names them: ipv4 auto is dhcp; ipv6 auto is autoconf with DHCP, dhcp is DHCP alone.
func describeIP(ip *state.IPConfig, a settings, family string) {
	method := a.str(family, "method")
	if method == "" {
		return // a port: no IP configuration of its own
	}
	yes, no := true, false
	enabled := method != "disabled" && method != "ignore"
	ip.Enabled = &enabled
	if !enabled {
		return
	}
	switch v, _ := a[family]["forwarding"].Value().(int32); {
	case a[family]["forwarding"].Value() == nil:
	case v == forwardingYes, v == forwardingNo:
		on := v == forwardingYes
		ip.Forwarding = &on
	}
	dhcp := method == "auto" || method == "dhcp"
	autoconf := family == "ipv6" && method == "auto"
	ip.DHCP = &dhcp
	if family == "ipv6" {
		ip.Autoconf = &autoconf
	}
	if dhcp || autoconf {
		flag := func(key string) *bool {
			if v, _ := a[family][key].Value().(bool); v {
				return &no
			}
			return &yes
		}
		ip.AutoDNS, ip.AutoGateway, ip.AutoRoutes = flag("ignore-auto-dns"), flag("never-default"), flag("ignore-auto-routes")
		if m, ok := a[family]["route-metric"].Value().(int64); ok && m >= 0 { // -1: NetworkManager's default
			metric := int(m)
			ip.AutoRouteMetric = &metric
		}
		if t, ok := a[family]["route-table"].Value().(uint32); ok && t != 0 { // 0: main
			table := int(t)
			ip.AutoRouteTableID = &table
		}
	}
}

// staticDNS collects the DNS servers and search domains the applied profiles set.
type staticDNS struct {
	servers, search map[string]bool
	options         []string // in the order the profiles give them
}

func (d *staticDNS) add(a settings, family string) {
	if d.servers == nil {
		d.servers, d.search = map[string]bool{}, map[string]bool{}
	}
	for _, srv := range dnsServers(a, family) {
		d.servers[srv] = true
	}
	search, _ := a[family]["dns-search"].Value().([]string)
	for _, dom := range search {
		d.search[dom] = true
	}
	opts, _ := a[family]["dns-options"].Value().([]string)
	d.options = appendNew(d.options, opts...)
}

// inOrder lists the static servers and domains in the order NetworkManager uses them
// (resolv.conf's), which the DNS manager's configuration gives; none is an empty config.
func (d staticDNS) inOrder(running *state.DNSConfig) *state.DNSConfig {
	out := &state.DNSConfig{}
	if running == nil {
		return out
	}
	for _, srv := range running.Server {
		if d.servers[srv] {
			out.Server = append(out.Server, srv)
		}
	}
	for _, dom := range running.Search {
		if d.search[dom] {
			out.Search = append(out.Search, dom)
		}
	}
	out.Options = d.options
	return out
}

// dnsServers reads ipv4.dns (addresses as uint32 in network byte order) or ipv6.dns
// (16-byte arrays).
func dnsServers(a settings, family string) []string {
	var out []string
	switch v := a[family]["dns"].Value().(type) {
	case []uint32:
		for _, n := range v {
			out = append(out, netip.AddrFrom4([4]byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24)}).String())
		}
	case [][]byte:
		for _, b := range v {
			if addr, ok := netip.AddrFromSlice(b); ok {
				out = append(out, addr.String())
			}
		}
	}
	return out
}

// describe fills the type's section from the profile applied to the device.
func describe(it *state.Interface, applied settings, portsOf map[string][]string, all map[string]settings, sysfs map[string]map[string]string) {
	if k := kinds[it.Type]; k != nil && k.read != nil {
		k.read(it, readBack{applied: applied, ports: portsOf[it.Key()], portsOf: portsOf, all: all, sysfs: sysfs})
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
	// Attributes a profile's route-data holds; NetworkManager's RouteData of a running
	// route has none of them (Snapshot.KernelRoutes has).
	if src, ok := r["src"].Value().(string); ok {
		rt.Source = src
	}
	if typ, ok := r["type"].Value().(string); ok && typ != "unicast" {
		rt.RouteType = typ
	}
	if c, ok := r["cwnd"].Value().(uint32); ok {
		cwnd := int(c)
		rt.Cwnd = &cwnd
	}
	return rt
}

func routeSortKey(r state.Route) string {
	return fmt.Sprintf("%s %s %s %d", r.NextHopInterface, r.Destination, r.NextHopAddress, *r.TableID)
}

func runningDNS(objs objects) *state.DNSConfig {
	cfg := dictList(objs[nmdbus.DNSManagerPath][nmdbus.DNSIface]["Configuration"])
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

// readSysfs reads, for each real device of a kind that names kernel attributes, those
// attributes and its ports' (kind.sysfs, kind.portSysfs) under root (/sys/class/net);
// an attribute that cannot be read is left out.
func readSysfs(objs objects, devs []device, root string) map[string]map[string]string {
	out := map[string]map[string]string{}
	byPath := map[dbus.ObjectPath]device{}
	for _, d := range devs {
		byPath[d.path] = d
	}
	read := func(name string, attrs []string) {
		for _, attr := range attrs {
			b, err := os.ReadFile(filepath.Join(root, name, attr))
			if err != nil {
				continue
			}
			if out[name] == nil {
				out[name] = map[string]string{}
			}
			out[name][attr] = strings.TrimSpace(string(b))
		}
	}
	for _, d := range devs {
		k := kinds[d.typ]
		if k == nil || !d.real || k.sysfs == nil && k.portSysfs == nil {
			continue
		}
		read(d.name, k.sysfs)
		ports, _ := objs[d.path][nmdbus.DeviceIface]["Ports"].Value().([]dbus.ObjectPath)
		for _, p := range ports {
			read(byPath[p].name, k.portSysfs)
		}
	}
	return out
}
