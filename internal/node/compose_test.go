package node

import (
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/nmoverlay/nmoverlay/internal/backend"
)

func TestSelects(t *testing.T) {
	labels := map[string]string{"node-role.kubernetes.io/worker": "", "kubernetes.io/hostname": "w0"}
	for _, tc := range []struct {
		sel  map[string]string
		want bool
	}{
		{nil, true},
		{map[string]string{"node-role.kubernetes.io/worker": ""}, true},
		{map[string]string{"kubernetes.io/hostname": "w1"}, false},
		{map[string]string{"node-role.kubernetes.io/master": ""}, false},
	} {
		if got := (Policy{NodeSelector: tc.sel}).Selects(labels); got != tc.want {
			t.Errorf("Selects(%v) = %v, want %v", tc.sel, got, tc.want)
		}
	}
}

func TestComposeIsolatesBadPolicies(t *testing.T) {
	p := Compose(backend.NMState{}, []Policy{
		{Name: "good-vlan", DesiredState: []byte(`{"interfaces":[{"name":"bond0.10","type":"vlan","vlan":{"id":10,"base-iface":"bond0"}}]}`)},
		{Name: "good-bond", DesiredState: []byte(`{"interfaces":[{"name":"bond0","type":"bond","link-aggregation":{"mode":"active-backup","port":["eth1"]}}]}`)},
		{Name: "invalid", DesiredState: []byte(`{"interfaces":[{"name":"v","type":"vlan","vlan":{"id":5000,"base-iface":"eth1"}}]}`)},
		{Name: "mtu-9000", DesiredState: []byte(`{"interfaces":[{"name":"eth2","type":"ethernet","mtu":9000}]}`)},
		{Name: "mtu-1500", DesiredState: []byte(`{"interfaces":[{"name":"eth2","type":"ethernet","mtu":1500}]}`)},
		{Name: "captures", Capture: map[string]string{"gw": `routes.running.destination=="0.0.0.0/0"`},
			CaptureError: `spec.capture.gw: no running route has destination == "0.0.0.0/0"`},
	})
	if got := strings.Join(p.Applied, ","); got != "good-bond,good-vlan" {
		t.Errorf("applied %s", got)
	}
	if apply, err := backend.NMStateOf(p.Apply); err != nil || len(apply.Interfaces) != 2 {
		t.Errorf("merged %+v (%v)", p.Apply, err)
	}
	for pol, want := range map[string]string{
		"invalid":  "spec.desiredState: interfaces[0].vlan.id: 5000 is out of range 1..4094",
		"mtu-9000": `policy "mtu-1500"`,
		"mtu-1500": `policy "mtu-9000"`,
		"captures": "spec.capture.gw: no running route",
	} {
		if !strings.Contains(p.Failed[pol], want) {
			t.Errorf("%s: %q, want it to contain %q", pol, p.Failed[pol], want)
		}
	}
}

func TestSuspectsOf(t *testing.T) {
	apply := Composition{Applied: []string{"dhcp", "static", "old"}, Owners: map[string][]string{"eth1": {"dhcp"}, "eth2": {"static"}, "eth3": {"old"}}}
	isNew := func(name string) bool { return name != "old" }
	for _, tc := range []struct {
		name         string
		err          error
		failedBefore string
		want         []string
	}{
		{"no failure", nil, "", nil},
		{"an interface that would not activate: its policy alone",
			&backend.ApplyError{Reason: "eth1: activation failed", Interfaces: []string{"eth1"}}, "static", []string{"dhcp"}},
		{"an interface of a policy already in effect: no new one to blame, those that failed before",
			&backend.ApplyError{Reason: "eth3: activation failed", Interfaces: []string{"eth3"}}, "static", []string{"static"}},
		{"not one interface's: those that failed before", &backend.ApplyError{Reason: "did not converge"}, "dhcp", []string{"dhcp"}},
		{"nothing points anywhere: none (all new ones fail)", errors.New("did not converge"), "", nil},
	} {
		got := suspectsOf(tc.err, apply, isNew, func(name string) bool { return name == tc.failedBefore })
		var names []string
		for name := range got {
			names = append(names, name)
		}
		sort.Strings(names)
		if !slices.Equal(names, tc.want) {
			t.Errorf("%s: suspects %v, want %v", tc.name, names, tc.want)
		}
	}
}
