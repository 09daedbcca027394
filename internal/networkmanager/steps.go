package networkmanager

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/internal/state"

	"github.com/nmoverlay/nmoverlay/api/field"
)

// host is what an apply starts from: NetworkManager's profiles and devices, read once
// before the checkpoint, and the current state, read when first needed.
type host struct {
	// scope is what of the node was read: the devices are those it covers.
	scope    scope
	profiles []profile
	byPath   map[dbus.ObjectPath]profile
	owned    map[string]profile // by key (state.Interface.Key)
	devs     map[string]device  // by key
	current  func() (state.State, error)
	// uuid, when set, is the UUID of a new profile for key; random otherwise.
	uuid func(key string) string
}

// newUUID is the UUID of a new profile for key.
func (h *host) newUUID(key string) string {
	if h.uuid != nil {
		return h.uuid(key)
	}
	return newUUID()
}

// readHost reads every profile, and the devices sc covers (h.scope says what it read).
func (c *Client) readHost(ctx context.Context, sc scope) (*host, error) {
	profiles, err := c.profiles(ctx)
	if err != nil {
		return nil, err
	}
	objs, sc, err := c.objectsIn(ctx, sc, nil, true)
	if err != nil {
		return nil, err
	}
	h := &host{scope: sc, profiles: profiles, byPath: map[dbus.ObjectPath]profile{}, owned: map[string]profile{}, devs: map[string]device{},
		current: sync.OnceValues(func() (state.State, error) { return c.Show(ctx) })}
	for _, p := range profiles {
		h.byPath[p.path] = p
		if p.settings.owned() {
			h.owned[p.settings.key()] = p
		}
	}
	devs := append(objs.devices(), objs.vpnDevices(func(p dbus.ObjectPath) settings { return h.byPath[p].settings })...)
	for _, d := range devs {
		h.devs[d.key] = d
	}
	return h, nil
}

// paths are the paths of the devices read, by name (a VPN has none).
func (h *host) paths() map[string]dbus.ObjectPath {
	out := make(map[string]dbus.ObjectPath, len(h.devs))
	for _, d := range h.devs {
		if !d.vpn {
			out[d.name] = d.path
		}
	}
	return out
}

// applySteps are what one apply does: owned profiles to delete, then interfaces to save and
// activate in dependency order, each with what its profile carries besides its own fields.
// Everything is by key (state.Interface.Key).
type applySteps struct {
	deletes    []string
	interfaces []state.Interface
	perIface   map[string]profileExtras
	// uuids are the profile UUIDs of the OVS bridges and ports, known before they are
	// saved: their ports name them as their controller (br-ex, a bridge, a port and an
	// interface at once, is no name to go by).
	uuids map[string]string
}

// steps spreads the desired state's ports, routes and DNS over the interfaces that carry
// them. Interfaces that only carry routes, route removals or DNS are added (state up, no
// fields of their own) and keep the rest of their current profile. Each port of an OVS
// bridge gets an OVS port profile, right after its bridge.
func (h *host) steps(desired state.State, ordered []state.Interface, prune bool) (*applySteps, error) {
	pl := &applySteps{perIface: map[string]profileExtras{}, uuids: map[string]string{}}
	in := map[string]bool{}
	var interfaces []state.Interface
	for _, it := range ordered {
		in[it.Key()] = true
		interfaces = append(interfaces, it)
		switch k := kinds[it.Type]; {
		case it.Type == state.OVSBridge:
			if it.State != state.Absent && it.Section != nil {
				ports := h.stepsOfOVSBridge(pl, it, ordered)
				for _, p := range ports {
					in[p.Key()] = true
				}
				interfaces = append(interfaces, ports...)
			}
		case k != nil && k.portType != "":
			for _, ref := range it.References() {
				if ref.Kind != state.RefPort {
					continue
				}
				p := pl.perIface[ref.Name]
				p.port = k.portOn(it, ref.Name)
				pl.perIface[ref.Name] = p
			}
		}
	}
	if err := h.portsNamingController(pl, ordered); err != nil {
		return nil, err
	}
	touch := func(name string) {
		if !in[name] {
			in[name] = true
			interfaces = append(interfaces, state.Interface{Name: name, State: state.Up})
		}
	}
	// Ports named only in a controller's list get a profile of their own too; an OVS
	// bridge's port of its own name is its internal interface.
	var ports []string
	for key, p := range pl.perIface {
		if p.port != nil && !in[key] {
			ports = append(ports, key)
		}
	}
	sort.Strings(ports)
	for _, key := range ports {
		if p := pl.perIface[key].port; p.kind == "ovs-port" && p.bridge == key {
			in[key] = true
			interfaces = append(interfaces, state.Interface{Name: key, Type: state.OVSInterface, State: state.Up})
			continue
		}
		touch(key)
	}
	if desired.Routes != nil {
		// Removals first: within one state, removing every route to a destination and
		// adding one is nmstate's way of replacing it.
		for _, absent := range []bool{true, false} {
			for _, r := range desired.Routes.Config {
				if (r.State == "absent") != absent {
					continue
				}
				r, err := h.inVRFTable(r, desired)
				if err != nil {
					return nil, err
				}
				for _, name := range h.routeCarriers(r, prune, in) {
					p := pl.perIface[name]
					p.routes = append(p.routes, r)
					pl.perIface[name] = p
					touch(name)
				}
			}
		}
	}
	if desired.RouteRules != nil {
		// Removals first, as for routes.
		for _, absent := range []bool{true, false} {
			for i, r := range desired.RouteRules.Config {
				if (r.State == "absent") != absent {
					continue
				}
				names, err := h.ruleCarriers(i, r, desired, prune)
				if err != nil {
					return nil, err
				}
				for _, name := range names {
					p := pl.perIface[name]
					p.rules = append(p.rules, r)
					pl.perIface[name] = p
					touch(name)
				}
			}
		}
	}
	if d := desired.DNSResolver; d != nil && d.Config != nil {
		if err := h.placeDNS(d, ordered, pl, prune, touch); err != nil {
			return nil, err
		}
	}
	pl.interfaces = interfaces
	pl.deletes = h.deletes(interfaces, prune)
	return pl, nil
}

// portsNamingController makes each interface that names its controller (controller:)
// and is in no port list a port of that controller: one in the desired state, or else
// one the node has, whose other ports stay as they are.
func (h *host) portsNamingController(pl *applySteps, ordered []state.Interface) error {
	for _, it := range ordered {
		if it.State == state.Absent || it.Controller == nil || *it.Controller == "" || pl.perIface[it.Key()].port != nil {
			continue
		}
		name := *it.Controller
		ctrl := state.Interface{Name: name}
		if i := slices.IndexFunc(ordered, func(o state.Interface) bool { return o.Name == name && o.Type != state.OVSPort }); i >= 0 {
			ctrl = ordered[i]
		}
		if d, ok := h.devs[name]; ok && ctrl.Type == "" {
			ctrl.Type = d.typ
		}
		k := kinds[ctrl.Type]
		switch {
		case ctrl.Type == "":
			return fmt.Errorf("%s.controller: %q is neither in the desired state nor on the node", it.Name, name)
		case ctrl.Type == state.OVSBridge || ctrl.Type == state.OVSInterface:
			return fmt.Errorf("%s.controller: %q is an Open vSwitch bridge or interface: name the port in the bridge's port list, which makes its OVS port", it.Name, name)
		case k == nil || k.portType == "":
			return fmt.Errorf("%s.controller: %q is of type %s, which has no ports", it.Name, name, ctrl.Type)
		}
		p := pl.perIface[it.Key()]
		p.port = k.portOn(ctrl, it.Name)
		pl.perIface[it.Key()] = p
	}
	return nil
}

// portOn makes port a port of ctrl, a controller of this kind, with ctrl's entry for it
// (none when the state gives ctrl without its section: a controller only on the node).
func (k *kind) portOn(ctrl state.Interface, port string) *portOf {
	p := &portOf{controller: ctrl.Name, kind: k.portType, keepsIP: k.portsKeepIP, write: k.writePort}
	if k.portEntry != nil && ctrl.Section != nil {
		p.entry = k.portEntry(ctrl, port)
	}
	return p
}

// stepsOfOVSBridge plans the OVS port profiles of an OVS bridge, which NetworkManager puts
// between a bridge and each of its interfaces, and makes each port's interface a port of
// its OVS port. It returns the OVS ports, to be saved right after the bridge.
func (h *host) stepsOfOVSBridge(pl *applySteps, br state.Interface, desired []state.Interface) []state.Interface {
	pl.uuids[br.Key()] = h.uuidOf(br.Key())
	var out []state.Interface
	for _, bp := range state.SectionOf[*state.BridgeConfig](br).Port {
		port := state.Interface{Name: bp.Name, Type: state.OVSPort, State: state.Up}
		pl.uuids[port.Key()] = h.uuidOf(port.Key())
		pl.perIface[port.Key()] = profileExtras{port: &portOf{controller: pl.uuids[br.Key()], kind: "ovs-bridge", bridge: br.Name}, ovsVLAN: bp.VLAN, ovsBond: bp.LinkAggregation}
		// A bond's port has its members as interfaces, any other port the interface of its
		// name.
		for _, name := range bp.Interfaces() {
			// An OVS interface has an IP configuration; an interface of the system does
			// not once it is a port.
			ovsInterface := name == br.Name || slices.ContainsFunc(desired, func(it state.Interface) bool { return it.Name == name && it.Type == state.OVSInterface })
			p := pl.perIface[name]
			p.port = &portOf{controller: pl.uuids[port.Key()], kind: "ovs-port", bridge: br.Name, ovsPort: bp.Name, keepsIP: ovsInterface}
			pl.perIface[name] = p
		}
		out = append(out, port)
	}
	return out
}

// uuidOf is the UUID of the owned profile of key, or a new one.
func (h *host) uuidOf(key string) string {
	if p, ok := h.owned[key]; ok {
		return p.settings.str("connection", "uuid")
	}
	return h.newUUID(key)
}

// routeCarriers are the interfaces whose profiles r changes: a route to add goes on its
// next-hop-interface; a route to remove leaves every profile (owned, or the persistent
// one the interface runs, which is shadowed, never edited) holding a route it selects.
func (h *host) routeCarriers(r state.Route, prune bool, desired map[string]bool) []string {
	if r.State != "absent" {
		switch {
		case r.NextHopInterface == "" && r.VRFName != "":
			return []string{r.VRFName} // a route in a VRF, with no next hop: on the VRF's profile
		case r.NextHopInterface == "":
			return []string{state.LoopbackName} // a blackhole, unreachable or prohibit route elsewhere: on lo's, as nmstate puts it
		}
		return []string{r.NextHopInterface}
	}
	out := h.holders(prune, func(s settings, name string) bool {
		return (r.NextHopInterface == "" || name == r.NextHopInterface) && slices.ContainsFunc(profileRoutes(s, name), r.Selects)
	})
	// An interface the state names gets the removal even when no profile holds the route
	// yet (it may be created in this apply): its profile is built without it either way.
	if r.NextHopInterface != "" && len(out) == 0 && desired[r.NextHopInterface] {
		out = append(out, r.NextHopInterface)
	}
	return out
}

// inVRFTable is r with its VRF's route table as its table-id, when it names a VRF (the
// desired state's, else the node's) and no table.
func (h *host) inVRFTable(r state.Route, desired state.State) (state.Route, error) {
	if r.VRFName == "" || r.TableID != nil {
		return r, nil
	}
	cur, err := h.current()
	if err != nil {
		return r, err
	}
	t, ok := state.VRFTables(desired, cur)[r.VRFName]
	if !ok {
		return r, fmt.Errorf("routes.config[%s].vrf-name: no VRF %s in the desired state or on the node", r, r.VRFName)
	}
	r.TableID = &t
	return r, nil
}

// holders are the interfaces, by name, whose profiles held says hold something to remove:
// the profile an interface's owned one is built on (the persistent one it shadows, never
// edited) and, without prune, the owned one itself. Interfaces NetworkManager only
// follows (external) are never the engine's.
func (h *host) holders(prune bool, held func(s settings, name string) bool) []string {
	names := map[string]bool{}
	for name, d := range h.devs {
		names[name] = !d.external
	}
	for name := range h.owned {
		names[name] = true
	}
	var out []string
	for name, ours := range names {
		if !ours {
			continue
		}
		base, _ := h.base(name, prune, false)
		p, owned := h.owned[name]
		if held(base, name) || owned && !prune && held(p.settings, name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func profileRoutes(s settings, name string) []state.Route {
	var out []state.Route
	for _, fam := range []string{"ipv4", "ipv6"} {
		for _, r := range dictList(s[fam]["route-data"]) {
			out = append(out, runningRoute(r, name))
		}
	}
	return out
}

// base is the profile an interface's owned profile is built on, and its uuid: what the
// desired state leaves out is kept from it (nmstate's partial states). With prune the
// desired state is the whole of what the engine wants, so an owned profile is rebuilt on
// the profile the interface ran before the engine took it, never on itself: what earlier
// desired states put on it and this one no longer names (a deleted policy's route or
// address) goes. Without prune, states add up as nmstate's do: the owned profile is the
// base, unless it was a port and no longer is (it has no IP settings of its own).
func (h *host) base(name string, prune, leavesController bool) (settings, string) {
	if p, ok := h.owned[name]; ok {
		if !prune && !leavesController {
			return p.settings, p.settings.userData(BaseKey)
		}
		if b, ok := h.baseOf(p); ok {
			return b.settings, b.settings.str("connection", "uuid")
		}
		return nil, ""
	}
	if d, ok := h.devs[name]; ok && d.profile != "" && d.profile != "/" {
		if p, ok := h.byPath[d.profile]; ok {
			return p.settings, p.settings.str("connection", "uuid")
		}
	}
	return nil, ""
}

// baseOf finds the profile an owned profile was built on: the one its BaseKey names, or,
// for a profile noted before BaseKey existed, a foreign profile bound to the same
// interface. ok is false when it was built on nothing (a new interface).
func (h *host) baseOf(owned profile) (profile, bool) {
	want, noted := owned.settings.userDataOK(BaseKey)
	key := owned.settings.key()
	for _, p := range h.profiles {
		if p.settings.owned() {
			continue
		}
		if noted && want != "" && p.settings.str("connection", "uuid") == want {
			return p, true
		}
		if !noted && p.settings.key() == key {
			return p, true
		}
	}
	return profile{}, false
}

// build makes the owned profile of it, as planned in pl.
func (h *host) build(it state.Interface, pl *applySteps, prune bool) (settings, error) {
	key := it.Key()
	p := pl.perIface[key]
	dev, hasDev := h.devs[key]
	typ := it.Type
	if typ == "" && hasDev {
		typ = dev.typ
	}
	if typ == "" {
		return nil, fmt.Errorf("%s: no type given and no such interface on the host", it.Name)
	}
	if k := kinds[typ]; k != nil && k.sectionless != "" && it.Section == nil {
		typ = k.sectionless
	}
	owned, isOwned := h.owned[key]
	leaves := isOwned && p.port == nil && owned.settings.str("connection", "master") != ""
	base, baseUUID := h.base(key, prune, leaves)
	uuid := pl.uuids[key]
	switch {
	case uuid != "":
	case isOwned:
		uuid = owned.settings.str("connection", "uuid")
	default:
		uuid = h.newUUID(key)
	}
	return buildProfile(it, typ, base, baseUUID, p, uuid)
}

// deletes are the owned profiles to delete, by key: those of interfaces the state
// removes, the ports they controlled, and the ports of those (an OVS bridge's ports and
// their interfaces), which would otherwise come back enslaved to nothing, and, with prune,
// those of interfaces it does not name.
func (h *host) deletes(interfaces []state.Interface, prune bool) []string {
	named := map[string]bool{}
	removed := map[string]bool{}
	for _, it := range interfaces {
		named[it.Key()] = true
		if it.State == state.Absent {
			removed[it.Key()] = true
			if it.Type == "" { // nmstate's absent without a type removes every interface of the name
				removed[state.Interface{Name: it.Name, Type: state.OVSBridge}.Key()] = true
			}
		}
	}
	byUUID := map[string]string{}
	for key, p := range h.owned {
		byUUID[p.settings.str("connection", "uuid")] = key
	}
	deleted := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for key, p := range h.owned {
			controller := p.settings.str("connection", "master")
			if k, ok := byUUID[controller]; ok {
				controller = k
			}
			if deleted[key] || !(removed[key] || prune && !named[key] || (removed[controller] || deleted[controller]) && !named[key]) {
				continue
			}
			deleted[key], changed = true, true
		}
	}
	out := make([]string, 0, len(deleted))
	for key := range deleted {
		out = append(out, key)
	}
	sort.Strings(out)
	return out
}

// placeDNS puts the DNS config on the interfaces that carry it, one per IP family (as
// nmstate 2 does), chosen in this order:
//  1. an interface of the DNS policy whose owned profile carries that family's DNS now,
//     if it still can (DNS does not move between applies);
//  2. an interface of the DNS policy with a static address, or DHCP with auto-dns off;
//  3. an interface of the DNS policy with the family on (DHCP or autoconf);
//  4. a current interface no policy names, the one with the family's default route
//     first, then by name, if its profile can carry it.
//
// Never an interface another policy names: DNS must not rewrite another policy's
// profile, nor go with it. Static DNS on other interfaces is cleared (the config is the
// node's whole static DNS). No carrier for a family that has servers: refused.
func (h *host) placeDNS(d *state.DNSResolver, ordered []state.Interface, pl *applySteps, prune bool, touch func(string)) error {
	cfg := d.Config
	var servers [2][]string // by family: 0 IPv4, 1 IPv6
	for _, srv := range cfg.Server {
		fam := 0
		if state.IsIPv6(srv) {
			fam = 1
		}
		servers[fam] = append(servers[fam], srv)
	}
	preferred := 0 // the family of the first server comes first, and carries the search domains
	if len(cfg.Server) > 0 && state.IsIPv6(cfg.Server[0]) {
		preferred = 1
	}
	scope := d.Interfaces
	if len(scope) == 0 {
		for _, it := range ordered {
			scope = append(scope, it.Name)
		}
	}
	byName := map[string]state.Interface{}
	for _, it := range ordered {
		byName[it.Name] = it
	}
	var carrier [2]string
	for fam := range 2 {
		if len(servers[fam]) == 0 && !(fam == preferred && len(cfg.Search) > 0) {
			continue
		}
		carrier[fam] = h.dnsCarrier(fam, scope, byName, pl, prune)
		if carrier[fam] != "" {
			continue
		}
		if len(servers[fam]) == 0 { // search domains alone go with the other family
			preferred = 1 - fam
			if carrier[preferred] = h.dnsCarrier(preferred, scope, byName, pl, prune); carrier[preferred] != "" {
				continue
			}
		}
		family := [2]string{"IPv4", "IPv6"}[fam]
		return &field.Error{Path: "dns-resolver.config", Reason: fmt.Sprintf(
			"no interface can carry the %s DNS configuration: give one of this policy's interfaces a static %s address, or DHCP with auto-dns: false, "+
				"or have a current interface no other policy names with %s on (nothing was changed)", family, family, family)}
	}
	// Every interface whose profile carries static DNS now gets it cleared, unless it
	// carries the new config.
	for name, d := range h.devs {
		if d.external || name == carrier[0] || name == carrier[1] || pl.perIface[name].l2Port() {
			continue
		}
		if base, _ := h.base(name, prune, false); hasDNS(base) {
			p := pl.perIface[name]
			p.dns = &dnsSettings{}
			pl.perIface[name] = p
			touch(name)
		}
	}
	for fam, name := range carrier {
		if name == "" {
			continue
		}
		p := pl.perIface[name]
		if p.dns == nil {
			p.dns = &dnsSettings{}
		}
		p.dns.servers[fam] = servers[fam]
		if fam == preferred {
			p.dns.search[fam] = cfg.Search
			p.dns.options[fam] = cfg.Options
			p.dns.preferred = fam
		}
		pl.perIface[name] = p
		touch(name)
	}
	return nil
}

// dnsCarrier picks the interface that carries one family's DNS (placeDNS says how).
func (h *host) dnsCarrier(fam int, scope []string, desired map[string]state.Interface, pl *applySteps, prune bool) string {
	family, v6 := ipFamilies[fam], fam == 1
	eligible := func(name string) bool { return !pl.perIface[name].l2Port() }
	// method says how the interface will run the family: from the desired state where it
	// says, else from the profile it is built on.
	method := func(name string) (m string, static, autoDNSOff bool) {
		if it, ok := desired[name]; ok {
			if it.State == state.Absent || it.State == state.Down {
				return "disabled", false, false
			}
			c := it.IPv4
			if v6 {
				c = it.IPv6
			}
			if c != nil {
				switch {
				case c.Enabled != nil && !*c.Enabled:
					return "disabled", false, false
				case c.DHCP != nil && *c.DHCP || c.Autoconf != nil && *c.Autoconf:
					return "auto", false, c.AutoDNS != nil && !*c.AutoDNS
				case len(c.Address) > 0:
					return "manual", true, false
				}
				return "disabled", false, false
			}
		}
		base, _ := h.base(name, prune, false)
		if base == nil || base.str("connection", "master") != "" {
			return "disabled", false, false
		}
		m = base.str(family, "method")
		static = m == "manual" && len(dictList(base[family]["address-data"])) > 0
		off, _ := base[family]["ignore-auto-dns"].Value().(bool)
		if m == "dhcp" {
			m = "auto"
		}
		return m, static, m == "auto" && off
	}
	valid := func(name string) bool {
		m, static, _ := method(name)
		return eligible(name) && (static || m == "auto")
	}
	for _, name := range scope {
		if p, ok := h.owned[name]; ok && dnsOf(p.settings, family) && valid(name) {
			return name
		}
	}
	for _, name := range scope {
		if _, static, off := method(name); eligible(name) && (static || off) {
			return name
		}
	}
	for _, name := range scope {
		if valid(name) {
			return name
		}
	}
	// Current interfaces no policy names; never lo, whose profile a policy's routes may
	// have made, nor a VPN: DNS goes with the node's links.
	var candidates []string
	for name, d := range h.devs {
		if _, named := desired[name]; !named && !d.external && !d.vpn && d.state == deviceStateActivated && d.typ != "" && d.typ != state.Loopback && valid(name) {
			candidates = append(candidates, name)
		}
	}
	sort.Strings(candidates)
	if cur, err := h.current(); err == nil && cur.Routes != nil {
		for _, r := range cur.Routes.Running {
			if r.IsDefault() && (r.Family() == 6) == v6 && slices.Contains(candidates, r.NextHopInterface) {
				return r.NextHopInterface
			}
		}
	}
	if len(candidates) > 0 {
		return candidates[0]
	}
	return ""
}

func hasDNS(s settings) bool { return dnsOf(s, "ipv4") || dnsOf(s, "ipv6") }

func dnsOf(s settings, family string) bool {
	search, _ := s[family]["dns-search"].Value().([]string)
	return len(dnsServers(s, family)) > 0 || len(search) > 0
}

// copyMACs resolves copy-mac-from into mac-address: the named interface's permanent MAC
// address (a port's current one may be its bond's), else its current one, as read now.
// The desired state is otherwise unchanged, so verifying it checks the copied address.
// resolveIdentifiers names each interface identified by MAC address after its device
// or PCI address (state.ResolveIdentifiers), among the node's real Ethernet and
// InfiniBand devices.
// An InfiniBand interface on a node without InfiniBand is refused first, saying so.
func (h *host) resolveIdentifiers(desired state.State) (state.State, error) {
	if err := h.checkInfiniBand(desired); err != nil {
		return desired, err
	}
	var devs []state.DeviceIdentity
	for _, d := range h.devs {
		if d.real && (d.typ == state.Ethernet || d.typ == state.Veth || d.typ == state.InfiniBand) {
			devs = append(devs, state.DeviceIdentity{Name: d.name, MAC: d.mac, PermanentMAC: d.permMAC, PCIAddress: d.pci})
		}
	}
	out, errs := state.ResolveIdentifiers(desired, devs)
	if errs != nil {
		return desired, errs
	}
	return out, nil
}

// checkInfiniBand refuses InfiniBand interfaces where the node has no InfiniBand device,
// or not the one (a partition's base) they name.
func (h *host) checkInfiniBand(desired state.State) error {
	var errs field.Errors
	have := map[string]bool{}
	for _, d := range h.devs {
		if d.real && d.typ == state.InfiniBand {
			have[d.name] = true
		}
	}
	for _, it := range desired.Interfaces {
		if it.Type != state.InfiniBand || it.State == state.Absent {
			continue
		}
		path := fmt.Sprintf("interfaces[name=%s]", it.Name)
		base, baseField := it.BaseIface() // a partition's adapter port
		switch {
		case len(have) == 0:
			errs = append(errs, &field.Error{Path: path, Reason: "no InfiniBand device here"})
		case base != "" && !have[base]:
			errs = append(errs, &field.Error{Path: path + "." + baseField, Reason: fmt.Sprintf("no InfiniBand device %q here", base)})
		case base == "" && it.Identifier != state.IdentifyByMAC && !have[it.Name]:
			errs = append(errs, &field.Error{Path: path, Reason: fmt.Sprintf("no InfiniBand device %q here", it.Name)})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func (h *host) copyMACs(desired state.State) (state.State, error) {
	var errs field.Errors
	out := desired
	out.Interfaces = slices.Clone(desired.Interfaces)
	for i, it := range out.Interfaces {
		if it.CopyMACFrom == nil || it.State == state.Absent {
			continue
		}
		d, ok := h.devs[*it.CopyMACFrom]
		mac := d.permMAC
		if mac == "" || mac == "00:00:00:00:00:00" {
			mac = d.mac
		}
		if !ok || !d.real || mac == "" {
			errs = append(errs, &field.Error{Path: fmt.Sprintf("interfaces[name=%s].copy-mac-from", it.Name),
				Reason: fmt.Sprintf("no interface %q with a MAC address on this node", *it.CopyMACFrom)})
			continue
		}
		out.Interfaces[i].MACAddress = &mac
	}
	if len(errs) > 0 {
		return desired, errs
	}
	return out, nil
}
