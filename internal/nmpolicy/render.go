package nmpolicy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/api/field"
)

// Reference is a "{{ capture.NAME.path }}" in a desired state.
type Reference struct {
	// Field is where it is, as a desiredState field path (interfaces[0].name).
	Field   string
	Capture string
	Path    []string
	// Whole: the reference is the whole value, which it replaces with whatever it
	// resolves to (an object, a list); otherwise it resolves to text within a string.
	Whole      bool
	start, end int // byte offsets of {{ and after }} in the string
}

// References finds every reference in a desired state (a JSON tree), checking their
// syntax. Errors name the field.
func References(desired any) ([]Reference, field.Errors) {
	var refs []Reference
	var errs field.Errors
	walk(desired, "", func(path, s string) {
		r, err := parseRefs(path, s)
		if err != nil {
			errs = append(errs, &field.Error{Path: path, Reason: err.Error()})
		}
		refs = append(refs, r...)
	})
	return refs, errs
}

// walk calls fn for every string in v, with its field path; keys in order.
func walk(v any, path string, fn func(path, s string)) {
	switch n := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(n)) {
			walk(n[k], join(path, k), fn)
		}
	case []any:
		for i, e := range n {
			walk(e, fmt.Sprintf("%s[%d]", path, i), fn)
		}
	case string:
		fn(path, n)
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// parseRefs reads the references in one string.
func parseRefs(path, s string) ([]Reference, error) {
	var refs []Reference
	rest := 0
	for {
		opening := strings.Index(s[rest:], "{{")
		closing := strings.Index(s[rest:], "}}")
		switch {
		case opening < 0 && closing < 0:
			return refs, nil
		case opening < 0 || (closing >= 0 && closing < opening):
			return nil, fmt.Errorf("%q: }} without {{", s)
		case closing < 0:
			return nil, fmt.Errorf("%q: {{ without }}", s)
		}
		start, end := rest+opening, rest+closing+2
		inner := strings.TrimSpace(s[start+2 : end-2])
		if strings.Contains(inner, "{{") {
			return nil, fmt.Errorf("%q: {{ inside a reference", s)
		}
		p := splitPath(inner)
		switch {
		case inner == "":
			return nil, fmt.Errorf("%q: nothing between {{ and }}: give capture.NAME.PATH", s)
		case strings.ContainsAny(inner, " \t"):
			return nil, fmt.Errorf("%q: one path between {{ and }}: capture.NAME.PATH", s)
		case p[0] != "capture":
			return nil, fmt.Errorf("%q: a reference reads a capture: {{ capture.NAME.PATH }}, not %q", s, inner)
		case len(p) < 3 || slices.Contains(p, ""):
			return nil, fmt.Errorf("%q: a reference is {{ capture.NAME.PATH }}", s)
		}
		refs = append(refs, Reference{Field: path, Capture: p[1], Path: p[2:], start: start, end: end,
			Whole: strings.TrimSpace(s) == s[start:end]})
		rest = end
	}
}

// Check checks a desired state's references against a policy's captures without their
// values (offline): syntax, and that each names a capture the policy has.
func Check(desired any, captures map[string]string) ([]Reference, field.Errors) {
	refs, errs := References(desired)
	for _, r := range refs {
		if _, ok := captures[r.Capture]; !ok {
			errs = append(errs, &field.Error{Path: r.Field,
				Reason: fmt.Sprintf("references capture %q, which spec.capture does not define", r.Capture)})
		}
	}
	return refs, errs
}

// Render replaces every reference in a desired state (a JSON tree) with what it resolves
// to in results. A whole-value reference takes the value's type; one within a string
// must resolve to text, a number or a boolean.
func Render(desired any, results map[string]Tree) (any, field.Errors) {
	var errs field.Errors
	out := render(desired, "", results, &errs)
	return out, errs
}

func render(v any, path string, results map[string]Tree, errs *field.Errors) any {
	switch n := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(n))
		for _, k := range slices.Sorted(maps.Keys(n)) {
			out[k] = render(n[k], join(path, k), results, errs)
		}
		return out
	case []any:
		out := make([]any, len(n))
		for i, e := range n {
			out[i] = render(e, fmt.Sprintf("%s[%d]", path, i), results, errs)
		}
		return out
	case string:
		refs, err := parseRefs(path, n)
		if err != nil {
			*errs = append(*errs, &field.Error{Path: path, Reason: err.Error()})
			return n
		}
		if len(refs) == 0 {
			return n
		}
		var b strings.Builder
		last := 0
		for _, r := range refs {
			v, err := r.resolve(results)
			if err != nil {
				*errs = append(*errs, &field.Error{Path: path, Reason: err.Error()})
				return n
			}
			if r.Whole && len(refs) == 1 {
				return v
			}
			var text string
			switch t := v.(type) {
			case string:
				text = t
			case json.Number:
				text = t.String()
			case bool:
				text = strconv.FormatBool(t)
			default:
				*errs = append(*errs, &field.Error{Path: path, Reason: fmt.Sprintf(
					"%q resolves to %s, which cannot be part of a string: make the reference the whole value", n, kind(v))})
				return n
			}
			b.WriteString(n[last:r.start])
			b.WriteString(text)
			last = r.end
		}
		b.WriteString(n[last:])
		return b.String()
	default:
		return v
	}
}

func (r Reference) resolve(results map[string]Tree) (any, error) {
	t, ok := results[r.Capture]
	if !ok {
		return nil, fmt.Errorf("references capture %q, which spec.capture does not define", r.Capture)
	}
	v, err := lookup(t, r.Path)
	if err != nil {
		return nil, fmt.Errorf("capture.%s.%s: %v", r.Capture, strings.Join(r.Path, "."), err)
	}
	return v, nil
}

func kind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case nil:
		return "null"
	}
	return "a value"
}

// RenderDocument is Render on a desired state document (YAML or JSON); the result is
// JSON. A document without references comes back as it was.
func RenderDocument(doc []byte, results map[string]Tree) ([]byte, field.Errors) {
	if len(bytes.TrimSpace(doc)) == 0 || !(bytes.Contains(doc, []byte("{{")) || bytes.Contains(doc, []byte("}}"))) {
		return doc, nil
	}
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, field.Errors{{Path: "desiredState", Reason: "not valid YAML: " + err.Error()}}
	}
	tree, err := decode(j)
	if err != nil {
		return nil, field.Errors{{Path: "desiredState", Reason: "not valid YAML: " + err.Error()}}
	}
	if refs, errs := References(tree); errs != nil {
		return nil, errs
	} else if len(refs) == 0 {
		return doc, nil
	}
	out, errs := Render(tree, results)
	if errs != nil {
		return nil, errs
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, field.Errors{{Path: "desiredState", Reason: err.Error()}}
	}
	return b, nil
}

func decode(j []byte) (any, error) {
	var tree any
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	err := dec.Decode(&tree)
	return tree, err
}

// Stub removes every value holding a reference (or a broken one) from a desired state (a
// JSON tree) for checks without the captures' results: the rest can be parsed, and what
// a check says about a stubbed field (or its parents) is moot until the node renders it.
// A stubbed list entry becomes an empty object, keeping the indexes of the others. It
// returns the stubbed fields' paths.
func Stub(desired any) (any, []string) {
	var stubbed []string
	out := stub(desired, "", &stubbed)
	return out, stubbed
}

func stub(v any, path string, stubbed *[]string) any {
	templated := func(v any) bool {
		s, ok := v.(string)
		return ok && (strings.Contains(s, "{{") || strings.Contains(s, "}}"))
	}
	switch n := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for _, k := range slices.Sorted(maps.Keys(n)) {
			if templated(n[k]) {
				*stubbed = append(*stubbed, join(path, k))
				continue
			}
			out[k] = stub(n[k], join(path, k), stubbed)
		}
		return out
	case []any:
		out := make([]any, len(n))
		for i, e := range n {
			p := fmt.Sprintf("%s[%d]", path, i)
			if templated(e) {
				*stubbed = append(*stubbed, p)
				out[i] = map[string]any{}
				continue
			}
			out[i] = stub(e, p, stubbed)
		}
		return out
	default:
		return v
	}
}

// Moot says whether a problem found at field path (a check of a stubbed state) is about
// a stubbed field, inside one, or about one of its parents.
func Moot(path string, stubbed []string) bool {
	for _, f := range stubbed {
		if within(path, f) || within(f, path) {
			return true
		}
	}
	return false
}

// within: path is field or inside it.
func within(path, field string) bool {
	return path == field || strings.HasPrefix(path, field+".") || strings.HasPrefix(path, field+"[") || field == ""
}

// DecodeDocument reads a desired state document (YAML or JSON) as a JSON tree.
func DecodeDocument(doc []byte) (any, error) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	return decode(j)
}
