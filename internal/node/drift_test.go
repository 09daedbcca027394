package node

import (
	"reflect"
	"testing"
	"time"

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

func TestDecideDrift(t *testing.T) {
	now := time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC)
	addr := []string{"eth1: address 192.0.2.5/24 missing"}
	msg := driftPrefix + addr[0]
	for _, tc := range []struct {
		name string
		in   driftInput
		want driftDecision
	}{
		{name: "nothing differs: nothing to do",
			in:   driftInput{Now: now, Diffs: map[string][]string{"a": nil}},
			want: driftDecision{Suspect: map[string]time.Time{}, Report: map[string]string{}}},
		{name: "a difference first seen is a suspect, looked at again once it could be confirmed",
			in:   driftInput{Now: now, Diffs: map[string][]string{"a": addr}},
			want: driftDecision{Suspect: map[string]time.Time{"a": now}, Report: map[string]string{}, Recheck: driftConfirm}},
		{name: "a suspect not yet confirmed waits the rest of driftConfirm",
			in:   driftInput{Now: now, Diffs: map[string][]string{"a": addr}, Suspect: map[string]time.Time{"a": now.Add(-1500 * time.Millisecond)}},
			want: driftDecision{Suspect: map[string]time.Time{"a": now.Add(-1500 * time.Millisecond)}, Report: map[string]string{}, Recheck: 500 * time.Millisecond}},
		{name: "a difference that lasted driftConfirm is reported",
			in:   driftInput{Now: now, Diffs: map[string][]string{"a": addr}, Suspect: map[string]time.Time{"a": now.Add(-driftConfirm)}},
			want: driftDecision{Suspect: map[string]time.Time{"a": now.Add(-driftConfirm)}, Report: map[string]string{"a": msg}}},
		{name: "reported once: the same message is not reported again",
			in: driftInput{Now: now, Diffs: map[string][]string{"a": addr}, Suspect: map[string]time.Time{"a": now.Add(-time.Minute)},
				Reported: map[string]string{"a": msg}},
			want: driftDecision{Suspect: map[string]time.Time{"a": now.Add(-time.Minute)}, Report: map[string]string{}}},
		{name: "a policy that opted in is re-applied, not reported",
			in: driftInput{Now: now, Diffs: map[string][]string{"a": addr}, Suspect: map[string]time.Time{"a": now.Add(-driftConfirm)},
				Reapply: map[string]bool{"a": true}},
			want: driftDecision{Suspect: map[string]time.Time{"a": now.Add(-driftConfirm)}, Report: map[string]string{}, Reapply: []string{"a"}}},
		{name: "drift gone: its report cleared, its suspect forgotten",
			in: driftInput{Now: now, Diffs: map[string][]string{"a": nil}, Suspect: map[string]time.Time{"a": now.Add(-time.Minute)},
				Reported: map[string]string{"a": msg}},
			want: driftDecision{Suspect: map[string]time.Time{}, Report: map[string]string{"a": ""}}},
		{name: "a policy no longer checked (not committed, or not checkable here) is forgotten and its report left to the pass",
			in: driftInput{Now: now, Diffs: map[string][]string{}, Suspect: map[string]time.Time{"a": now.Add(-time.Second)},
				Reported: map[string]string{"a": msg}},
			want: driftDecision{Suspect: map[string]time.Time{}, Report: map[string]string{}}},
		{name: "several policies: the soonest recheck, the confirmed one reported",
			in: driftInput{Now: now, Diffs: map[string][]string{"a": addr, "b": addr, "c": addr},
				Suspect: map[string]time.Time{"a": now.Add(-500 * time.Millisecond), "b": now.Add(-1800 * time.Millisecond), "c": now.Add(-3 * time.Second)}},
			want: driftDecision{Suspect: map[string]time.Time{"a": now.Add(-500 * time.Millisecond), "b": now.Add(-1800 * time.Millisecond), "c": now.Add(-3 * time.Second)},
				Report: map[string]string{"c": msg}, Recheck: 200 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decideDrift(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("decideDrift:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
