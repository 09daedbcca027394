package node

import (
	"testing"

	"github.com/nmoverlay/nmoverlay/api/shared"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	statepkg "github.com/nmoverlay/nmoverlay/reconciler/state"
)

// What counts as committed on the node decides what a restore puts back and what drift
// is compared with.
func TestCommittedIn(t *testing.T) {
	enactment := func(boot, raw string, set func(*v1beta1.NodeNetworkConfigurationEnactment, string), msg string) *v1beta1.NodeNetworkConfigurationEnactment {
		e := &v1beta1.NodeNetworkConfigurationEnactment{}
		e.Status.BootID = boot
		e.Status.DesiredState = shared.State{Raw: []byte(raw)}
		set(e, msg)
		return e
	}
	const state = `{"interfaces":[]}`
	for _, tc := range []struct {
		name string
		e    *v1beta1.NodeNetworkConfigurationEnactment
		want bool
	}{
		{"available in this boot", enactment("b2", state, SetAvailable, "applied"), true},
		{"available in an earlier boot", enactment("b1", state, SetAvailable, "applied"), false},
		{"available, no desired state recorded", enactment("b2", "", SetAvailable, "applied"), false},
		{"failing because it drifted", enactment("b2", state, SetFailing, driftMessage(driftPrefix+"eth1: address missing")), true},
		{"failing for another reason", enactment("b2", state, SetFailing, "probe default-gateway failed"), false},
		{"waiting for a slot", enactment("b2", state, SetPending, "waiting for a rollout slot"), false},
		{"progressing", enactment("b2", state, SetProgressing, "rollout slot claimed"), false},
	} {
		if got := committedIn(tc.e, "b2"); got != tc.want {
			t.Errorf("%s: committedIn = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A committed state that identifies its NIC by MAC address is compared with the NIC that
// has it now: without that, the drift check would look for an interface of the policy's
// name and report it missing.
func TestResolvedOn(t *testing.T) {
	committed, err := statepkg.Parse([]byte(`{"interfaces":[{"name":"storage","identifier":"mac-address","mac-address":"02:00:00:5E:00:53","type":"ethernet","mtu":9000}]}`))
	if err != nil {
		t.Fatal(err)
	}
	mac, mtu, id := "02:00:00:5e:00:53", 9000, "storage"
	current := statepkg.State{Interfaces: []statepkg.Interface{
		{Name: "eth1", Type: statepkg.Veth, MACAddress: ref("02:00:00:00:00:01")},
		{Name: "enp7s0", Type: statepkg.Ethernet, State: statepkg.Up, MACAddress: &mac, MTU: &mtu, ProfileName: &id},
	}}
	resolved, err := resolvedOn(committed, current)
	if err != nil {
		t.Fatal(err)
	}
	if diffs := statepkg.Verify(resolved, current); len(diffs) > 0 {
		t.Errorf("drift reported on the NIC in effect: %v", diffs)
	}
	if diffs := statepkg.Verify(committed, current); len(diffs) == 0 {
		t.Error("unresolved, the check cannot fail: the test proves nothing")
	}
	if _, err := resolvedOn(committed, statepkg.State{Interfaces: current.Interfaces[:1]}); err == nil {
		t.Error("the NIC gone: want an error (the check is skipped), not a state to compare")
	}
}

func ref[T any](v T) *T { return &v }
