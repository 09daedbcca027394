package state

import (
	"encoding/json"
	"reflect"
	"slices"
)

// Section is what an interface type adds to the fields every interface has: a bond's
// link-aggregation, a VLAN's vlan. Each kind is one type in its own file (kind_*.go),
// which registers it; nothing else in this package names a kind's section.
type Section interface {
	// Key is the section's key in an interface: "link-aggregation".
	Key() string
	// Types are the interface types that have the section; an interface given without a
	// type takes the first.
	Types() []InterfaceType
	// references calls ref for each of the section's fields that names another interface,
	// with its path under the section.
	references(ref func(kind RefKind, field string, at *string))
	// validate checks what the section holds, at p (its own path), for it, which is not
	// being removed.
	validate(it Interface, p string, fail failFunc)
	// verify compares the section of it with got, the one the node runs (nil for none).
	verify(add addFunc, it Interface, got Section)
}

type (
	failFunc = func(path, format string, args ...any)
	addFunc  = func(format string, args ...any)
)

var (
	sectionKinds = map[string]func() Section{}
	sectionKeys  []string // sorted
)

// registerSection adds a kind's section, and its types to SupportedTypes.
func registerSection(newSection func() Section) {
	s := newSection()
	sectionKinds[s.Key()] = newSection
	sectionKeys = append(sectionKeys, s.Key())
	slices.Sort(sectionKeys)
	for _, t := range s.Types() {
		if !slices.Contains(SupportedTypes, t) {
			SupportedTypes = append(SupportedTypes, t)
		}
	}
}

// sectionFor is a new, empty section of key, nil for none.
func sectionFor(key string) Section {
	if f := sectionKinds[key]; f != nil {
		return f()
	}
	return nil
}

// typeOfSection is the type an interface with section key and no type has.
func typeOfSection(key string) InterfaceType {
	if s := sectionFor(key); s != nil {
		return s.Types()[0]
	}
	return ""
}

// fits says whether s belongs to interfaces of type t.
func fits(s Section, t InterfaceType) bool { return slices.Contains(s.Types(), t) }

// extraKeys are the section keys, known on every interface besides its fields.
func (*Interface) extraKeys() []string { return sectionKeys }

// decodeExtra reads the section under key; the interface keeps the one of its type.
func (it *Interface) decodeExtra(d *decoder, path, key string, v any) {
	s := sectionFor(key)
	if d.value(path, v, reflect.ValueOf(s).Elem(), nil) && fits(s, d.typ) {
		it.Section = s
	}
}

// interfaceNoMethods is Interface without its methods, for encoding/json.
type interfaceNoMethods Interface

// MarshalJSON writes the interface's section under its key, after the other fields.
func (it Interface) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(interfaceNoMethods(it))
	if err != nil || it.Section == nil || reflect.ValueOf(it.Section).IsNil() {
		return b, err
	}
	sec, err := json.Marshal(it.Section)
	if err != nil {
		return nil, err
	}
	key, _ := json.Marshal(it.Section.Key())
	out := b[:len(b)-1]
	if len(out) > 1 {
		out = append(out, ',')
	}
	out = append(append(append(append(out, key...), ':'), sec...), '}')
	return out, nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (it *Interface) UnmarshalJSON(b []byte) error {
	var f interfaceNoMethods
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	for _, k := range sectionKeys {
		r, ok := raw[k]
		if !ok {
			continue
		}
		s := sectionFor(k)
		if err := json.Unmarshal(r, s); err != nil {
			return err
		}
		if f.Section == nil || fits(s, f.Type) {
			f.Section = s
		}
	}
	*it = Interface(f)
	return nil
}

// deepCopy is a copy of v sharing nothing it can change with v: pointers, slices and
// maps are copied too.
func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		c := reflect.New(v.Type().Elem())
		c.Elem().Set(deepCopy(v.Elem()))
		return c
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		c := reflect.New(v.Type()).Elem()
		c.Set(deepCopy(v.Elem()))
		return c
	case reflect.Struct:
		c := reflect.New(v.Type()).Elem()
		c.Set(v)
		for i := range v.NumField() {
			if c.Field(i).CanSet() {
				c.Field(i).Set(deepCopy(v.Field(i)))
			}
		}
		return c
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			c.Index(i).Set(deepCopy(v.Index(i)))
		}
		return c
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			c.SetMapIndex(it.Key(), deepCopy(it.Value()))
		}
		return c
	}
	return v
}

// copySection is a copy of s that shares nothing with it.
func copySection(s Section) Section {
	if s == nil {
		return nil
	}
	return deepCopy(reflect.ValueOf(s)).Interface().(Section)
}

// SectionOf is it's section as a T: nil when it has none, or one of another kind.
func SectionOf[T Section](it Interface) T {
	s, _ := it.Section.(T)
	return s
}

// Sections are an empty section of each kind registered, in key order.
func Sections() []Section {
	out := make([]Section, len(sectionKeys))
	for i, k := range sectionKeys {
		out[i] = sectionFor(k)
	}
	return out
}
