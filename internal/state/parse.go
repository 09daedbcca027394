package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/api/field"
)

// Parse reads a desiredState (YAML or JSON) and validates it. The error, if any, is an
// field.Errors listing every problem with its field path; unknown and unsupported keys are
// errors, never dropped.
func Parse(doc []byte) (State, error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		return State{}, nil
	}
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return State{}, field.Errors{{Path: "desiredState", Reason: "not valid YAML: " + err.Error()}}
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return State{}, field.Errors{{Path: "desiredState", Reason: "not valid YAML: " + err.Error()}}
	}
	d := &decoder{}
	s := d.state(tree)
	if len(d.errs) == 0 {
		d.errs = append(d.errs, Validate(s)...)
	}
	if len(d.errs) > 0 {
		return State{}, d.errs
	}
	return s, nil
}

type decoder struct{ errs field.Errors }

func (d *decoder) fail(path, format string, args ...any) {
	d.errs = append(d.errs, &field.Error{Path: path, Reason: fmt.Sprintf(format, args...)})
}

// object checks v is a mapping with only the allowed keys; unsupported keys get their own reason.
func (d *decoder) object(path string, v any, allowed []string, unsupported map[string]string) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		d.fail(path, "must be a mapping, got %s", describe(v))
		return nil, false
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if slices.Contains(allowed, k) {
			continue
		}
		if why, ok := unsupported[k]; ok {
			d.fail(join(path, k), "not supported by nmoverlay: %s", why)
			continue
		}
		d.fail(join(path, k), "unknown field (known here: %s)", strings.Join(allowed, ", "))
	}
	return m, true
}

func (d *decoder) list(path string, v any) []any {
	l, ok := v.([]any)
	if !ok {
		d.fail(path, "must be a list, got %s", describe(v))
	}
	return l
}

func (d *decoder) str(path string, v any) string {
	s, ok := v.(string)
	if !ok {
		d.fail(path, "must be a string, got %s", describe(v))
	}
	return s
}

func (d *decoder) boolean(path string, v any) *bool {
	b, ok := v.(bool)
	if !ok {
		d.fail(path, "must be true or false, got %s", describe(v))
		return nil
	}
	return &b
}

// integer reads an integer in [min, max].
func (d *decoder) integer(path string, v any, min, max int64) *int {
	n, ok := v.(json.Number)
	if !ok {
		d.fail(path, "must be an integer, got %s", describe(v))
		return nil
	}
	i, err := n.Int64()
	if err != nil {
		d.fail(path, "must be an integer, got %s", n)
		return nil
	}
	if i < min || i > max {
		d.fail(path, "%d is out of range %d..%d", i, min, max)
		return nil
	}
	r := int(i)
	return &r
}

// scalar reads a string, number or boolean as text (bond options are written all three ways).
func (d *decoder) scalar(path string, v any) string {
	switch t := v.(type) {
	case string:
		return t
	case json.Number:
		return t.String()
	case bool:
		return fmt.Sprint(t)
	}
	d.fail(path, "must be a string, number or boolean, got %s", describe(v))
	return ""
}

// requiredInt reads m[key] as an integer in [min, max], failing when it is missing.
func (d *decoder) requiredInt(path string, m map[string]any, key string, min, max int64) int {
	v, ok := m[key]
	if !ok {
		d.fail(join(path, key), "required")
		return 0
	}
	if n := d.integer(join(path, key), v, min, max); n != nil {
		return *n
	}
	return 0
}

// requiredStr reads m[key] as a string, failing when it is missing.
func (d *decoder) requiredStr(path string, m map[string]any, key string) string {
	v, ok := m[key]
	if !ok {
		d.fail(join(path, key), "required")
		return ""
	}
	return d.str(join(path, key), v)
}

func (d *decoder) strings(path string, v any) []string {
	var out []string
	for i, e := range d.list(path, v) {
		out = append(out, d.str(index(path, i), e))
	}
	return out
}

// hostnameRefused says why each hostname field is refused. The running (transient)
// hostname is the kernel's: setting it takes CAP_SYS_ADMIN, which the handler does not
// hold (it changes the node through NetworkManager, with NET_RAW alone), and
// systemd-hostnamed, which could set it for the handler, keeps a static hostname over
// any transient one and needs polkit to authorize a caller without that capability.
var hostnameRefused = map[string]string{
	"config":  "the static hostname is /etc/hostname, which outlives a boot and is the MachineConfig's: nmoverlay changes nothing persistent",
	"running": "setting the hostname takes CAP_SYS_ADMIN, which the handler does not hold (it changes the node through NetworkManager, with NET_RAW alone)",
}

// unsupportedRouteKeys are route fields nmstate has and nmoverlay does not apply, and why.
var unsupportedRouteKeys = map[string]string{
	"weight":     "ECMP weights are not applied yet",
	"route-type": "blackhole, unreachable and prohibit routes are not applied yet: such a route has no next-hop interface, and nmoverlay places and verifies routes on theirs",
	"vrf-name":   "nmstate's routes have no vrf-name (it refuses the field too): a route goes into a VRF by its table-id, the VRF's route-table-id",
	"cwnd":       "not applied yet", "source": "not applied yet", "initcwnd": "not applied yet", "initrwnd": "not applied yet",
	"mtu": "not applied yet", "quickack": "not applied yet", "advmss": "not applied yet",
}

var unsupportedTop = map[string]string{
	"ovs-db":   "global Open vSwitch database settings are not applied yet",
	"dispatch": "dispatch scripts are not supported",
	// A policy written for seed 000's netplan backend.
	"network": "this is netplan's schema (network: {version: 2, ...}); this node's backend is networkmanager, which takes nmstate's (interfaces, routes, ...): spec.backend: netplan in the NMState CR selects the netplan backend",
}

func (d *decoder) state(v any) State {
	var s State
	if v == nil {
		return s
	}
	m, ok := d.object("desiredState", v, []string{"interfaces", "routes", "route-rules", "dns-resolver", "ovn", "hostname"}, unsupportedTop)
	if !ok {
		return s
	}
	if v, ok := m["hostname"]; ok {
		d.object("hostname", v, nil, hostnameRefused)
	}
	if v, ok := m["interfaces"]; ok {
		for i, e := range d.list("interfaces", v) {
			s.Interfaces = append(s.Interfaces, d.iface(index("interfaces", i), e))
		}
	}
	if v, ok := m["routes"]; ok {
		s.Routes = d.routes(v)
	}
	if v, ok := m["dns-resolver"]; ok {
		s.DNSResolver = d.dns(v)
	}
	if v, ok := m["ovn"]; ok {
		s.OVN = d.ovn(v)
	}
	if v, ok := m["route-rules"]; ok {
		s.RouteRules = d.routeRules(v)
	}
	return s
}

func (d *decoder) routeRules(v any) *RouteRules {
	m, ok := d.object("route-rules", v, []string{"config"}, map[string]string{"running": "route-rules.running is current state; desired rules go in route-rules.config"})
	if !ok {
		return nil
	}
	rr := &RouteRules{}
	if v, ok := m["config"]; ok {
		for i, e := range d.list("route-rules.config", v) {
			p := index("route-rules.config", i)
			em, ok := d.object(p, e, []string{"family", "ip-from", "ip-to", "priority", "route-table", "fwmark", "fwmask", "iif", "action",
				"suppress-prefix-length", "suppress_prefixlength", "state"}, nil)
			if !ok {
				continue
			}
			var r RouteRule
			for _, f := range []struct {
				key string
				dst *string
			}{{"family", &r.Family}, {"ip-from", &r.IPFrom}, {"ip-to", &r.IPTo}, {"iif", &r.IIF}, {"action", &r.Action}, {"state", &r.State}} {
				if v, ok := em[f.key]; ok {
					*f.dst = d.str(join(p, f.key), v)
				}
			}
			for _, f := range []struct {
				key      string
				dst      **int
				min, max int64
			}{{"priority", &r.Priority, 0, math.MaxUint32}, {"route-table", &r.RouteTable, 0, math.MaxUint32},
				{"suppress-prefix-length", &r.SuppressPrefixLength, 0, 128}, {"suppress_prefixlength", &r.SuppressPrefixLength, 0, 128}} {
				if v, ok := em[f.key]; ok {
					*f.dst = d.integer(join(p, f.key), v, f.min, f.max)
				}
			}
			for _, f := range []struct {
				key string
				dst **int
			}{{"fwmark", &r.FWMark}, {"fwmask", &r.FWMask}} {
				if v, ok := em[f.key]; ok {
					*f.dst = d.uint32OrHex(join(p, f.key), v)
				}
			}
			rr.Config = append(rr.Config, r)
		}
	}
	return rr
}

// uint32OrHex reads a 32-bit unsigned integer written as a number or a string, decimal or
// 0x-prefixed hex (firewall marks are written both ways).
func (d *decoder) uint32OrHex(path string, v any) *int {
	if s, ok := v.(string); ok {
		n, err := strconv.ParseUint(s, 0, 32)
		if err != nil {
			d.fail(path, "%q is not a 32-bit unsigned integer (decimal or 0x hex)", s)
			return nil
		}
		i := int(n)
		return &i
	}
	return d.integer(path, v, 0, math.MaxUint32)
}

func (d *decoder) ovn(v any) *OVN {
	m, ok := d.object("ovn", v, []string{"bridge-mappings"}, nil)
	if !ok {
		return nil
	}
	o := &OVN{}
	if v, ok := m["bridge-mappings"]; ok {
		for i, e := range d.list("ovn.bridge-mappings", v) {
			p := index("ovn.bridge-mappings", i)
			em, ok := d.object(p, e, []string{"localnet", "bridge", "state"}, nil)
			if !ok {
				continue
			}
			bm := BridgeMapping{Localnet: d.requiredStr(p, em, "localnet")}
			if v, ok := em["bridge"]; ok {
				bm.Bridge = d.str(join(p, "bridge"), v)
			}
			if v, ok := em["state"]; ok {
				bm.State = d.str(join(p, "state"), v)
				if bm.State != "present" && bm.State != "absent" {
					d.fail(join(p, "state"), "%q is not present or absent", bm.State)
				}
			}
			o.BridgeMappings = append(o.BridgeMappings, bm)
		}
	}
	return o
}

var ifaceKeys = []string{"name", "type", "state", "profile-name", "identifier", "description", "mtu", "mac-address", "copy-mac-from", "ipv4", "ipv6", "lldp", "ethernet", "ethtool",
	"link-aggregation", "vlan", "bridge", "vrf", "mac-vlan", "vxlan", "veth", "patch", "infiniband"}

var unsupportedIface = map[string]string{
	"ovs-db":                   "Open vSwitch external_ids and other_config are not applied yet",
	"dpdk":                     "DPDK interfaces are not supported",
	"802.1x":                   "802.1X is not supported",
	"dispatch":                 "dispatch scripts are not supported",
	"accept-all-mac-addresses": "not applied yet",
	"controller":               "name the port in its controller's port list instead",
	"min-mtu":                  "current state only",
	"max-mtu":                  "current state only",
	"permanent-mac-address":    "current state only",
	"wait-ip":                  "not applied yet",
	"ipvlan":                   "ipvlan is not supported",
	"team":                     "team is not supported",
	"bridge-vlan":              "not applied yet",
	// Measured: no alternative-name setting in NetworkManager 1.42's (nm-settings-dbus(5)).
	"alt-names":   "NetworkManager 1.42 has no setting for alternative interface names to apply them with",
	"pci-address": "matching interfaces by PCI address is not applied yet",
}

func (d *decoder) iface(path string, v any) Interface {
	var it Interface
	m, ok := d.object(path, v, ifaceKeys, unsupportedIface)
	if !ok {
		return it
	}
	d.ifaceIdentity(path, m, &it)
	if v, ok := m["description"]; ok {
		s := d.str(join(path, "description"), v)
		it.Description = &s
	}
	if v, ok := m["identifier"]; ok {
		switch id := d.str(join(path, "identifier"), v); id {
		case IdentifyByName:
		case IdentifyByMAC:
			it.Identifier = id
			if _, ok := m["mac-address"]; !ok {
				d.fail(join(path, "mac-address"), "required with identifier: mac-address (the device's MAC address)")
			}
		case "pci-address":
			d.fail(join(path, "identifier"), "not supported by nmoverlay: matching interfaces by PCI address is not applied yet")
		default:
			d.fail(join(path, "identifier"), "%q is not one of name, mac-address", id)
		}
	}
	if v, ok := m["profile-name"]; ok {
		s := d.str(join(path, "profile-name"), v)
		it.ProfileName = &s
	}
	if v, ok := m["mtu"]; ok {
		it.MTU = d.integer(join(path, "mtu"), v, 68, 65535)
	}
	if v, ok := m["mac-address"]; ok {
		s := d.str(join(path, "mac-address"), v)
		it.MACAddress = &s
	}
	if v, ok := m["copy-mac-from"]; ok {
		s := d.str(join(path, "copy-mac-from"), v)
		it.CopyMACFrom = &s
	}
	if v, ok := m["ipv4"]; ok {
		it.IPv4 = d.ip(join(path, "ipv4"), v, false)
	}
	if v, ok := m["ipv6"]; ok {
		it.IPv6 = d.ip(join(path, "ipv6"), v, true)
	}
	if v, ok := m["lldp"]; ok {
		it.LLDP = d.lldp(join(path, "lldp"), v)
	}
	if v, ok := m["ethernet"]; ok {
		it.Ethernet = d.ethernet(join(path, "ethernet"), v)
	}
	if v, ok := m["ethtool"]; ok {
		it.Ethtool = d.ethtool(join(path, "ethtool"), v)
	}
	d.ifaceSections(path, m, &it)
	it.Type = it.inferType()
	return it
}

// ifaceIdentity reads what an interface is: its name, its type and its state.
func (d *decoder) ifaceIdentity(path string, m map[string]any, it *Interface) {
	if v, ok := m["name"]; ok {
		it.Name = d.str(join(path, "name"), v)
	} else {
		d.fail(join(path, "name"), "required")
	}
	if v, ok := m["type"]; ok {
		t := d.str(join(path, "type"), v)
		switch {
		case slices.Contains(SupportedTypes, InterfaceType(t)):
			it.Type = InterfaceType(t)
		case unsupportedTypeReasons[t] != "":
			d.fail(join(path, "type"), "%q is not supported by nmoverlay: %s", t, unsupportedTypeReasons[t])
		case slices.Contains(knownUnsupportedTypes, t):
			d.fail(join(path, "type"), "%q is not supported by nmoverlay (supported: %s)", t, typeList())
		case t != "":
			d.fail(join(path, "type"), "unknown interface type %q (supported: %s)", t, typeList())
		}
	}
	if v, ok := m["state"]; ok {
		st := d.str(join(path, "state"), v)
		switch InterfaceState(st) {
		case Up, Down, Absent:
			it.State = InterfaceState(st)
		default:
			d.fail(join(path, "state"), "%q is not one of up, down, absent", st)
		}
	}
}

// ifaceSections reads an interface's type-specific sections (link-aggregation, vlan,
// bridge, vrf, mac-vlan, vxlan, veth).
func (d *decoder) ifaceSections(path string, m map[string]any, it *Interface) {
	if v, ok := m["link-aggregation"]; ok {
		it.LinkAggregation = d.bond(join(path, "link-aggregation"), v)
	}
	if v, ok := m["vlan"]; ok {
		it.VLAN = d.vlan(join(path, "vlan"), v)
	}
	if v, ok := m["bridge"]; ok {
		it.Bridge = d.bridge(join(path, "bridge"), v, it.Type == OVSBridge)
	}
	if v, ok := m["vrf"]; ok {
		it.VRF = d.vrf(join(path, "vrf"), v)
	}
	if v, ok := m["mac-vlan"]; ok {
		it.MACVLAN = d.macvlan(join(path, "mac-vlan"), v)
	}
	if v, ok := m["vxlan"]; ok {
		it.VXLAN = d.vxlan(join(path, "vxlan"), v)
	}
	if v, ok := m["veth"]; ok {
		it.Veth = d.veth(join(path, "veth"), v)
	}
	if v, ok := m["infiniband"]; ok {
		it.InfiniBand = d.infiniband(join(path, "infiniband"), v)
	}
	if v, ok := m["patch"]; ok {
		if pm, ok := d.object(join(path, "patch"), v, []string{"peer"}, nil); ok {
			it.Patch = &OVSPatch{Peer: d.requiredStr(join(path, "patch"), pm, "peer")}
		}
	}
}

func (d *decoder) lldp(path string, v any) *LLDP {
	// neighbors: what a node reports; nmstate ignores it in a desired state (a state copied
	// from a NodeNetworkState, or captured whole).
	lm, ok := d.object(path, v, []string{"enabled", "neighbors"}, nil)
	if !ok {
		return nil
	}
	l := &LLDP{}
	if v, ok := lm["enabled"]; ok {
		l.Enabled = d.boolean(join(path, "enabled"), v)
	}
	return l
}

func (d *decoder) veth(path string, v any) *VethConfig {
	vm, ok := d.object(path, v, []string{"peer"}, nil)
	if !ok {
		return nil
	}
	c := &VethConfig{}
	if p, ok := vm["peer"]; ok {
		c.Peer = d.str(join(path, "peer"), p)
	} else {
		d.fail(join(path, "peer"), "required")
	}
	return c
}

func (d *decoder) ip(path string, v any, v6 bool) *IPConfig {
	keys := []string{"enabled", "dhcp", "address", "auto-dns", "auto-gateway", "auto-routes", "auto-route-metric", "auto-route-table-id"}
	unsupported := map[string]string{
		"dhcp-client-id": "not applied yet", "dhcp-duid": "not applied yet", "dhcp-send-hostname": "not applied yet",
		"dhcp-custom-hostname": "not applied yet", "addr-gen-mode": "not applied yet", "token": "not applied yet",
		"allow-extra-address": "not applied yet", "dhcp-timeout": "not applied yet", "autoconf-timeout": "not applied yet",
		"map-to-ipv4": "not applied yet",
		// Measured: NetworkManager 1.42's settings (nm-settings-dbus(5)) have no per-interface
		// forwarding; the sysctl set behind its back would outlive the policy.
		"forwarding": "NetworkManager 1.42 has no per-interface forwarding setting to apply it with",
	}
	if v6 {
		keys = append(keys, "autoconf")
	} else {
		unsupported["autoconf"] = "autoconf is IPv6 router advertisement; it has no meaning under ipv4"
	}
	m, ok := d.object(path, v, keys, unsupported)
	if !ok {
		return nil
	}
	c := &IPConfig{}
	for _, f := range []struct {
		key string
		dst **bool
	}{{"enabled", &c.Enabled}, {"dhcp", &c.DHCP}, {"autoconf", &c.Autoconf},
		{"auto-dns", &c.AutoDNS}, {"auto-gateway", &c.AutoGateway}, {"auto-routes", &c.AutoRoutes}} {
		if v, ok := m[f.key]; ok {
			*f.dst = d.boolean(join(path, f.key), v)
		}
	}
	if v, ok := m["auto-route-metric"]; ok {
		c.AutoRouteMetric = d.integer(join(path, "auto-route-metric"), v, 0, math.MaxUint32)
	}
	if v, ok := m["auto-route-table-id"]; ok {
		c.AutoRouteTableID = d.integer(join(path, "auto-route-table-id"), v, 0, math.MaxUint32)
	}
	if v, ok := m["address"]; ok {
		maxPrefix := int64(32)
		if v6 {
			maxPrefix = 128
		}
		for i, e := range d.list(join(path, "address"), v) {
			p := index(join(path, "address"), i)
			am, ok := d.object(p, e, []string{"ip", "prefix-length"}, map[string]string{"valid-life-time": "current state only", "preferred-life-time": "current state only"})
			if !ok {
				continue
			}
			a := Address{}
			if v, ok := am["ip"]; ok {
				a.IP = d.str(join(p, "ip"), v)
			} else {
				d.fail(join(p, "ip"), "required")
			}
			if v, ok := am["prefix-length"]; ok {
				if n := d.integer(join(p, "prefix-length"), v, 0, maxPrefix); n != nil {
					a.PrefixLength = *n
				}
			} else {
				d.fail(join(p, "prefix-length"), "required")
			}
			c.Address = append(c.Address, a)
		}
	}
	return c
}

func (d *decoder) bond(path string, v any) *BondConfig {
	m, ok := d.object(path, v, []string{"mode", "options", "port", "ports"}, map[string]string{"ports-config": "not applied yet"})
	if !ok {
		return nil
	}
	b := &BondConfig{Port: []string{}}
	if v, ok := m["mode"]; ok {
		b.Mode = BondMode(d.str(join(path, "mode"), v))
	} else {
		d.fail(join(path, "mode"), "required")
	}
	if v, ok := m["options"]; ok {
		if om, ok := v.(map[string]any); ok {
			b.Options = map[string]string{}
			keys := make([]string, 0, len(om))
			for k := range om {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				b.Options[k] = d.scalar(join(path, "options."+k), om[k])
			}
		} else {
			d.fail(join(path, "options"), "must be a mapping, got %s", describe(v))
		}
	}
	b.Port = d.ports(path, m)
	return b
}

// portList returns the port list under port (nmstate's name) or ports (its alias), and the
// key it was under; giving both is an error.
func (d *decoder) portList(path string, m map[string]any) (string, any, bool) {
	v, ok := m["port"]
	if alias, has := m["ports"]; has {
		if ok {
			d.fail(join(path, "ports"), "give port or ports, not both")
		}
		return "ports", alias, true
	}
	return "port", v, ok
}

// ports reads a list of port names (bond, vrf).
func (d *decoder) ports(path string, m map[string]any) []string {
	out := []string{}
	if key, v, ok := d.portList(path, m); ok {
		out = append(out, d.strings(join(path, key), v)...)
	}
	return out
}

func (d *decoder) vlan(path string, v any) *VLANConfig {
	m, ok := d.object(path, v, []string{"id", "base-iface"}, map[string]string{"protocol": "802.1ad is not applied yet", "reorder-headers": "not applied yet", "loose-binding": "not applied yet", "registration-protocol": "not applied yet"})
	if !ok {
		return nil
	}
	return &VLANConfig{ID: d.requiredInt(path, m, "id", 1, 4094), BaseIface: d.requiredStr(path, m, "base-iface")}
}

// bridge reads a bridge section: a Linux bridge's, or an OVS bridge's (ovs), whose
// options and ports differ.
func (d *decoder) bridge(path string, v any, ovs bool) *BridgeConfig {
	keys := []string{"options", "port", "ports"}
	if ovs {
		keys = append(keys, "allow-extra-patch-ports")
	}
	m, ok := d.object(path, v, keys, nil)
	if !ok {
		return nil
	}
	b := &BridgeConfig{Port: []BridgePort{}}
	if v, ok := m["allow-extra-patch-ports"]; ok {
		b.AllowExtraPatchPorts = d.boolean(join(path, "allow-extra-patch-ports"), v)
	}
	if v, ok := m["options"]; ok {
		b.Options = d.bridgeOptions(join(path, "options"), v, ovs)
	}
	if key, pv, ok := d.portList(path, m); ok {
		for i, e := range d.list(join(path, key), pv) {
			b.Port = append(b.Port, d.bridgePort(index(join(path, key), i), e, ovs))
		}
	}
	return b
}

func (d *decoder) bridgeOptions(path string, v any, ovs bool) *BridgeOptions {
	keys := []string{"stp"}
	unsupported := map[string]string{
		"group-forward-mask": "not applied yet", "mac-ageing-time": "not applied yet", "multicast-snooping": "not applied yet",
		"vlan-protocol": "not applied yet", "hash-max": "not applied yet", "group-addr": "not applied yet"}
	if ovs {
		keys = append(keys, "rstp", "mcast-snooping-enable", "fail-mode", "datapath")
		unsupported = nil
	}
	om, ok := d.object(path, v, keys, unsupported)
	if !ok {
		return nil
	}
	o := &BridgeOptions{}
	if v, ok := om["stp"]; ok {
		sp := join(path, "stp")
		if b, isBool := v.(bool); isBool && ovs {
			o.STP = &STP{Enabled: &b} // an OVS bridge's stp may be a boolean (nmstate 1's form)
		} else if sm, ok := d.object(sp, v, []string{"enabled"}, map[string]string{"forward-delay": "not applied yet", "hello-time": "not applied yet", "max-age": "not applied yet", "priority": "not applied yet"}); ok {
			o.STP = &STP{}
			if v, ok := sm["enabled"]; ok {
				o.STP.Enabled = d.boolean(join(sp, "enabled"), v)
			}
		}
	}
	for _, f := range []struct {
		key string
		dst **bool
	}{{"rstp", &o.RSTP}, {"mcast-snooping-enable", &o.MCastSnoopingEnable}} {
		if v, ok := om[f.key]; ok {
			*f.dst = d.boolean(join(path, f.key), v)
		}
	}
	for _, f := range []struct {
		key   string
		dst   **string
		known []string
	}{{"fail-mode", &o.FailMode, OVSFailModes}, {"datapath", &o.Datapath, OVSDatapaths}} {
		if v, ok := om[f.key]; ok {
			s := d.str(join(path, f.key), v)
			if !slices.Contains(f.known, s) {
				d.fail(join(path, f.key), "%q is not one of %s", s, strings.Join(f.known, ", "))
			}
			*f.dst = &s
		}
	}
	return o
}

func (d *decoder) bridgePort(path string, v any, ovs bool) BridgePort {
	var p BridgePort
	unsupported := map[string]string{"stp-hairpin-mode": "not applied yet", "stp-path-cost": "not applied yet", "stp-priority": "not applied yet"}
	known := []string{"name", "vlan"}
	if ovs {
		unsupported, known = nil, append(known, "link-aggregation")
	}
	m, ok := d.object(path, v, known, unsupported)
	if !ok {
		return p
	}
	if v, ok := m["name"]; ok {
		p.Name = d.str(join(path, "name"), v)
	} else {
		d.fail(join(path, "name"), "required")
	}
	if v, ok := m["link-aggregation"]; ok {
		p.LinkAggregation = d.ovsBond(join(path, "link-aggregation"), v)
	}
	if v, ok := m["vlan"]; ok {
		vp := join(path, "vlan")
		vm, ok := d.object(vp, v, []string{"mode", "tag", "enable-native", "trunk-tags"}, nil)
		if !ok {
			return p
		}
		p.VLAN = &BridgeVLAN{}
		if v, ok := vm["mode"]; ok {
			p.VLAN.Mode = d.str(join(vp, "mode"), v)
		}
		if v, ok := vm["tag"]; ok {
			p.VLAN.Tag = d.integer(join(vp, "tag"), v, 1, 4094)
		}
		if v, ok := vm["enable-native"]; ok {
			p.VLAN.EnableNative = d.boolean(join(vp, "enable-native"), v)
		}
		if v, ok := vm["trunk-tags"]; ok {
			for i, e := range d.list(join(vp, "trunk-tags"), v) {
				tp := index(join(vp, "trunk-tags"), i)
				tm, ok := d.object(tp, e, []string{"id", "id-range"}, nil)
				if !ok {
					continue
				}
				var t TrunkTag
				if v, ok := tm["id"]; ok {
					t.ID = d.integer(join(tp, "id"), v, 1, 4094)
				}
				if v, ok := tm["id-range"]; ok {
					if rm, ok := d.object(join(tp, "id-range"), v, []string{"min", "max"}, nil); ok {
						r := &IDRange{}
						for _, f := range []struct {
							key string
							dst *int
						}{{"min", &r.Min}, {"max", &r.Max}} {
							if v, ok := rm[f.key]; ok {
								if n := d.integer(join(tp, "id-range."+f.key), v, 1, 4094); n != nil {
									*f.dst = *n
								}
							} else {
								d.fail(join(tp, "id-range."+f.key), "required")
							}
						}
						t.IDRange = r
					}
				}
				p.VLAN.TrunkTags = append(p.VLAN.TrunkTags, t)
			}
		}
	}
	return p
}

func (d *decoder) ovsBond(path string, v any) *OVSBond {
	m, ok := d.object(path, v, []string{"mode", "port", "bond-updelay", "bond-downdelay"}, map[string]string{"ovs-db": "OVSDB columns of a port are not applied yet"})
	if !ok {
		return nil
	}
	b := &OVSBond{Mode: d.requiredStr(path, m, "mode")}
	if b.Mode != "" && !slices.Contains(OVSBondModes, b.Mode) {
		d.fail(join(path, "mode"), "%q is not an OVS bond mode (%s)", b.Mode, strings.Join(OVSBondModes, ", "))
	}
	if v, ok := m["port"]; ok {
		for i, e := range d.list(join(path, "port"), v) {
			pp := index(join(path, "port"), i)
			if pm, ok := d.object(pp, e, []string{"name"}, nil); ok {
				b.Port = append(b.Port, OVSBondPort{Name: d.requiredStr(pp, pm, "name")})
			}
		}
	} else {
		d.fail(join(path, "port"), "required")
	}
	for _, f := range []struct {
		key string
		dst **int
	}{{"bond-updelay", &b.UpDelay}, {"bond-downdelay", &b.DownDelay}} {
		if v, ok := m[f.key]; ok {
			*f.dst = d.integer(join(path, f.key), v, 0, math.MaxUint32)
		}
	}
	return b
}

func (d *decoder) vrf(path string, v any) *VRFConfig {
	m, ok := d.object(path, v, []string{"port", "ports", "route-table-id"}, nil)
	if !ok {
		return nil
	}
	return &VRFConfig{Port: d.ports(path, m), RouteTableID: d.requiredInt(path, m, "route-table-id", 1, math.MaxUint32)}
}

func (d *decoder) macvlan(path string, v any) *MACVLANConfig {
	m, ok := d.object(path, v, []string{"base-iface", "mode", "promiscuous"}, nil)
	if !ok {
		return nil
	}
	c := &MACVLANConfig{BaseIface: d.requiredStr(path, m, "base-iface"), Mode: d.requiredStr(path, m, "mode")}
	if v, ok := m["promiscuous"]; ok {
		c.Promiscuous = d.boolean(join(path, "promiscuous"), v)
	}
	return c
}

func (d *decoder) vxlan(path string, v any) *VXLANConfig {
	m, ok := d.object(path, v, []string{"id", "base-iface", "remote", "local", "destination-port"}, map[string]string{"learning": "not applied yet"})
	if !ok {
		return nil
	}
	c := &VXLANConfig{ID: d.requiredInt(path, m, "id", 0, 16777215)}
	if v, ok := m["base-iface"]; ok {
		c.BaseIface = d.str(join(path, "base-iface"), v)
	}
	if v, ok := m["remote"]; ok {
		c.Remote = d.str(join(path, "remote"), v)
	}
	if v, ok := m["local"]; ok {
		c.Local = d.str(join(path, "local"), v)
	}
	if v, ok := m["destination-port"]; ok {
		c.DestinationPort = d.integer(join(path, "destination-port"), v, 1, 65535)
	}
	return c
}

func (d *decoder) routes(v any) *Routes {
	m, ok := d.object("routes", v, []string{"config"}, map[string]string{"running": "routes.running is current state; desired routes go in routes.config"})
	if !ok {
		return nil
	}
	r := &Routes{}
	if v, ok := m["config"]; ok {
		for i, e := range d.list("routes.config", v) {
			p := index("routes.config", i)
			rm, ok := d.object(p, e, []string{"destination", "next-hop-address", "next-hop-interface", "metric", "table-id", "state"},
				unsupportedRouteKeys)
			if !ok {
				continue
			}
			var rt Route
			if v, ok := rm["destination"]; ok {
				rt.Destination = d.str(join(p, "destination"), v)
			}
			if v, ok := rm["next-hop-address"]; ok {
				rt.NextHopAddress = d.str(join(p, "next-hop-address"), v)
			}
			if v, ok := rm["next-hop-interface"]; ok {
				rt.NextHopInterface = d.str(join(p, "next-hop-interface"), v)
			}
			if v, ok := rm["metric"]; ok {
				rt.Metric = d.integer(join(p, "metric"), v, 0, math.MaxUint32)
			}
			if v, ok := rm["table-id"]; ok {
				rt.TableID = d.integer(join(p, "table-id"), v, 0, math.MaxUint32)
			}
			if v, ok := rm["state"]; ok {
				rt.State = d.str(join(p, "state"), v)
				if rt.State != "absent" {
					d.fail(join(p, "state"), "%q: the only route state is absent", rt.State)
				}
			}
			r.Config = append(r.Config, rt)
		}
	}
	return r
}

func (d *decoder) dns(v any) *DNSResolver {
	m, ok := d.object("dns-resolver", v, []string{"config"}, map[string]string{"running": "dns-resolver.running is current state; desired DNS goes in dns-resolver.config"})
	if !ok {
		return nil
	}
	r := &DNSResolver{}
	if v, ok := m["config"]; ok {
		cm, ok := d.object("dns-resolver.config", v, []string{"server", "search"}, map[string]string{"options": "resolver options are not applied yet"})
		if ok {
			r.Config = &DNSConfig{}
			if v, ok := cm["server"]; ok {
				r.Config.Server = d.strings("dns-resolver.config.server", v)
			}
			if v, ok := cm["search"]; ok {
				r.Config.Search = d.strings("dns-resolver.config.search", v)
			}
		}
	}
	return r
}

func typeList() string {
	s := make([]string, len(SupportedTypes))
	for i, t := range SupportedTypes {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

func join(path, key string) string { return path + "." + key }

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

func describe(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %q", t)
	case json.Number:
		return "the number " + t.String()
	case bool:
		return fmt.Sprintf("%v", t)
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}
