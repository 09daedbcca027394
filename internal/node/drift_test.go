package node

import (
	"testing"

	"github.com/nmoverlay/nmoverlay/api/shared"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
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

func ref[T any](v T) *T { return &v }
