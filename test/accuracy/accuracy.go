// Package accuracy checks a plan (`nmoverlay plan`, internal/plan) against what the apply
// then did: every change the plan predicted shows in the node's state after the apply, and
// the state shows no change the plan did not predict. The node tier checks it through the
// command, against the NodeNetworkStates a real handler reports; the VM tier in the guest,
// for the kinds the host kernel lacks.
package accuracy

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/nmoverlay/nmoverlay/internal/plan"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// Check compares the predicted changes with the difference between the node's state
// before and after the apply, field by field: an interface's top-level fields
// (`eth1.mtu`, `br1.bridge`, `br1.ipv4`), an interface made or gone, and `routes.config`,
// `route-rules.config`, `dns-resolver.config` and `ovn`. The running routes and DNS are
// left out: the kernel derives them from what is configured. An interface made, released,
// taken down or brought up may change in any field: a down interface shows its state
// alone. A predicted field set to a scalar must read the predicted value after, one set to
// "(bond0's)" bond0's value of the field (changed or not), and a port must list under its
// predicted controller. The error lists every mismatch.
func Check(changes []plan.Change, before, after state.State) error {
	observed, err := Diff(before, after)
	if err != nil {
		return err
	}
	keys := interfaceKeys(before, after)
	predicted := map[string]plan.Change{}
	var problems []string
	for _, c := range changes {
		predicted[field(c.Path, keys)] = c
	}
	for _, f := range slices.Sorted(maps.Keys(predicted)) {
		c := predicted[f]
		if port, isPort := strings.CutSuffix(c.Path, ".controller"); isPort && c.Kind == plan.Set {
			// The state shows a port under its controller, not on the port.
			if !hasPort(after, c.New, port) {
				problems = append(problems, fmt.Sprintf("predicted %q, but %s does not list %s as a port after", c.String(), c.New, port))
			}
			continue
		}
		if name, isTheirs := ownersValue(c.New); isTheirs && c.Kind == plan.Set {
			// "(bond0's)": the port ends with bond0's value of the field, which may have been
			// its own (a bond takes its first port's MAC address when it has none yet).
			field := strings.TrimPrefix(c.Path, state.OwnerOf(c.Path, keys))
			mine, theirs := valueAtOr(after, c.Path, keys), valueAtOr(after, name+field, keys)
			if mine == "" || mine != theirs {
				problems = append(problems, fmt.Sprintf("predicted %q, but %s reads %q after, %s%s %q", c.String(), c.Path, mine, name, field, theirs))
			}
			continue
		}
		d, ok := observed[f]
		if !ok && c.Kind == plan.Release {
			continue // back to its persistent profile, which may be what it ran
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("predicted %q, but %s did not change", c.String(), f))
			continue
		}
		if c.Kind == plan.Set && c.New != "" {
			if v, scalar := valueAt(after, c.Path, keys); scalar && v != c.New {
				problems = append(problems, fmt.Sprintf("predicted %q, but %s reads %s after (%s)", c.String(), c.Path, v, d))
			}
		}
	}
	for _, f := range slices.Sorted(maps.Keys(observed)) {
		if _, ok := predicted[f]; ok {
			continue
		}
		if i := strings.Index(f, "."); i > 0 && f[:i] != "routes" && f[:i] != "route-rules" && f[:i] != "dns-resolver" {
			k := state.OwnerOf(f, keys)
			if c, ok := predicted[k]; ok && (c.Kind == plan.Create || c.Kind == plan.Release) {
				continue // a field of an interface the plan makes, or hands back to its profile
			}
			if c, ok := predicted[k+".state"]; ok && (c.Old == "down" || c.New == "down") {
				continue // a down interface shows its state alone; one brought up, its profile's
			}
		}
		problems = append(problems, fmt.Sprintf("%s changed (%s), which the plan did not predict", f, observed[f]))
	}
	if len(problems) > 0 {
		return fmt.Errorf("the plan and the apply differ:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// Diff is every field that differs between two states, as Check counts them, each with
// "old → new" in JSON.
func Diff(before, after state.State) (map[string]string, error) {
	out := map[string]string{}
	b, err := fields(before)
	if err != nil {
		return nil, err
	}
	a, err := fields(after)
	if err != nil {
		return nil, err
	}
	for k, v := range b {
		if w, ok := a[k]; !ok || !reflect.DeepEqual(v, w) {
			out[k] = show(v) + " → " + show(a[k])
		}
	}
	for k, w := range a {
		if _, ok := b[k]; !ok {
			out[k] = "none → " + show(w)
		}
	}
	// An interface made or gone is one change, not one per field.
	for k := range out {
		if i := strings.LastIndex(k, "."); i > 0 {
			if _, whole := out[k[:i]]; whole && isInterface(k[:i], before, after) {
				delete(out, k)
			}
		}
	}
	return out, nil
}

// fields flattens a state into the fields Check compares: "<key>" → the interface's
// presence, "<key>.<field>" → its value.
func fields(s state.State) (map[string]any, error) {
	out := map[string]any{}
	for _, it := range s.Interfaces {
		var m map[string]any
		b, err := json.Marshal(it)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		out[it.Key()] = true
		for f, v := range m {
			if f != "name" && f != "type" {
				out[it.Key()+"."+f] = v
			}
		}
	}
	var top map[string]any
	b, err := json.Marshal(struct {
		Routes      any `json:"routes,omitempty"`
		RouteRules  any `json:"route-rules,omitempty"`
		DNSResolver any `json:"dns-resolver,omitempty"`
		OVN         any `json:"ovn,omitempty"`
	}{s.Routes, s.RouteRules, s.DNSResolver, s.OVN})
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, err
	}
	for _, section := range []string{"routes", "route-rules", "dns-resolver"} {
		if m, ok := top[section].(map[string]any); ok && m["config"] != nil {
			out[section+".config"] = m["config"]
		}
	}
	if top["ovn"] != nil {
		out["ovn"] = top["ovn"]
	}
	return out, nil
}

func show(v any) string {
	if v == nil {
		return "none"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func isInterface(k string, states ...state.State) bool {
	for _, s := range states {
		if slices.ContainsFunc(s.Interfaces, func(it state.Interface) bool { return it.Key() == k }) {
			return true
		}
	}
	return false
}

func interfaceKeys(states ...state.State) []string {
	var keys []string
	for _, s := range states {
		for _, it := range s.Interfaces {
			keys = append(keys, it.Key())
		}
	}
	return keys
}

// field is the field Check counts a change's path under: the interface key and its
// top-level field, or the section's config.
func field(path string, keys []string) string {
	if k := state.OwnerOf(path, keys); k != "" {
		rest, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(path, k), "."), ".")
		if rest == "" {
			return k
		}
		return k + "." + strings.SplitN(rest, "[", 2)[0]
	}
	for _, section := range []string{"routes.config", "route-rules.config", "dns-resolver.config"} {
		if strings.HasPrefix(path, section) {
			return section
		}
	}
	if strings.HasPrefix(path, "ovn") {
		return "ovn"
	}
	return path
}

// ownersValue reads a predicted value "(NAME's)": NAME's own value of the same field.
func ownersValue(v string) (string, bool) {
	name, ok := strings.CutSuffix(strings.TrimPrefix(v, "("), "'s)")
	return name, ok && strings.HasPrefix(v, "(")
}

// valueAtOr is valueAt's scalar, or "".
func valueAtOr(s state.State, path string, keys []string) string {
	v, _ := valueAt(s, path, keys)
	return v
}

// hasPort: controller (an interface's name) lists port among its ports in s.
func hasPort(s state.State, controller, port string) bool {
	for _, it := range s.Interfaces {
		if it.Name != controller {
			continue
		}
		for _, r := range it.References() {
			if r.Kind == state.RefPort && r.Name == port {
				return true
			}
		}
	}
	return false
}

// valueAt is the scalar at path (an interface key, then field names) in s, as text.
func valueAt(s state.State, path string, keys []string) (string, bool) {
	k := state.OwnerOf(path, keys)
	i := slices.IndexFunc(s.Interfaces, func(it state.Interface) bool { return it.Key() == k })
	if k == "" || i < 0 {
		return "", false
	}
	b, err := json.Marshal(s.Interfaces[i])
	if err != nil {
		return "", false
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "", false
	}
	for _, name := range strings.Split(strings.TrimPrefix(path, k+"."), ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		v = m[name]
	}
	switch v := v.(type) {
	case string, float64, bool:
		return fmt.Sprint(v), true
	}
	return "", false
}
