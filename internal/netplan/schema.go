// Package netplan is the netplan backend (seed 000): policies whose desired state is
// netplan's YAML (network: {version: 2, ...}) are checked by netplan's own parser, written
// under /run/netplan (as the overlay's upper dir, gone at the next boot), rendered by
// `netplan generate` into NetworkManager profiles under /run, and activated and verified
// in a NetworkManager checkpoint: committed or rolled back like the engine's changes.
package netplan

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"reflect"
	"slices"

	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/api/field"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/internal/backend"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// Name is spec.backend's name for this backend.
const Name = nmstatev1.BackendNetplan

// Renderer is the one renderer nmoverlay renders through: NetworkManager's checkpoints
// make the apply a transaction.
const Renderer = "NetworkManager"

// Document is one policy's desired state: its network object.
type Document struct {
	Policy  string         `json:"policy"`
	Network map[string]any `json:"network"`
}

// Config is a node's desired state for netplan: every policy's document, by policy name
// (netplan reads their files in that order).
type Config struct {
	Documents []Document `json:"documents"`
}

// sections are netplan's device sections (netplan.io 0.106).
var sections = []string{"ethernets", "bonds", "bridges", "vlans", "tunnels", "vrfs", "wifis", "modems",
	"dummy-devices", "virtual-ethernets", "nm-devices"}

// nmstateKeys are the top-level keys of nmstate's schema: a policy written for the
// networkmanager backend.
var nmstateKeys = []string{"interfaces", "routes", "route-rules", "dns-resolver", "ovn", "hostname", "capture"}

// Schema is netplan's schema, as the handler plans with it.
type Schema struct{}

func (Schema) Name() string { return Name }

// Parse reads one policy's desired state: a network object of version 2 rendered by
// NetworkManager. The rest is netplan's to check (Backend.Check).
func (Schema) Parse(raw []byte) (any, error) {
	network, err := parse(raw)
	if err != nil {
		return nil, err
	}
	return network, nil
}

func parse(raw []byte) (map[string]any, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	for _, k := range nmstateKeys {
		if _, ok := doc[k]; ok {
			return nil, &field.Error{Path: k, Reason: "this is nmstate's schema (interfaces, routes, ...); this node's backend is " + Name +
				", which takes netplan's (network: {version: 2, ethernets: ..., bridges: ...})"}
		}
	}
	for k := range doc {
		if k != "network" {
			return nil, &field.Error{Path: k, Reason: "not netplan's: the " + Name + " backend takes one key, network"}
		}
	}
	network, ok := doc["network"].(map[string]any)
	if !ok {
		return nil, &field.Error{Path: "network", Reason: "missing, or not an object: the " + Name + " backend takes netplan's network: {version: 2, ...}"}
	}
	if v, ok := network["version"].(float64); !ok || v != 2 {
		return nil, &field.Error{Path: "network.version", Reason: fmt.Sprintf("%v, want 2 (netplan's only version)", network["version"])}
	}
	if err := checkRenderer("network.renderer", network["renderer"]); err != nil {
		return nil, err
	}
	for _, sec := range sections {
		devs, ok := network[sec].(map[string]any)
		if !ok {
			continue
		}
		for _, id := range slices.Sorted(maps.Keys(devs)) {
			if dev, ok := devs[id].(map[string]any); ok {
				if err := checkRenderer("network."+sec+"."+id+".renderer", dev["renderer"]); err != nil {
					return nil, err
				}
			}
		}
	}
	out := maps.Clone(network)
	out["renderer"] = Renderer
	return out, nil
}

func checkRenderer(path string, v any) error {
	if v == nil || v == Renderer {
		return nil
	}
	return &field.Error{Path: path, Reason: fmt.Sprintf("%v: nmoverlay renders netplan through %s, whose checkpoints make an apply a transaction", v, Renderer)}
}

// Merge keeps each policy's document whole, in name order. Two policies defining the same
// device differently conflict: netplan would let the later file win, key by key, without
// a word.
func (Schema) Merge(sources []backend.Parsed) (backend.Desired, map[string][]string, error) {
	cfg := Config{}
	owners := map[string][]string{}
	type def struct {
		policy string
		v      any
	}
	defs := map[string]def{}
	var conflicts state.Conflicts
	for _, s := range sources {
		network, ok := s.State.(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("policy %q: not a parsed netplan document", s.Policy)
		}
		cfg.Documents = append(cfg.Documents, Document{Policy: s.Policy, Network: network})
		for _, sec := range sections {
			devs, _ := network[sec].(map[string]any)
			for _, id := range slices.Sorted(maps.Keys(devs)) {
				owners[id] = append(owners[id], s.Policy)
				path := "network." + sec + "." + id
				if prev, ok := defs[path]; ok && !reflect.DeepEqual(prev.v, devs[id]) {
					conflicts = append(conflicts, &state.Conflict{Path: path, Reason: "defined differently by two policies",
						Policies: []string{prev.policy, s.Policy}})
					continue
				}
				defs[path] = def{s.Policy, devs[id]}
			}
		}
	}
	if len(conflicts) > 0 {
		return nil, nil, conflicts
	}
	return cfg, owners, nil
}

// Drift: what of a committed policy's document the node no longer runs.
func (Schema) Drift(committed []byte, current state.State) ([]string, error) {
	network, err := parse(committed)
	if err != nil {
		return nil, err
	}
	return state.Verify(Expected(Config{Documents: []Document{{Network: network}}}), current), nil
}

// ConfigOf is the Config the backend was handed.
func ConfigOf(d backend.Desired) (Config, error) {
	switch c := d.(type) {
	case Config:
		return c, nil
	case nil:
		return Config{}, nil
	}
	return Config{}, fmt.Errorf("the %s backend was handed %T", Name, d)
}

// Expected is what the node must run for cfg, in nmstate's terms, so that state.Verify
// checks it as it checks the engine's changes: each device's addresses, DHCP, MTU,
// bridge ports and STP, bond ports and mode, VLAN, and every route on its device. It reads netplan's
// documents, not the profiles netplan generated from them, so what netplan leaves out of
// its profiles without a word (a route via a gateway on a bridge without addresses) is
// caught. Devices matched by properties and not renamed are not checked by name.
func Expected(cfg Config) state.State {
	var s state.State
	var routes []state.Route
	for _, doc := range cfg.Documents {
		for _, sec := range []string{"ethernets", "bonds", "bridges", "vlans", "dummy-devices"} {
			devs, _ := doc.Network[sec].(map[string]any)
			for _, id := range slices.Sorted(maps.Keys(devs)) {
				dev, _ := devs[id].(map[string]any)
				it, ok := expectedInterface(sec, id, dev)
				if !ok {
					continue
				}
				s.Interfaces = append(s.Interfaces, it)
				routes = append(routes, expectedRoutes(it.Name, dev)...)
			}
		}
	}
	if len(routes) > 0 {
		s.Routes = &state.Routes{Config: routes}
	}
	return s
}

var interfaceTypes = map[string]state.InterfaceType{
	"ethernets": state.Ethernet, "bonds": state.Bond, "bridges": state.LinuxBridge, "vlans": state.VLAN, "dummy-devices": state.Dummy,
}

func expectedInterface(sec, id string, dev map[string]any) (state.Interface, bool) {
	name := id
	if _, matched := dev["match"]; matched {
		setName, ok := dev["set-name"].(string)
		if !ok {
			return state.Interface{}, false
		}
		name = setName
	}
	it := state.Interface{Name: name, Type: interfaceTypes[sec], State: state.Up}
	if mtu, ok := dev["mtu"].(float64); ok {
		m := int(mtu)
		it.MTU = &m
	}
	v4, v6 := &state.IPConfig{}, &state.IPConfig{}
	for _, a := range addresses(dev["addresses"]) {
		pfx, err := netip.ParsePrefix(a)
		if err != nil {
			continue
		}
		addr := state.Address{IP: pfx.Addr().String(), PrefixLength: pfx.Bits()}
		if pfx.Addr().Is4() {
			v4.Address = append(v4.Address, addr)
		} else {
			v6.Address = append(v6.Address, addr)
		}
	}
	if b, ok := boolOf(dev["dhcp4"]); ok && b {
		v4.DHCP = &b
	}
	if len(v4.Address) > 0 || v4.DHCP != nil {
		on := true
		v4.Enabled, it.IPv4 = &on, v4
	}
	if len(v6.Address) > 0 {
		on := true
		v6.Enabled, it.IPv6 = &on, v6
	}
	ports := stringList(dev["interfaces"])
	_, hasPorts := dev["interfaces"]
	switch sec {
	case "bridges":
		if !hasPorts {
			break
		}
		b := &state.BridgeConfig{Port: []state.BridgePort{}}
		for _, p := range ports {
			b.Port = append(b.Port, state.BridgePort{Name: p})
		}
		if params, ok := dev["parameters"].(map[string]any); ok {
			if stp, ok := boolOf(params["stp"]); ok {
				b.Options = &state.BridgeOptions{STP: &state.STP{Enabled: &stp}}
			}
		}
		it.Section = b
	case "bonds":
		if !hasPorts {
			break
		}
		b := &state.BondConfig{Port: ports}
		if params, ok := dev["parameters"].(map[string]any); ok {
			if mode, ok := params["mode"].(string); ok {
				b.Mode = state.BondMode(mode)
			}
		}
		it.Section = b
	case "vlans":
		id, _ := dev["id"].(float64)
		link, _ := dev["link"].(string)
		it.Section = &state.VLANConfig{ID: int(id), BaseIface: link}
	}
	return it, true
}

func expectedRoutes(name string, dev map[string]any) []state.Route {
	list, _ := dev["routes"].([]any)
	var out []state.Route
	for _, r := range list {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		to, _ := m["to"].(string)
		via, _ := m["via"].(string)
		switch to {
		case "default":
			to = "0.0.0.0/0"
			if state.IsIPv6(via) {
				to = "::/0"
			}
		case "":
			continue
		}
		if pfx, err := netip.ParsePrefix(to); err == nil {
			to = pfx.Masked().String()
		} else if a, err := netip.ParseAddr(to); err == nil {
			to = netip.PrefixFrom(a, a.BitLen()).String()
		}
		route := state.Route{Destination: to, NextHopAddress: via, NextHopInterface: name}
		if metric, ok := m["metric"].(float64); ok {
			v := int(metric)
			route.Metric = &v
		}
		if table, ok := m["table"].(float64); ok {
			v := int(table)
			route.TableID = &v
		}
		out = append(out, route)
	}
	return out
}

// addresses are a device's static addresses: a list of "a/p" strings, or of one-key
// objects with options ({"10.0.0.1/24": {label: ...}}).
func addresses(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, a := range list {
		switch a := a.(type) {
		case string:
			out = append(out, a)
		case map[string]any:
			for k := range a {
				out = append(out, k)
			}
		}
	}
	return out
}

func stringList(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, s := range list {
		if s, ok := s.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// boolOf reads a YAML boolean as netplan does (true, yes, on...): sigs.k8s.io/yaml reads
// YAML 1.1's words as booleans already; a string here is one it left.
func boolOf(v any) (bool, bool) {
	switch b := v.(type) {
	case bool:
		return b, true
	case string:
		switch b {
		case "true", "yes", "on", "y":
			return true, true
		case "false", "no", "off", "n":
			return false, true
		}
	}
	return false, false
}

// marshal is a policy's document as the file netplan reads.
func marshal(doc Document) ([]byte, error) {
	js, err := json.Marshal(map[string]any{"network": doc.Network})
	if err != nil {
		return nil, err
	}
	body, err := yaml.JSONToYAML(js)
	if err != nil {
		return nil, err
	}
	return append([]byte("# Written by nmoverlay for the NodeNetworkConfigurationPolicy "+doc.Policy+
		": under /run, so gone at the next boot, when nmoverlay applies the policy again.\n"), body...), nil
}
