package state

import (
	"maps"
	"slices"
)

// OVSDBColumns is an Open vSwitch bridge's, bond's or interface's ovs-db: keys of its OVSDB row's
// external_ids and other_config columns, which NetworkManager writes from the profile
// (ovs-external-ids, and ovs-other-config from 1.42).
type OVSDBColumns struct {
	ExternalIDs OVSDBMap `json:"external_ids,omitempty"`
	OtherConfig OVSDBMap `json:"other_config,omitempty"`
}

// OVSDBMap is one such column's keys. nmstate writes a number or a boolean as its string.
type OVSDBMap map[string]string

func (m *OVSDBMap) decodeValue(d *decoder, path string, v any) bool {
	om, ok := d.scalars(path, v)
	*m = om
	return ok
}

// validate: the keys NetworkManager keeps for itself are not a profile's to set.
func (c *OVSDBColumns) validate(p string, fail failFunc) {
	for _, k := range slices.Sorted(maps.Keys(c.ExternalIDs)) {
		if len(k) > 3 && k[:3] == "NM." {
			fail(join(join(p, "external_ids"), k), "NetworkManager's own key (NM.*): it sets it on every row it makes")
		}
	}
}

// verifyOVSDB: every key want gives has its value in got.
func verifyOVSDB(add addFunc, path string, want, got *OVSDBColumns) {
	if got == nil {
		got = &OVSDBColumns{}
	}
	for _, col := range []struct {
		name      string
		want, got OVSDBMap
	}{{"external_ids", want.ExternalIDs, got.ExternalIDs}, {"other_config", want.OtherConfig, got.OtherConfig}} {
		for _, k := range slices.Sorted(maps.Keys(col.want)) {
			if v, ok := col.got[k]; !ok || v != col.want[k] {
				add("%s.%s.%s: %s, want %s", path, col.name, k, orNone(v), col.want[k])
			}
		}
	}
}
