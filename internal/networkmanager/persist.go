package networkmanager

import (
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/api/field"
	"github.com/nmoverlay/nmoverlay/internal/keyfile"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// Keyfile is one profile as NetworkManager's keyfile plugin stores it in its persistent
// dir.
type Keyfile struct {
	// Name is the file's name: the profile's id, as NetworkManager names a file it writes.
	Name      string
	Interface string
	Content   []byte
}

// PersistentKeyfiles renders desired as the keyfiles of the profiles the engine would build
// for it on a node with no profile of its own, for a MachineConfig to lay down in the
// persistent dir: the profiles a node needs before the cluster is up. Their UUIDs follow
// from the interfaces (the same desired state renders the same files, so a MachineConfig
// rendered again does not reboot a pool), and they carry no engine marker: they are the
// node's, not the engine's. What only a node's current state gives meaning to is refused,
// its field path said: an interface down or absent, a route or rule to remove, a port of
// no type (its type is the node's NIC's), and settings with no keyfile form here.
func PersistentKeyfiles(desired state.State) ([]Keyfile, error) {
	var errs field.Errors
	for i, it := range desired.Interfaces {
		if it.State == state.Absent || it.State == state.Down {
			errs = append(errs, &field.Error{Path: fmt.Sprintf("interfaces[%d].state", i),
				Reason: fmt.Sprintf("%s removes or stops what a node runs; a persistent profile can only add (remove the file from the MachineConfig instead)", it.State)})
		}
	}
	if desired.Routes != nil {
		for i, r := range desired.Routes.Config {
			if r.State == string(state.Absent) {
				errs = append(errs, &field.Error{Path: fmt.Sprintf("routes.config[%d].state", i), Reason: "absent removes a route a node has; a persistent profile can only add"})
			}
		}
	}
	if desired.RouteRules != nil {
		for i, r := range desired.RouteRules.Config {
			if r.State == string(state.Absent) {
				errs = append(errs, &field.Error{Path: fmt.Sprintf("route-rules.config[%d].state", i), Reason: "absent removes a rule a node has; a persistent profile can only add"})
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	h := &host{byPath: map[dbus.ObjectPath]profile{}, owned: map[string]profile{}, devs: map[string]device{},
		current: func() (state.State, error) { return state.State{}, nil }, uuid: persistentUUID}
	ordered, err := state.Order(desired)
	if err != nil {
		return nil, err
	}
	pl, err := h.steps(desired, ordered, true)
	if err != nil {
		return nil, err
	}
	var out []Keyfile
	for _, it := range pl.interfaces {
		s, err := h.build(it, pl, true)
		if err != nil {
			return nil, fmt.Errorf("%w (a port named only in its controller's list is given its type by the node: name it among the interfaces with its type)", err)
		}
		kf, err := keyfileOf(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", it.Name, err)
		}
		b, err := kf.Marshal("connection")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", it.Name, err)
		}
		id := s.str("connection", "id")
		if id == "" || strings.ContainsAny(id, "/\x00") || id == "." || id == ".." {
			return nil, fmt.Errorf("%s: profile id %q cannot name a file", it.Name, id)
		}
		out = append(out, Keyfile{Name: id + ".nmconnection", Interface: it.Name, Content: b})
	}
	return out, nil
}

// persistentUUID is a name-based UUID (version 5, SHA-1, in the URL namespace, as nmstatectl
// gc makes its own) of the interface's key.
func persistentUUID(key string) string {
	ns := [16]byte{0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}
	h := sha1.New()
	h.Write(ns[:])
	h.Write([]byte("nmoverlay-persistent://" + key))
	var b [16]byte
	copy(b[:], h.Sum(nil))
	return formatUUID(b, 5)
}

// keyfileOf is s as NetworkManager's keyfile plugin writes it (nm-settings-keyfile(5)):
// scalars as they are, lists with ';', addresses, routes and rules numbered, maps as the
// keys of their section. The engine's own marks (user data nmoverlay.*) are left out.
// Empty lists are left out, as NetworkManager leaves out a default.
func keyfileOf(s settings) (keyfile.File, error) {
	kf := keyfile.File{}
	put := func(section, key, value string) {
		if kf[section] == nil {
			kf[section] = map[string]string{}
		}
		kf[section][key] = value
	}
	for _, section := range slices.Sorted(maps.Keys(s)) {
		for _, key := range slices.Sorted(maps.Keys(s[section])) {
			v := s[section][key].Value()
			where := section + "." + key
			switch val := v.(type) {
			case string:
				put(section, key, val)
			case bool:
				put(section, key, strconv.FormatBool(val))
			case int32, uint32, int64, uint64, uint8, int16, uint16:
				put(section, key, fmt.Sprint(val))
			case []string:
				if len(val) > 0 {
					put(section, key, list(val))
				}
			case []uint32:
				if len(val) == 0 {
					continue
				}
				var items []string
				for _, u := range val {
					if key == "dns" { // IPv4 addresses in network byte order
						var b [4]byte
						binary.LittleEndian.PutUint32(b[:], u)
						items = append(items, netip.AddrFrom4(b).String())
					} else {
						items = append(items, fmt.Sprint(u))
					}
				}
				put(section, key, list(items))
			case [][]byte:
				if len(val) == 0 {
					continue
				}
				if key != "dns" {
					return nil, fmt.Errorf("%s: no keyfile form here for a list of byte strings", where)
				}
				var items []string
				for _, b := range val {
					a, ok := netip.AddrFromSlice(b)
					if !ok {
						return nil, fmt.Errorf("%s: %v is no address", where, b)
					}
					items = append(items, a.String())
				}
				put(section, key, list(items))
			case []byte:
				if !strings.HasSuffix(key, "mac-address") && key != "bssid" {
					return nil, fmt.Errorf("%s: no keyfile form here for a byte string", where)
				}
				parts := make([]string, len(val))
				for i, c := range val {
					parts[i] = fmt.Sprintf("%02X", c)
				}
				put(section, key, strings.Join(parts, ":"))
			case map[string]string:
				if err := putMap(put, section, key, val); err != nil {
					return nil, fmt.Errorf("%s: %w", where, err)
				}
			case []map[string]dbus.Variant:
				if err := putNumbered(put, section, key, val); err != nil {
					return nil, fmt.Errorf("%s: %w", where, err)
				}
			default:
				return nil, fmt.Errorf("%s: no keyfile form here for D-Bus type %s", where, s[section][key].Signature())
			}
		}
	}
	return kf, nil
}

// list is a keyfile list: each item followed by ';', a ';' within one escaped.
func list(items []string) string {
	var b strings.Builder
	for _, it := range items {
		b.WriteString(strings.ReplaceAll(it, ";", `\;`))
		b.WriteByte(';')
	}
	return b.String()
}

// putMap writes a string map as NetworkManager's keyfile does: the bond's options and a
// VPN's data as keys of their section, user data as keys of [user], OVS external ids and
// other config as data.KEY.
func putMap(put func(section, key, value string), section, key string, m map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch {
		case section == "user" && key == "data":
			if !strings.HasPrefix(k, "nmoverlay.") {
				put("user", k, m[k])
			}
		case section == "bond" && key == "options", section == "vpn" && key == "data":
			put(section, k, m[k])
		case section == "vpn" && key == "secrets":
			put("vpn-secrets", k, m[k])
		case (section == "ovs-external-ids" || section == "ovs-other-config") && key == "data":
			put(section, "data."+k, m[k])
		default:
			return fmt.Errorf("no keyfile form here for a string map")
		}
	}
	return nil
}

// putNumbered writes addresses (addressN=IP/PREFIX), routes (routeN=DEST/PREFIX[,NEXTHOP[,METRIC]]
// with routeN_options=NAME=VALUE,...) and routing rules (routing-ruleN=RULE), numbered from 1.
func putNumbered(put func(section, key, value string), section, key string, items []map[string]dbus.Variant) error {
	for i, item := range items {
		n := strconv.Itoa(i + 1)
		switch key {
		case "address-data":
			put(section, "address"+n, fmt.Sprintf("%v/%v", item["address"].Value(), item["prefix"].Value()))
		case "route-data":
			r := fmt.Sprintf("%v/%v", item["dest"].Value(), item["prefix"].Value())
			nextHop, hasNH := item["next-hop"]
			metric, hasMetric := item["metric"]
			switch {
			case hasMetric && hasNH:
				r += fmt.Sprintf(",%v,%v", nextHop.Value(), metric.Value())
			case hasMetric:
				r += fmt.Sprintf(",,%v", metric.Value())
			case hasNH:
				r += fmt.Sprintf(",%v", nextHop.Value())
			}
			put(section, "route"+n, r)
			var opts []string
			for _, name := range slices.Sorted(maps.Keys(item)) {
				if name == "dest" || name == "prefix" || name == "next-hop" || name == "metric" {
					continue
				}
				opts = append(opts, fmt.Sprintf("%s=%v", name, item[name].Value()))
			}
			if len(opts) > 0 {
				put(section, "route"+n+"_options", strings.Join(opts, ","))
			}
		case "routing-rules":
			rule, err := routingRule(item)
			if err != nil {
				return err
			}
			put(section, "routing-rule"+n, rule)
		default:
			return fmt.Errorf("no keyfile form here for a list of dictionaries")
		}
	}
	return nil
}

// routingRule is a routing rule as NetworkManager writes it to a keyfile
// (nm_ip_routing_rule_to_string): "priority P [not] [from A/L] [to A/L] [iif I] [oif O]
// [fwmark M/K] table T", for the attributes the engine sets.
func routingRule(r map[string]dbus.Variant) (string, error) {
	var parts []string
	if v, ok := r["priority"]; ok {
		parts = append(parts, fmt.Sprintf("priority %v", v.Value()))
	}
	if v, ok := r["invert"]; ok && v.Value() == true {
		parts = append(parts, "not")
	}
	for _, end := range []string{"from", "to"} {
		if v, ok := r[end]; ok {
			if l, ok := r[end+"-len"]; ok {
				parts = append(parts, fmt.Sprintf("%s %v/%v", end, v.Value(), l.Value()))
			} else {
				parts = append(parts, fmt.Sprintf("%s %v", end, v.Value()))
			}
		}
	}
	for _, dev := range []struct{ attr, word string }{{"iifname", "iif"}, {"oifname", "oif"}} {
		if v, ok := r[dev.attr]; ok {
			parts = append(parts, fmt.Sprintf("%s %v", dev.word, v.Value()))
		}
	}
	if v, ok := r["fwmark"]; ok {
		mask := uint32(0xffffffff)
		if m, ok := r["fwmask"]; ok {
			mask, _ = m.Value().(uint32)
		}
		parts = append(parts, fmt.Sprintf("fwmark %#x/%#x", v.Value(), mask))
	}
	if v, ok := r["suppress-prefixlength"]; ok {
		parts = append(parts, fmt.Sprintf("suppress_prefixlength %v", v.Value()))
	}
	if v, ok := r["table"]; ok {
		parts = append(parts, fmt.Sprintf("table %v", v.Value()))
	}
	if v, ok := r["action"]; ok {
		action, _ := v.Value().(byte)
		name := ""
		for n, a := range ruleActions {
			if a == action {
				name = n
			}
		}
		switch {
		case action == ruleActions[""]: // to a table: said by the table
		case name != "":
			parts = append(parts, name)
		default:
			return "", fmt.Errorf("routing rule action %d: no keyfile form here", action)
		}
	}
	for name := range r {
		switch name {
		case "priority", "invert", "from", "from-len", "to", "to-len", "iifname", "oifname", "fwmark", "fwmask", "table", "family",
			"action", "suppress-prefixlength":
		default:
			return "", fmt.Errorf("routing rule attribute %s: no keyfile form here", name)
		}
	}
	return strings.Join(parts, " "), nil
}
