package state

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/nmoverlay/nmoverlay/api/field"
)

// The decoder reads a desired state into the types of this package, driven by them: a
// struct's keys are its fields' json names, and its `nmstate` tag says what Go's types
// cannot, as comma-separated options:
//
//	required            the key must be given
//	range=MIN..MAX      an integer's bounds; u32 is 4294967295
//	range@KEY=MIN..MAX  the bounds inside section KEY (an ipv6 prefix length)
//	alias=KEY           nmstate's other spelling of the key (ports); giving both is an error
//	nonnil              a list that is empty rather than absent when not given
//	one-of=A|B          a string's values
//	empty-unset         an empty string is as if the key were not given (nmstate's '')
//	only=TYPE, only=!TYPE  the key is known only on (or not on) interfaces of TYPE
//	under=KEY           the key is known only inside section KEY
//	via=FORMAT          an integer nmstate also takes as text: hex32 or pkey
//	ignored             accepted and dropped: what a node reports and nmstate ignores
//	                    when it applies (a state copied from a NodeNetworkState)
//	needs=CAPABILITY    the key, given, needs a capability not every node has
//
// A `refused:"REASON"` tag marks a key nmstate has and nmoverlay does not apply: on a
// blank field for a key nmoverlay does not model (`_ struct{} key:"fec" refused:"..."`),
// or on a field that is current state only. Its only= and under= options say where it
// is refused. A blank field of a struct type is a section whose keys are all refused.
//
// Types that need more implement valueDecoder (a value in a form tags cannot say) or
// decodeChecker (what fields say together, checked once they are read).

// rootPath names the whole document in errors about its own keys.
const rootPath = "desiredState"

// valueDecoder is a type that reads its own value.
type valueDecoder interface {
	decodeValue(d *decoder, path string, v any) bool
}

// decodeChecker is a struct that checks its decoded fields together; m is the mapping
// they were read from, so that a check can tell a key given from a zero value.
type decodeChecker interface {
	checkDecoded(d *decoder, path string, m map[string]any)
}

// extraKeyed is a struct with keys besides its fields' (an interface's sections, which
// each kind registers).
type extraKeyed interface {
	extraKeys() []string
	decodeExtra(d *decoder, path, key string, v any)
}

// typeFacet is the struct whose decoding fixes the interface type that only= options
// test (Interface).
type typeFacet interface {
	typeFrom(m map[string]any) InterfaceType
}

type decoder struct {
	errs  field.Errors
	needs []Need
	// typ is the type of the interface being read; keys the section keys from the top.
	typ  InterfaceType
	keys []string
}

func (d *decoder) fail(path, format string, args ...any) {
	d.errs = append(d.errs, &field.Error{Path: path, Reason: fmt.Sprintf(format, args...)})
}

// under says whether the value being read is inside section key.
func (d *decoder) under(key string) bool { return slices.Contains(d.keys, key) }

// fieldSpec is one key of a struct, read from its field's tags.
type fieldSpec struct {
	key, alias string
	index      int // the field's; blank fields are read into a throwaway
	blank      bool
	refused    string
	required   bool
	nonnil     bool
	ignored    bool
	ranges     map[string][2]int64 // "" and "@KEY"
	oneOf      []string
	emptyUnset bool
	only       string
	under      string
	via        string
	needs      Capability
}

var specCache sync.Map // reflect.Type -> []fieldSpec

// specsOf reads a struct type's keys from its tags, once.
func specsOf(t reflect.Type) []fieldSpec {
	if s, ok := specCache.Load(t); ok {
		return s.([]fieldSpec)
	}
	var specs []fieldSpec
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Name == "_" {
			name = f.Tag.Get("key")
		}
		if name == "-" || name == "" {
			continue
		}
		s := fieldSpec{key: name, index: i, blank: f.Name == "_", refused: f.Tag.Get("refused")}
		for _, opt := range strings.Split(f.Tag.Get("nmstate"), ",") {
			k, v, _ := strings.Cut(opt, "=")
			switch {
			case k == "":
			case k == "required":
				s.required = true
			case k == "nonnil":
				s.nonnil = true
			case k == "ignored":
				s.ignored = true
			case k == "empty-unset":
				s.emptyUnset = true
			case k == "alias":
				s.alias = v
			case k == "one-of":
				s.oneOf = strings.Split(v, "|")
			case k == "only":
				s.only = v
			case k == "under":
				s.under = v
			case k == "via":
				s.via = v
			case k == "needs":
				if !slices.Contains(Capabilities, Capability(v)) {
					panic(fmt.Sprintf("state: %s.%s: needs unknown capability %q", t.Name(), f.Name, v))
				}
				s.needs = Capability(v)
			case k == "range" || strings.HasPrefix(k, "range@"):
				if s.ranges == nil {
					s.ranges = map[string][2]int64{}
				}
				s.ranges[strings.TrimPrefix(strings.TrimPrefix(k, "range"), "@")] = parseRange(v)
			default:
				panic(fmt.Sprintf("state: %s.%s: unknown nmstate tag option %q", t.Name(), f.Name, opt))
			}
		}
		specs = append(specs, s)
	}
	specCache.Store(t, specs)
	return specs
}

func parseRange(s string) [2]int64 {
	lo, hi, _ := strings.Cut(s, "..")
	var r [2]int64
	for i, b := range []string{lo, hi} {
		if b == "u32" {
			r[i] = math.MaxUint32
			continue
		}
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil {
			panic("state: bad range " + s)
		}
		r[i] = n
	}
	return r
}

// applies says whether the key is one of the struct's where it is being read.
func (d *decoder) applies(s fieldSpec) bool {
	if s.under != "" && !d.under(s.under) {
		return false
	}
	if neg, ok := strings.CutPrefix(s.only, "!"); ok {
		return d.typ != InterfaceType(neg)
	}
	return s.only == "" || d.typ == InterfaceType(s.only)
}

// bounds are the integer's range where it is read.
func (d *decoder) bounds(s *fieldSpec) (int64, int64) {
	if s != nil {
		for k, r := range s.ranges {
			if k != "" && d.under(k) {
				return r[0], r[1]
			}
		}
		if r, ok := s.ranges[""]; ok {
			return r[0], r[1]
		}
	}
	return math.MinInt64, math.MaxInt64
}

// object checks v is a mapping with only the allowed keys; refused keys get their reason.
func (d *decoder) object(path string, v any, allowed []string, refused map[string]string) (map[string]any, bool) {
	return d.objectOf(path, v, allowed, allowed, refused)
}

// objectOf is object, naming the keys shown to someone who wrote an unknown one: those
// nmstate only reports are accepted and not offered.
func (d *decoder) objectOf(path string, v any, allowed, shown []string, refused map[string]string) (map[string]any, bool) {
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
		if why, ok := refused[k]; ok {
			d.fail(join(path, k), "not supported by nmoverlay: %s", why)
			continue
		}
		d.fail(join(path, k), "unknown field (known here: %s)", strings.Join(shown, ", "))
	}
	return m, true
}

// structure reads the mapping v into the struct dst.
func (d *decoder) structure(path string, v any, dst reflect.Value) bool {
	specs := specsOf(dst.Type())
	if tf, ok := dst.Addr().Interface().(typeFacet); ok {
		if m, ok := v.(map[string]any); ok {
			defer func(prev InterfaceType) { d.typ = prev }(d.typ)
			d.typ = tf.typeFrom(m)
		}
	}
	var known, shown []string
	refused := map[string]string{}
	for _, s := range specs {
		switch {
		case !d.applies(s):
		case s.refused != "":
			refused[s.key] = s.refused
		default:
			known = append(known, s.key)
			if s.alias != "" {
				known = append(known, s.alias)
			}
			if !s.ignored || !s.blank {
				shown = append(shown, s.key)
				if s.alias != "" {
					shown = append(shown, s.alias)
				}
			}
		}
	}
	extra, _ := dst.Addr().Interface().(extraKeyed)
	if extra != nil {
		known = append(known, extra.extraKeys()...)
		shown = append(shown, extra.extraKeys()...)
	}
	m, ok := d.objectOf(path, v, known, shown, refused)
	if !ok {
		return false
	}
	for i := range specs {
		s := &specs[i]
		if !d.applies(*s) || s.refused != "" {
			continue
		}
		key := s.key
		val, given := m[key]
		if a, has := m[s.alias]; s.alias != "" && has {
			if given {
				d.fail(child(path, s.alias), "give %s or %s, not both", s.key, s.alias)
			}
			key, val, given = s.alias, a, true
		}
		switch {
		case !given && s.required:
			d.fail(child(path, key), "required")
		case !given && s.nonnil:
			dst.Field(s.index).Set(reflect.MakeSlice(dst.Field(s.index).Type(), 0, 0))
		case !given || s.ignored:
		default:
			target := dst.Field(s.index)
			if s.blank {
				target = reflect.New(target.Type()).Elem()
			}
			d.keys = append(d.keys, key)
			if d.value(child(path, key), val, target, s) && s.needs != "" {
				d.needs = append(d.needs, Need{Path: child(path, key), Capability: s.needs})
			}
			d.keys = d.keys[:len(d.keys)-1]
		}
	}
	if extra != nil {
		for _, k := range extra.extraKeys() {
			if v, given := m[k]; given {
				d.keys = append(d.keys, k)
				extra.decodeExtra(d, child(path, k), k, v)
				d.keys = d.keys[:len(d.keys)-1]
			}
		}
	}
	if c, ok := dst.Addr().Interface().(decodeChecker); ok {
		c.checkDecoded(d, path, m)
	}
	return true
}

// value reads v into dst, as s (the field's spec, nil for a list's element) says.
func (d *decoder) value(path string, v any, dst reflect.Value, s *fieldSpec) bool {
	if vd, ok := dst.Addr().Interface().(valueDecoder); ok {
		return vd.decodeValue(d, path, v)
	}
	switch dst.Kind() {
	case reflect.Pointer:
		e := reflect.New(dst.Type().Elem())
		if !d.value(path, v, e.Elem(), s) {
			return false
		}
		dst.Set(e)
		return true
	case reflect.Struct:
		return d.structure(path, v, dst)
	case reflect.Slice:
		l, ok := v.([]any)
		if !ok {
			d.fail(path, "must be a list, got %s", describe(v))
			return false
		}
		if len(l) == 0 && (s == nil || !s.nonnil) {
			return true
		}
		out := reflect.MakeSlice(dst.Type(), len(l), len(l))
		for i, e := range l {
			d.value(index(path, i), e, out.Index(i), nil)
		}
		dst.Set(out)
		return true
	case reflect.String:
		str, ok := v.(string)
		if !ok {
			d.fail(path, "must be a string, got %s", describe(v))
			return false
		}
		if s != nil && s.emptyUnset && str == "" {
			return false
		}
		if s != nil && s.oneOf != nil && !slices.Contains(s.oneOf, str) {
			d.fail(path, "%q is not one of %s", str, strings.Join(s.oneOf, ", "))
			return false
		}
		dst.SetString(str)
		return true
	case reflect.Bool:
		b := d.boolean(path, v)
		if b == nil {
			return false
		}
		dst.SetBool(*b)
		return true
	case reflect.Int:
		var n *int
		if s != nil && s.via != "" {
			n = viaFormats[s.via](d, path, v, s)
		} else {
			lo, hi := d.bounds(s)
			n = d.integer(path, v, lo, hi)
		}
		if n == nil {
			return false
		}
		dst.SetInt(int64(*n))
		return true
	}
	panic(fmt.Sprintf("state: %s: no decoding for %s", path, dst.Type()))
}

// viaFormats read integers nmstate also takes as text.
var viaFormats = map[string]func(d *decoder, path string, v any, s *fieldSpec) *int{
	// hex32: a 32-bit unsigned integer, also as a string, decimal or 0x hex (firewall
	// marks are written both ways).
	"hex32": func(d *decoder, path string, v any, s *fieldSpec) *int {
		if str, ok := v.(string); ok {
			n, err := strconv.ParseUint(str, 0, 32)
			if err != nil {
				d.fail(path, "%q is not a 32-bit unsigned integer (decimal or 0x hex)", str)
				return nil
			}
			i := int(n)
			return &i
		}
		return d.integer(path, v, 0, math.MaxUint32)
	},
	// pkey: an InfiniBand partition key, "0xffff" or a number.
	"pkey": func(d *decoder, path string, v any, _ *fieldSpec) *int {
		text := strings.ToLower(d.scalar(path, v))
		base := 10
		if strings.HasPrefix(text, "0x") {
			base = 16
		}
		n, err := strconv.ParseInt(strings.TrimPrefix(text, "0x"), base, 32)
		if err != nil || n < 0 || n > DefaultPKey {
			d.fail(path, "%q is not a partition key (0x0001 to 0xffff)", text)
			return nil
		}
		i := int(n)
		return &i
	},
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

// scalars reads a mapping of strings, numbers or booleans (bond options, OVSDB columns),
// each as its string, in key order.
func (d *decoder) scalars(path string, v any) (map[string]string, bool) {
	om, ok := v.(map[string]any)
	if !ok {
		d.fail(path, "must be a mapping, got %s", describe(v))
		return nil, false
	}
	out := make(map[string]string, len(om))
	for _, k := range slices.Sorted(maps.Keys(om)) {
		out[k] = d.scalar(join(path, k), om[k])
	}
	return out, true
}

// child is the path of key inside path; the document's own keys are named bare.
func child(path, key string) string {
	if path == rootPath {
		return key
	}
	return join(path, key)
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
