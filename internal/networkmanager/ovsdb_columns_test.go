package networkmanager

import (
	"testing"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// An OVS bridge's and interface's ovs-db keys go into the profile over those its base has,
// and read back from it.
func TestOVSDBColumnsInProfile(t *testing.T) {
	s, err := state.Parse([]byte(`interfaces:
- {name: br1, type: ovs-bridge, state: up, ovs-db: {external_ids: {owner: team-a}, other_config: {stp-priority: 4096}},
   bridge: {port: [{name: eth1}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	it := s.Interfaces[0]
	base := settings{}
	base.set("connection", "type", "ovs-bridge")
	base.set(settingOVSExternalIDs, "data", map[string]string{"rack": "r7", "owner": "someone"})
	p, err := buildProfile(it, state.OVSBridge, base, "", profileExtras{}, "u")
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := p[settingOVSExternalIDs]["data"].Value().(map[string]string)
	if len(ids) != 2 || ids["owner"] != "team-a" || ids["rack"] != "r7" {
		t.Errorf("external_ids %v, want the base's rack and the state's owner", ids)
	}
	if other, _ := p[settingOVSOtherConfig]["data"].Value().(map[string]string); other["stp-priority"] != "4096" {
		t.Errorf("other_config %v: the number as its string", other)
	}
	got := state.Interface{Name: "br1", Type: state.OVSBridge, State: state.Up, Section: it.Section, OVSDB: readOVSDB(p)}
	if diffs := state.Verify(s, state.State{Interfaces: []state.Interface{got}}); len(diffs) > 0 {
		t.Errorf("read back: %v", diffs)
	}
	got.OVSDB.ExternalIDs["owner"] = "team-b"
	if diffs := state.Verify(s, state.State{Interfaces: []state.Interface{got}}); len(diffs) != 1 {
		t.Errorf("another owner: diffs %v, want one at br1.ovs-db.external_ids.owner", diffs)
	}
	if readOVSDB(settings{}) != nil {
		t.Error("a profile without the settings reads as having columns")
	}
}

// An OVS bond's ovs-db goes on its OVS port's profile, and reads back with the bond.
func TestOVSBondOVSDB(t *testing.T) {
	b := &state.OVSBond{Mode: "active-backup", Port: []state.OVSBondPort{{Name: "eth1"}, {Name: "eth2"}},
		OVSDB: &state.OVSDBColumns{ExternalIDs: state.OVSDBMap{"team": "b"}}}
	s := settings{}
	setOVSBond(s, b)
	if ids, _ := s[settingOVSExternalIDs]["data"].Value().(map[string]string); ids["team"] != "b" {
		t.Errorf("the port's external_ids %v", ids)
	}
	got := ovsPortBond(s, []string{"eth1", "eth2"})
	if got == nil || got.OVSDB == nil || got.OVSDB.ExternalIDs["team"] != "b" {
		t.Errorf("read back %+v", got)
	}
}
