package backend

import (
	"testing"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// A committed state that identifies its NIC by MAC address is compared with the NIC that
// has it now: without that, the drift check would look for an interface of the policy's
// name and report it missing.
func TestResolvedOn(t *testing.T) {
	committed, err := state.Parse([]byte(`{"interfaces":[{"name":"storage","identifier":"mac-address","mac-address":"02:00:00:5E:00:53","type":"ethernet","mtu":9000}]}`))
	if err != nil {
		t.Fatal(err)
	}
	mac, mtu, id := "02:00:00:5e:00:53", 9000, "storage"
	current := state.State{Interfaces: []state.Interface{
		{Name: "eth1", Type: state.Veth, MACAddress: ref("02:00:00:00:00:01")},
		{Name: "enp7s0", Type: state.Ethernet, State: state.Up, MACAddress: &mac, MTU: &mtu, ProfileName: &id},
	}}
	resolved, err := resolvedOn(committed, current)
	if err != nil {
		t.Fatal(err)
	}
	if diffs := state.Verify(resolved, current); len(diffs) > 0 {
		t.Errorf("drift reported on the NIC in effect: %v", diffs)
	}
	if diffs := state.Verify(committed, current); len(diffs) == 0 {
		t.Error("unresolved, the check cannot fail: the test proves nothing")
	}
	if _, err := resolvedOn(committed, state.State{Interfaces: current.Interfaces[:1]}); err == nil {
		t.Error("the NIC gone: want an error (the check is skipped), not a state to compare")
	}
}

func ref[T any](v T) *T { return &v }
