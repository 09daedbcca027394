package nmpolicy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/nmoverlay/nmoverlay/api/field"
)

// Tree is a network state as a JSON tree: what a capture reads and what it yields.
type Tree = map[string]any

// ParseAll parses a policy's captures and orders them so that each comes after the
// captures it reads. Every problem is reported, each at capture.NAME.
func ParseAll(captures map[string]string) ([]Expr, field.Errors) {
	var errs field.Errors
	byName := map[string]Expr{}
	for _, name := range slices.Sorted(maps.Keys(captures)) {
		x, err := Parse(name, captures[name])
		if err != nil {
			errs = append(errs, fieldError(name, err))
			continue
		}
		byName[name] = x
	}
	if len(errs) > 0 {
		return nil, errs
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		x := byName[name]
		for _, dep := range x.Deps() {
			if _, ok := captures[dep]; !ok {
				errs = append(errs, fieldError(name, &Error{Capture: name, Expr: x.Line, Pos: x.depPos(dep),
					Reason: fmt.Sprintf("capture %q is not defined in spec.capture", dep)}))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	order, cycle := dependencyOrder(byName)
	if len(cycle) > 0 {
		return nil, field.Errors{{Path: "capture." + cycle[0],
			Reason: "captures read each other in a cycle: " + strings.Join(append(cycle, cycle[0]), " → ")}}
	}
	return order, nil
}

func fieldError(name string, err error) *field.Error {
	return &field.Error{Path: "capture." + name, Reason: err.Error()}
}

// depPos is where the expression names capture dep.
func (x Expr) depPos(dep string) int {
	if i := strings.Index(x.Line, "capture."+dep); i >= 0 {
		return len([]rune(x.Line[:i]))
	}
	return 0
}

// dependencyOrder sorts the captures so that each follows those it reads (by name among
// those ready together); a cycle is returned instead, in reading order.
func dependencyOrder(byName map[string]Expr) (order []Expr, cycle []string) {
	done := map[string]bool{}
	for len(order) < len(byName) {
		progressed := false
		for _, name := range slices.Sorted(maps.Keys(byName)) {
			x := byName[name]
			if done[name] {
				continue
			}
			ready := true
			for _, dep := range x.Deps() {
				ready = ready && done[dep]
			}
			if ready {
				order, done[name], progressed = append(order, x), true, true
			}
		}
		if !progressed {
			return nil, findCycle(byName, done)
		}
	}
	return order, nil
}

// findCycle follows unfinished dependencies from the first unfinished capture until one
// repeats.
func findCycle(byName map[string]Expr, done map[string]bool) []string {
	var start string
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		if !done[name] {
			start = name
			break
		}
	}
	seen := map[string]int{}
	var path []string
	for name := start; ; {
		if i, ok := seen[name]; ok {
			return path[i:]
		}
		seen[name] = len(path)
		path = append(path, name)
		for _, dep := range byName[name].Deps() {
			if !done[dep] {
				name = dep
				break
			}
		}
	}
}

// Evaluate evaluates a policy's captures against the node's current state. Those in
// cached are kept as they are, not evaluated again: a policy applied again after a reboot
// renders what it captured first, not what its own change made of the node. The result
// holds every capture.
func Evaluate(captures map[string]string, current Tree, cached map[string]Tree) (map[string]Tree, field.Errors) {
	order, errs := ParseAll(captures)
	if errs != nil {
		return nil, errs
	}
	results := map[string]Tree{}
	for _, x := range order {
		if c, ok := cached[x.Name]; ok {
			results[x.Name] = c
			continue
		}
		r, err := x.Eval(current, results)
		if err != nil {
			return nil, field.Errors{fieldError(x.Name, err)}
		}
		results[x.Name] = r
	}
	return results, nil
}

// Eval evaluates one expression; results holds the captures it reads.
func (x Expr) Eval(current Tree, results map[string]Tree) (Tree, error) {
	fail := func(pos int, format string, a ...any) error {
		return &Error{Capture: x.Name, Expr: x.Line, Pos: pos, Reason: fmt.Sprintf(format, a...)}
	}
	input := current
	if x.Input != "" {
		input = results[x.Input]
	}
	if x.Op == Keep {
		return keepOnly(deepCopy(input).(Tree), x.Path), nil
	}
	var value any
	switch {
	case x.Value.Null:
	case x.Value.IsPath:
		from := current
		if x.Value.Capture != "" {
			from = results[x.Value.Capture]
		}
		v, err := lookup(from, x.Value.Path)
		if err != nil {
			return nil, fail(x.Value.pos, "%s", err)
		}
		value = v
	default:
		value = x.Value.Literal
	}
	entries, entryPath, wrap := x.list(input)
	var out []any
	for _, e := range entries {
		switch x.Op {
		case Equal:
			got, err := lookup(e, entryPath)
			if (x.Value.Null && (err != nil || got == nil)) || (!x.Value.Null && err == nil && str(got) == str(value)) {
				out = append(out, deepCopy(e))
			}
		case Replace:
			e = deepCopy(e)
			if err := set(e, entryPath, value); err != nil {
				return nil, fail(x.pathPos, "%s", err)
			}
			out = append(out, e)
		}
	}
	if x.Op == Equal && len(out) == 0 {
		want := "null"
		if !x.Value.Null {
			want = strconv.Quote(str(value))
		}
		return nil, fail(x.pathPos, "no %s has %s == %s", x.entryName(), strings.Join(entryPath, "."), want)
	}
	if out == nil {
		out = []any{}
	}
	return wrap(out), nil
}

// list is the list an == or := works on, the path of the field in its entries, and how
// a result list is put back in a state.
func (x Expr) list(input Tree) (entries []any, entryPath []string, wrap func([]any) Tree) {
	p := x.Path
	switch p[0] {
	case "interfaces":
		entries, _ = input["interfaces"].([]any)
		return entries, p[1:], func(l []any) Tree { return Tree{"interfaces": l} }
	default: // routes.running|config, route-rules.config
		section, _ := input[p[0]].(map[string]any)
		entries, _ = section[p[1]].([]any)
		return entries, p[2:], func(l []any) Tree { return Tree{p[0]: map[string]any{p[1]: l}} }
	}
}

func (x Expr) entryName() string {
	switch x.Path[0] {
	case "interfaces":
		return "interface"
	case "routes":
		return x.Path[1] + " route"
	default:
		return "route rule"
	}
}

// lookup follows path in v: keys of objects, indexes of lists.
func lookup(v any, path []string) (any, error) {
	for i, key := range path {
		switch n := v.(type) {
		case map[string]any:
			next, ok := n[key]
			if !ok {
				return nil, fmt.Errorf("no %q in %s (it has %s)", key, where(path[:i]), keysOf(n))
			}
			v = next
		case []any:
			idx, err := strconv.Atoi(key)
			if err != nil || idx < 0 {
				return nil, fmt.Errorf("%s is a list: %q is not an index", where(path[:i]), key)
			}
			if idx >= len(n) {
				return nil, fmt.Errorf("no index %d in %s: it has %d entries", idx, where(path[:i]), len(n))
			}
			v = n[idx]
		default:
			return nil, fmt.Errorf("%s is a value, it has no %q", where(path[:i]), key)
		}
	}
	return v, nil
}

func where(path []string) string {
	if len(path) == 0 {
		return "the state"
	}
	return strings.Join(path, ".")
}

func keysOf(m map[string]any) string {
	if len(m) == 0 {
		return "nothing"
	}
	return strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}

// set sets the field at path in an entry, creating the objects on the way.
func set(v any, path []string, value any) error {
	for i, key := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s is not an object: cannot set %q in it", where(path[:i]), key)
		}
		if i == len(path)-1 {
			m[key] = value
			return nil
		}
		next, ok := m[key]
		if !ok || next == nil {
			next = map[string]any{}
			m[key] = next
		}
		v = next
	}
	return nil
}

// keepOnly keeps, at each object on the path, only the path's key.
func keepOnly(t Tree, path []string) Tree {
	var v any = t
	for _, key := range path {
		m, ok := v.(map[string]any)
		if !ok {
			break
		}
		for k := range m {
			if k != key {
				delete(m, k)
			}
		}
		v = m[key]
	}
	return t
}

// str is a value as == compares it: strings as they are, anything else as JSON.
func str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func deepCopy(v any) any {
	switch n := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(n))
		for k, e := range n {
			c[k] = deepCopy(e)
		}
		return c
	case []any:
		c := make([]any, len(n))
		for i, e := range n {
			c[i] = deepCopy(e)
		}
		return c
	default:
		return v
	}
}

func isNumber(s string) bool {
	if s == "" || !(s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) {
		return false
	}
	var n json.Number
	return json.Unmarshal([]byte(s), &n) == nil
}

// ToTree turns a state (state.State, a JSON document) into a Tree, numbers kept as
// written.
func ToTree(v any) (Tree, error) {
	b, ok := v.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, err
		}
	}
	var t Tree
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&t); err != nil {
		return nil, err
	}
	if t == nil {
		t = Tree{}
	}
	return t, nil
}
