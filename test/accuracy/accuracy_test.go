package accuracy

import (
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/internal/node"
	"github.com/nmoverlay/nmoverlay/internal/plan"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// parse reads a state as a NodeNetworkState shows it (not as a policy states it).
func parse(t *testing.T, doc string) state.State {
	t.Helper()
	var s state.State
	if err := yaml.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

const before = `
interfaces:
- {name: eth1, type: ethernet, state: up, mtu: 1500, ipv4: {enabled: false}}
- {name: eth1.100, type: vlan, state: up, mtu: 1500, vlan: {base-iface: eth1, id: 100}}
dns-resolver: {config: {server: [192.0.2.53]}}
`

// The plan of a policy (by the real planner) against before, checked against afters
// that did what it said, more, less, or otherwise.
func TestCheck(t *testing.T) {
	desired := `
interfaces:
- {name: eth1.100, type: vlan, state: up, mtu: 1400, vlan: {base-iface: eth1, id: 100}}
- {name: br1, type: linux-bridge, state: up, bridge: {port: []}}
`
	r, err := plan.ForNode(plan.Input{Planned: node.Policy{Name: "p", Generation: 1, DesiredState: []byte(desired)}},
		plan.Node{Name: "n", Current: parse(t, before)})
	if err != nil || len(r.Changes) != 2 {
		t.Fatalf("plan: %v %v", r.Changes, err)
	}
	done := strings.Replace(before, "dns-resolver", "- {name: br1, type: linux-bridge, state: up, mtu: 1500, bridge: {port: []}}\ndns-resolver", 1)
	for _, tc := range []struct {
		name, after string
		want        []string // in the error; none: no error
	}{
		{"as planned", strings.Replace(done, "vlan, state: up, mtu: 1500", "vlan, state: up, mtu: 1400", 1), nil},
		{"more: the base's MTU changed too", strings.NewReplacer("vlan, state: up, mtu: 1500", "vlan, state: up, mtu: 1400",
			"ethernet, state: up, mtu: 1500", "ethernet, state: up, mtu: 1400").Replace(done),
			[]string{`eth1.mtu changed (1500 → 1400), which the plan did not predict`}},
		{"less: no bridge", strings.Replace(before, "vlan, state: up, mtu: 1500", "vlan, state: up, mtu: 1400", 1),
			[]string{`predicted "+ br1 (linux-bridge)", but br1 did not change`}},
		{"otherwise: another MTU", strings.Replace(done, "vlan, state: up, mtu: 1500", "vlan, state: up, mtu: 1300", 1),
			[]string{`predicted "~ eth1.100.mtu: 1500 → 1400", but eth1.100.mtu reads 1300 after`}},
		{"DNS changed", strings.Replace(strings.Replace(done, "vlan, state: up, mtu: 1500", "vlan, state: up, mtu: 1400", 1), "192.0.2.53", "192.0.2.54", 1),
			[]string{`dns-resolver.config changed ({"server":["192.0.2.53"]} → {"server":["192.0.2.54"]})`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(r.Changes, parse(t, before), parse(t, tc.after))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// A port predicted to take its bond's MAC address has it after, whether or not it was its
// own (a bond takes its first port's).
func TestCheckTheirs(t *testing.T) {
	changes := []plan.Change{{Kind: plan.Create, Path: "bond0"}, {Kind: plan.Set, Path: "eth1.mac-address", Old: "52:54:00:00:00:01", New: "(bond0's)"}}
	before := parse(t, `{interfaces: [{name: eth1, type: ethernet, state: up, mac-address: "52:54:00:00:00:01"}]}`)
	for _, tc := range []struct {
		name, bondMAC, portMAC, want string
	}{
		{"the bond took the port's", "52:54:00:00:00:01", "52:54:00:00:00:01", ""},
		{"the port took the bond's", "96:85:C5:CE:A2:4B", "96:85:C5:CE:A2:4B", ""},
		{"neither", "96:85:C5:CE:A2:4B", "52:54:00:00:00:01", `eth1.mac-address reads "52:54:00:00:00:01" after, bond0.mac-address "96:85:C5:CE:A2:4B"`},
	} {
		after := parse(t, fmt.Sprintf(`{interfaces: [{name: eth1, type: ethernet, state: up, mac-address: %q},
			{name: bond0, type: bond, state: up, mac-address: %q, link-aggregation: {mode: balance-rr, port: [eth1]}}]}`, tc.portMAC, tc.bondMAC))
		err := Check(changes, before, after)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
