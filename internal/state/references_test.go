package state

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestReferences(t *testing.T) {
	ref := func(kind RefKind, field, name string) string { return fmt.Sprintf("%d %s=%s", kind, field, name) }
	for _, tc := range []struct {
		name string
		it   Interface
		want []string
	}{
		{name: "a VLAN: its base", it: Interface{Section: &VLANConfig{BaseIface: "eth1"}}, want: []string{ref(RefBase, "vlan.base-iface", "eth1")}},
		{name: "a MAC-VLAN: its base", it: Interface{Section: &MACVLANConfig{BaseIface: "eth1"}}, want: []string{ref(RefBase, "mac-vlan.base-iface", "eth1")}},
		{name: "a VXLAN without a base: none", it: Interface{Section: &VXLANConfig{ID: 7}}},
		{name: "a bond: its ports", it: Interface{Section: &BondConfig{Port: []string{"eth1", "eth2"}}},
			want: []string{ref(RefPort, "link-aggregation.port[0]", "eth1"), ref(RefPort, "link-aggregation.port[1]", "eth2")}},
		{name: "an OVS bridge: its ports, an OVS bond's members in its place",
			it: Interface{Section: &BridgeConfig{Port: []BridgePort{{Name: "eth1"}, {Name: "bond1", LinkAggregation: &OVSBond{Port: []OVSBondPort{{Name: "eth2"}, {Name: "eth3"}}}}}}},
			want: []string{ref(RefPort, "bridge.port[0]", "eth1"), ref(RefPort, "bridge.port[1].link-aggregation.port[0]", "eth2"),
				ref(RefPort, "bridge.port[1].link-aggregation.port[1]", "eth3")}},
		{name: "a VRF: its ports", it: Interface{Section: &VRFConfig{Port: []string{"eth1"}}}, want: []string{ref(RefPort, "vrf.port[0]", "eth1")}},
		{name: "a MAC source", it: Interface{CopyMACFrom: ptr("eth1"), Section: &BondConfig{Port: []string{"eth1"}}},
			want: []string{ref(RefPort, "link-aggregation.port[0]", "eth1"), ref(RefMACSource, "copy-mac-from", "eth1")}},
		{name: "a port: its controller", it: Interface{Controller: ptr("bond0")}, want: []string{ref(RefController, "controller", "bond0")}},
		{name: "a port of none: none", it: Interface{Controller: ptr("")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range tc.it.References() {
				got = append(got, ref(r.Kind, r.Field, r.Name))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("References:\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

// TestReferencesCoverEveryKind: a field that names another interface (a base-iface, a
// port, a port's name), in any registered section or in the fields every interface has,
// is walked by References. A kind added with such a field and not walked by its
// references fails here: validation, ordering and renaming would not see it.
func TestReferencesCoverEveryKind(t *testing.T) {
	for _, sec := range Sections() {
		t.Run(sec.Key(), func(t *testing.T) {
			names := map[string]bool{}
			fill(reflect.ValueOf(sec).Elem(), sec.Key(), names)
			if len(names) == 0 && sec.Key() != "veth" && sec.Key() != "patch" && sec.Key() != "libreswan" {
				t.Errorf("%s names no interface: fill misses its fields", sec.Key())
			}
			it := Interface{Type: sec.Types()[0], Section: sec}
			for _, r := range it.References() {
				if !strings.HasPrefix(r.Name, r.Field) {
					t.Errorf("reference %s names %s: the walker and the path disagree", r.Field, r.Name)
				}
				delete(names, r.Name)
			}
			if len(names) > 0 {
				t.Errorf("References does not walk %v", slices.Sorted(maps.Keys(names)))
			}
		})
	}
	typ := reflect.TypeOf(Interface{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Type.Kind() != reflect.Pointer || f.Type.Elem().Kind() != reflect.Struct {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			it := Interface{}
			section := reflect.New(f.Type.Elem())
			names := map[string]bool{}
			fill(section.Elem(), "", names)
			reflect.ValueOf(&it).Elem().Field(i).Set(section)
			for _, r := range it.References() {
				delete(names, r.Name)
			}
			if len(names) > 0 {
				t.Errorf("References does not walk %v of %s", slices.Sorted(maps.Keys(names)), f.Name)
			}
		})
	}
}

// fill sets, in v, every field that names an interface to a name of its own (recorded in
// names), and leaves the rest empty; lists get two entries.
func fill(v reflect.Value, path string, names map[string]bool) { fillDeep(v, path, names, true) }

// fillDeep is fill; shallow (deep false), it leaves v's sections (pointer fields) unset.
func fillDeep(v reflect.Value, path string, names map[string]bool, deep bool) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			tag := strings.Split(f.Tag.Get("json"), ",")[0]
			if !f.IsExported() || tag == "-" {
				continue
			}
			fp := path + "." + tag
			fv := v.Field(i)
			switch {
			case f.Type.Kind() == reflect.String && (tag == "base-iface" || tag == "port1" || tag == "port2" || tag == "name" && strings.HasSuffix(path, "]")):
				fv.SetString(fp)
				names[fp] = true
			case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.String && tag == "port":
				fv.Set(reflect.ValueOf([]string{fp + "[0]", fp + "[1]"}))
				names[fp+"[0]"], names[fp+"[1]"] = true, true
			case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct && tag == "port":
				// The first entry a plain port, the second with its sections (an OVS bond, whose
				// own name names an OVSDB port, no interface).
				s := reflect.MakeSlice(f.Type, 2, 2)
				fillDeep(s.Index(0), fp+"[0]", names, false)
				fill(s.Index(1), fp+"[1]", names)
				if s.Index(1).NumField() > 0 && hasSection(s.Index(1)) {
					delete(names, fp+"[1].name")
				}
				fv.Set(s)
			case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct && deep:
				p := reflect.New(f.Type.Elem())
				fill(p.Elem(), fp, names)
				fv.Set(p)
			}
		}
	}
}

// hasSection: a pointer field of v is set.
func hasSection(v reflect.Value) bool {
	for i := range v.NumField() {
		if v.Field(i).Kind() == reflect.Pointer && !v.Field(i).IsNil() {
			return true
		}
	}
	return false
}

// Renaming works on copies: the state renamed from keeps its names.
func TestRenamedLeavesTheOriginal(t *testing.T) {
	s := State{Interfaces: []Interface{
		{Name: "br0", Type: LinuxBridge, Section: &BridgeConfig{Port: []BridgePort{{Name: "eth1"}}}},
		{Name: "bond0", Type: Bond, Section: &BondConfig{Port: []string{"eth1"}}, CopyMACFrom: ptr("eth1")},
		{Name: "eth1.10", Type: VLAN, Section: &VLANConfig{BaseIface: "eth1", ID: 10}},
	}}
	r := s.Renamed("eth1", "enp7s0")
	for _, it := range r.Interfaces {
		for _, ref := range it.References() {
			if ref.Name != "enp7s0" {
				t.Errorf("renamed %s.%s = %q", it.Name, ref.Field, ref.Name)
			}
		}
	}
	for _, it := range s.Interfaces {
		for _, ref := range it.References() {
			if ref.Name != "eth1" {
				t.Errorf("the original %s.%s = %q: renaming changed it", it.Name, ref.Field, ref.Name)
			}
		}
	}
}
