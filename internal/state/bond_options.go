package state

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// BondOptions are a bond's options (link-aggregation.options), kept as NetworkManager
// takes them: strings. In JSON they are typed as nmstate types them (nmstatectl show):
// the integer options as numbers, the boolean ones as booleans, and the options whose
// values the kernel names (lacp_rate, xmit_hash_policy, ...) by name, however they were
// given (1 or "fast"). Any of these reads back from JSON.
type BondOptions map[string]string

// bondOptionKind is how nmstate types one bond option.
type bondOptionKind struct {
	integer, boolean bool
	// names are an enumerated option's values by number (lacp_rate 1 is "fast").
	names []string
}

// bondOptionKinds: nmstate's BondOptions (rust/src/lib/ifaces/bond.rs); an option not
// listed is a string (primary, ad_actor_system, arp_ip_target).
var bondOptionKinds = map[string]bondOptionKind{
	"ad_actor_sys_prio": {integer: true}, "ad_user_port_key": {integer: true}, "arp_interval": {integer: true},
	"downdelay": {integer: true}, "lp_interval": {integer: true}, "miimon": {integer: true}, "min_links": {integer: true},
	"packets_per_slave": {integer: true}, "resend_igmp": {integer: true}, "updelay": {integer: true},
	"num_grat_arp": {integer: true}, "num_unsol_na": {integer: true}, "arp_missed_max": {integer: true},
	"tlb_dynamic_lb": {boolean: true}, "use_carrier": {boolean: true}, "balance_slb": {boolean: true}, "lacp_active": {boolean: true},
	"ad_select":         {names: []string{"stable", "bandwidth", "count"}},
	"lacp_rate":         {names: []string{"slow", "fast"}},
	"all_slaves_active": {names: []string{"dropped", "delivered"}},
	"arp_all_targets":   {names: []string{"any", "all"}},
	"arp_validate":      {names: []string{"none", "active", "backup", "all", "filter", "filter_active", "filter_backup"}},
	"fail_over_mac":     {names: []string{"none", "active", "follow"}},
	"primary_reselect":  {names: []string{"always", "better", "failure"}},
	"xmit_hash_policy":  {names: []string{"layer2", "layer3+4", "layer2+3", "encap2+3", "encap3+4", "vlan+srcmac"}},
}

// typedBondOption is value as nmstate shows option: a number, a boolean, a name, or the
// string as it is when it is none of what the option takes.
func typedBondOption(option, value string) any {
	kind := bondOptionKinds[option]
	switch {
	case kind.integer:
		if n, err := strconv.ParseUint(value, 0, 64); err == nil {
			return n
		}
	case kind.boolean:
		switch strings.ToLower(value) {
		case "1", "true", "yes", "on", "y":
			return true
		case "0", "false", "no", "off", "n":
			return false
		}
	case kind.names != nil:
		if n, err := strconv.Atoi(value); err == nil && n >= 0 && n < len(kind.names) {
			return kind.names[n]
		}
	}
	return value
}

// KernelBondOption is value as NetworkManager and the kernel take option: a boolean
// option's true and false as 1 and 0, as nmstate translates them (NetworkManager refuses
// use_carrier "true"); any other value as it is.
func KernelBondOption(option, value string) string {
	if b, ok := typedBondOption(option, value).(bool); ok && bondOptionKinds[option].boolean {
		if b {
			return "1"
		}
		return "0"
	}
	return value
}

// SameBondOption says whether two spellings of an option's value are the same value
// (lacp_rate fast and 1, use_carrier true and 1, miimon 0x64 and 100).
func SameBondOption(option, a, b string) bool {
	return a == b || typedBondOption(option, a) == typedBondOption(option, b)
}

// MarshalJSON writes the options typed as nmstate types them.
func (o BondOptions) MarshalJSON() ([]byte, error) {
	typed := make(map[string]any, len(o))
	for k, v := range o {
		typed[k] = typedBondOption(k, v)
	}
	return json.Marshal(typed)
}

// UnmarshalJSON reads options given as strings, numbers or booleans.
func (o *BondOptions) UnmarshalJSON(b []byte) error {
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		*o = nil
		return nil
	}
	*o = make(BondOptions, len(raw))
	for k, v := range raw {
		switch v := v.(type) {
		case string:
			(*o)[k] = v
		case float64:
			(*o)[k] = strconv.FormatFloat(v, 'f', -1, 64)
		case bool:
			(*o)[k] = strconv.FormatBool(v)
		default:
			return fmt.Errorf("link-aggregation.options.%s: a string, number or boolean, got %v", k, v)
		}
	}
	return nil
}

// decodeValue reads options given as strings, numbers or booleans.
func (o *BondOptions) decodeValue(d *decoder, path string, v any) bool {
	m, ok := d.scalars(path, v)
	*o = m
	return ok
}
