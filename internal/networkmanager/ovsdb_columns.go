package networkmanager

import (
	"maps"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// The settings NetworkManager writes an OVS profile's OVSDB columns from: the row's
// external_ids (since 1.30) and other_config (since 1.42), each a "data" dictionary.
const (
	settingOVSExternalIDs = "ovs-external-ids"
	settingOVSOtherConfig = "ovs-other-config"
)

// setOVSDB puts the columns' keys into the profile, over those its base has.
func setOVSDB(s settings, c *state.OVSDBColumns) {
	if c == nil {
		return
	}
	for _, col := range []struct {
		setting string
		keys    state.OVSDBMap
	}{{settingOVSExternalIDs, c.ExternalIDs}, {settingOVSOtherConfig, c.OtherConfig}} {
		if col.keys == nil {
			continue
		}
		data := map[string]string{}
		if base, ok := s[col.setting]["data"].Value().(map[string]string); ok {
			maps.Copy(data, base)
		}
		maps.Copy(data, col.keys)
		s.set(col.setting, "data", data)
	}
}

// readOVSDB is the columns the applied profile of an OVS bridge or interface sets; nil for
// none.
func readOVSDB(a settings) *state.OVSDBColumns {
	ids, _ := a[settingOVSExternalIDs]["data"].Value().(map[string]string)
	other, _ := a[settingOVSOtherConfig]["data"].Value().(map[string]string)
	if len(ids) == 0 && len(other) == 0 {
		return nil
	}
	c := &state.OVSDBColumns{}
	if len(ids) > 0 {
		c.ExternalIDs = state.OVSDBMap(ids)
	}
	if len(other) > 0 {
		c.OtherConfig = state.OVSDBMap(other)
	}
	return c
}
