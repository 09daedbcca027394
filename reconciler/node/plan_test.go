package node

import (
	"strings"
	"testing"
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

func TestMakePlanIsolatesBadPolicies(t *testing.T) {
	p := MakePlan([]Policy{
		{Name: "good-vlan", DesiredState: []byte(`{"interfaces":[{"name":"bond0.10","type":"vlan","vlan":{"id":10,"base-iface":"bond0"}}]}`)},
		{Name: "good-bond", DesiredState: []byte(`{"interfaces":[{"name":"bond0","type":"bond","link-aggregation":{"mode":"active-backup","port":["eth1"]}}]}`)},
		{Name: "invalid", DesiredState: []byte(`{"interfaces":[{"name":"v","type":"vlan","vlan":{"id":5000,"base-iface":"eth1"}}]}`)},
		{Name: "mtu-9000", DesiredState: []byte(`{"interfaces":[{"name":"eth2","type":"ethernet","mtu":9000}]}`)},
		{Name: "mtu-1500", DesiredState: []byte(`{"interfaces":[{"name":"eth2","type":"ethernet","mtu":1500}]}`)},
		{Name: "captures", Capture: map[string]string{"gw": `routes.running.destination=="0.0.0.0/0"`}},
	})
	if got := strings.Join(p.Applied, ","); got != "good-bond,good-vlan" {
		t.Errorf("applied %s", got)
	}
	if len(p.Apply.Interfaces) != 2 {
		t.Errorf("merged %+v", p.Apply.Interfaces)
	}
	for pol, want := range map[string]string{
		"invalid":  "spec.desiredState: interfaces[0].vlan.id: 5000 is out of range 1..4094",
		"mtu-9000": `policy "mtu-1500"`,
		"mtu-1500": `policy "mtu-9000"`,
		"captures": "spec.capture",
	} {
		if !strings.Contains(p.Failed[pol], want) {
			t.Errorf("%s: %q, want it to contain %q", pol, p.Failed[pol], want)
		}
	}
}
