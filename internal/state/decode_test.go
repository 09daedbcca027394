package state

import (
	"reflect"
	"testing"
)

// TestDecodedTypesAreTagged walks every struct the decoder reaches from State: each
// integer has its bounds (or a format that has them), and no key is known twice where
// it is read.
func TestDecodedTypesAreTagged(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(rt reflect.Type) {
		for rt.Kind() == reflect.Pointer || rt.Kind() == reflect.Slice {
			rt = rt.Elem()
		}
		if rt.Kind() != reflect.Struct || seen[rt] {
			return
		}
		seen[rt] = true
		if reflect.PointerTo(rt).Implements(reflect.TypeOf((*valueDecoder)(nil)).Elem()) && rt != reflect.TypeOf(STP{}) {
			return
		}
		keys := map[string]fieldSpec{}
		for _, s := range specsOf(rt) {
			f := rt.Field(s.index)
			if prev, dup := keys[s.key]; dup && prev.under == s.under && prev.only == s.only {
				t.Errorf("%s: key %q twice in the same place", rt.Name(), s.key)
			}
			keys[s.key] = s
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Int && s.refused == "" && s.ranges == nil && s.via == "" {
				t.Errorf("%s.%s: an integer without range= or via=", rt.Name(), f.Name)
			}
			if s.refused == "" && !s.ignored {
				walk(f.Type)
			}
		}
	}
	walk(reflect.TypeOf(State{}))
	for _, k := range sectionKeys {
		walk(reflect.TypeOf(sectionFor(k)))
	}
	if len(seen) < 25 {
		t.Errorf("walked only %d types", len(seen))
	}
}
