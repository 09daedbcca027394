package state

import (
	"fmt"
	"sort"
	"strings"
)

// Order returns the interfaces of s in the order to apply them: first the removals, each
// before what it depends on; then the rest, each after what it depends on (a VLAN after its
// base interface, a port after its controller). Ties go by name, so
// the order depends on the state alone, never on policy names.
func Order(s State) ([]Interface, error) {
	byKey := map[string]Interface{}
	for _, it := range s.Interfaces {
		byKey[it.Key()] = it
	}
	// deps[x] are the interfaces x needs before it exists.
	deps := map[string][]string{}
	base := map[string]string{} // the interface each is built on
	for _, it := range s.Interfaces {
		for _, r := range it.refsOf(RefBase, RefPort, RefController) {
			switch r.Kind {
			case RefBase:
				base[it.Name] = r.Name
				deps[it.Name] = append(deps[it.Name], r.Name)
			case RefController:
				deps[it.Name] = append(deps[it.Name], r.Name)
			case RefPort:
				deps[r.Name] = append(deps[r.Name], it.Key()) // br-ex's internal interface after the bridge br-ex
			}
		}
	}
	// A port built on its own controller (a VLAN of br0 that is also br0's port) orders
	// fine, port after controller, but the kernel refuses it: the controller would carry
	// itself.
	for _, it := range s.Interfaces {
		if it.State == Absent {
			continue
		}
		for _, port := range it.portNames() {
			seen := map[string]bool{}
			for b, ok := base[port]; ok && !seen[b]; b, ok = base[b] {
				seen[b] = true
				if b == it.Key() {
					return nil, fmt.Errorf("interfaces %s, %s depend on each other in a cycle: %s is built on %s and is also its port", it.Name, port, port, it.Name)
				}
			}
		}
	}
	var present, absent []string
	for _, it := range s.Interfaces {
		if it.State == Absent {
			absent = append(absent, it.Key())
		} else {
			present = append(present, it.Key())
		}
	}
	removeOrder, err := topo(absent, deps)
	if err != nil {
		return nil, err
	}
	// Remove dependents first: the reverse of the creation order.
	for i, j := 0, len(removeOrder)-1; i < j; i, j = i+1, j-1 {
		removeOrder[i], removeOrder[j] = removeOrder[j], removeOrder[i]
	}
	applyOrder, err := topo(present, deps)
	if err != nil {
		return nil, err
	}
	out := make([]Interface, 0, len(s.Interfaces))
	for _, n := range append(removeOrder, applyOrder...) {
		out = append(out, byKey[n])
	}
	return out, nil
}

// topo sorts names so that each comes after its deps among names (Kahn, ties by name).
func topo(names []string, deps map[string][]string) ([]string, error) {
	in := map[string]bool{}
	for _, n := range names {
		in[n] = true
	}
	pending := map[string]int{}
	dependents := map[string][]string{}
	for _, n := range names {
		for _, d := range deps[n] {
			if in[d] && d != n {
				pending[n]++
				dependents[d] = append(dependents[d], n)
			}
		}
	}
	var ready, out []string
	for _, n := range names {
		if pending[n] == 0 {
			ready = append(ready, n)
		}
	}
	sort.Strings(ready)
	for len(ready) > 0 {
		n := ready[0]
		ready = ready[1:]
		out = append(out, n)
		for _, m := range dependents[n] {
			if pending[m]--; pending[m] == 0 {
				ready = append(ready, m)
				sort.Strings(ready)
			}
		}
	}
	if len(out) < len(names) {
		var cycle []string
		for _, n := range names {
			if pending[n] > 0 {
				cycle = append(cycle, n)
			}
		}
		sort.Strings(cycle)
		return nil, fmt.Errorf("interfaces %s depend on each other in a cycle (base interfaces and controllers)", strings.Join(cycle, ", "))
	}
	return out, nil
}
