package networkmanager

import (
	"slices"
	"strings"
	"testing"

	"github.com/nmoverlay/nmoverlay/internal/migration"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

func policy(t *testing.T, name, doc string) state.Source {
	t.Helper()
	s, err := state.Parse([]byte(doc))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return state.Source{Policy: name, State: s}
}

// p is a persistent profile as nmstate writes it (connection.master by name or UUID).
func keyfileProfile(file, typ, iface, controller, portType string) migration.Profile {
	return migration.Profile{File: file, UUID: "uuid-" + strings.TrimSuffix(file, ".nmconnection"), Type: typ, Interface: iface,
		Controller: controller, PortType: portType, ID: strings.TrimSuffix(file, ".nmconnection")}
}

// TestPersistentPlan: the persistent profiles kubernetes-nmstate's policies wrote, as nmstate
// names and links them, move; the installer's, MCO's and configure-ovs's stay, as do
// those of what the node needs to reach the cluster, and the reason is said.
func TestPersistentPlan(t *testing.T) {
	bond := policy(t, "bond0", `interfaces:
- {name: bond0, type: bond, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.10, prefix-length: 24}]},
   link-aggregation: {mode: active-backup, port: [eth1, eth2]}}`)
	vlan := policy(t, "storage", `interfaces: [{name: bond0.200, type: vlan, state: up, vlan: {base-iface: bond0, id: 200}}]`)
	ovs := policy(t, "localnet", `interfaces:
- {name: br1, type: ovs-bridge, state: up, bridge: {port: [{name: eth3}, {name: br1}, {name: bond1, link-aggregation: {mode: balance-slb, port: [{name: eth4}, {name: eth5}]}}]}}
- {name: br1, type: ovs-interface, state: up}`)
	brex := policy(t, "br-ex", `interfaces:
- {name: br-ex, type: ovs-bridge, state: up, bridge: {port: [{name: enp1s0}, {name: br-ex}]}}
- {name: br-ex, type: ovs-interface, state: up, ipv4: {enabled: true, dhcp: true}}`)
	gone := policy(t, "cleanup", `interfaces: [{name: old0, type: bond, state: absent}]`)
	nic := policy(t, "nic", `interfaces: [{name: eth6, type: ethernet, state: up, mtu: 9000}]`)

	profiles := []migration.Profile{
		keyfileProfile("bond0.nmconnection", "bond", "bond0", "", ""),
		keyfileProfile("eth1.nmconnection", "802-3-ethernet", "eth1", "bond0", "bond"),
		keyfileProfile("eth2.nmconnection", "802-3-ethernet", "eth2", "uuid-bond0", "bond"), // by UUID
		keyfileProfile("bond0.200.nmconnection", "vlan", "bond0.200", "", ""),
		keyfileProfile("br1-br.nmconnection", "ovs-bridge", "br1", "", ""),
		keyfileProfile("br1-port.nmconnection", "ovs-port", "br1", "br1", "ovs-bridge"),
		keyfileProfile("br1-if.nmconnection", "ovs-interface", "br1", "br1", "ovs-port"),
		keyfileProfile("eth3-port.nmconnection", "ovs-port", "eth3", "br1", "ovs-bridge"),
		keyfileProfile("eth3.nmconnection", "802-3-ethernet", "eth3", "eth3", "ovs-port"),
		keyfileProfile("bond1-port.nmconnection", "ovs-port", "bond1", "br1", "ovs-bridge"),
		keyfileProfile("eth4.nmconnection", "802-3-ethernet", "eth4", "bond1", "ovs-port"),
		keyfileProfile("eth5.nmconnection", "802-3-ethernet", "eth5", "uuid-bond1-port", "ovs-port"),
		keyfileProfile("eth6.nmconnection", "802-3-ethernet", "eth6", "", ""),
		// br-ex, as configure-ovs made it and the br-ex policy changed it.
		keyfileProfile("br-ex.nmconnection", "ovs-bridge", "br-ex", "", ""),
		keyfileProfile("ovs-port-br-ex.nmconnection", "ovs-port", "br-ex", "br-ex", "ovs-bridge"),
		keyfileProfile("ovs-if-br-ex.nmconnection", "ovs-interface", "br-ex", "ovs-port-br-ex", "ovs-port"),
		keyfileProfile("ovs-port-phys0.nmconnection", "ovs-port", "enp1s0", "br-ex", "ovs-bridge"),
		keyfileProfile("ovs-if-phys0.nmconnection", "802-3-ethernet", "enp1s0", "uuid-ovs-port-phys0", "ovs-port"),
		// The installer's, and what no policy in force names.
		keyfileProfile("Wired connection 1.nmconnection", "802-3-ethernet", "eth0", "", ""),
		keyfileProfile("old0.nmconnection", "bond", "old0", "", ""),
		keyfileProfile("eth6-vlan.nmconnection", "vlan", "eth6", "", ""),
		{File: "team.nmconnection", Type: "802-3-ethernet"},
	}
	critical := map[string]string{"br-ex": "br-ex carries the node's default route"}
	plan := PersistentPlan(profiles, []state.Source{bond, vlan, ovs, brex, gone, nic}, critical)

	moved := map[string][]string{}
	for _, e := range plan.Move {
		moved[e.File] = e.Policies
	}
	for file, policies := range map[string][]string{
		"bond0.nmconnection": {"bond0"}, "eth1.nmconnection": {"bond0"}, "eth2.nmconnection": {"bond0"},
		"bond0.200.nmconnection": {"storage"},
		"br1-br.nmconnection":    {"localnet"}, "br1-port.nmconnection": {"localnet"}, "br1-if.nmconnection": {"localnet"},
		"eth3-port.nmconnection": {"localnet"}, "eth3.nmconnection": {"localnet"}, "bond1-port.nmconnection": {"localnet"},
		"eth4.nmconnection": {"localnet"}, "eth5.nmconnection": {"localnet"}, "eth6.nmconnection": {"nic"},
	} {
		if got, ok := moved[file]; !ok || !slices.Equal(got, policies) {
			t.Errorf("%s: moved for %v (%t), want for %v", file, got, ok, policies)
		}
		delete(moved, file)
	}
	for file := range moved {
		t.Errorf("%s moved, want it to stay", file)
	}
	stays := map[string]string{}
	for _, e := range plan.Stay {
		stays[e.File] = e.Why
	}
	for file, why := range map[string]string{
		"br-ex.nmconnection":              "br-ex carries the node's default route: the node needs it to boot, so it stays persistent (policies br-ex)",
		"ovs-port-br-ex.nmconnection":     "br-ex carries the node's default route: the node needs it to boot",
		"ovs-if-br-ex.nmconnection":       "br-ex carries the node's default route: the node needs it to boot",
		"ovs-port-phys0.nmconnection":     "the node needs it to boot",
		"ovs-if-phys0.nmconnection":       "the node needs it to boot",
		"Wired connection 1.nmconnection": "no policy in force names eth0",
		"old0.nmconnection":               "no policy in force names old0",
		"eth6-vlan.nmconnection":          "a vlan profile, and the policies in force make eth6 a ethernet: no policy accounts for it",
		"team.nmconnection":               "names no interface",
	} {
		if got, ok := stays[file]; !ok || !strings.Contains(got, why) {
			t.Errorf("%s: stays %t, why %q, want %q", file, ok, got, why)
		}
	}
	if len(plan.Stay) != 9 {
		t.Errorf("%d stay, want 9: %+v", len(plan.Stay), plan.Stay)
	}
}

// TestPersistentPlanNeededToBoot: what the node needs to boot is the critical interface and
// what it runs on, through every policy in force, and not what is built on it.
func TestPersistentPlanNeededToBoot(t *testing.T) {
	bond := policy(t, "bond0", `interfaces:
- {name: bond0, type: bond, state: up, link-aggregation: {mode: active-backup, port: [eth1, eth2]}}`)
	api := policy(t, "api-vlan", `interfaces: [{name: bond0.100, type: vlan, state: up, vlan: {base-iface: bond0, id: 100}}]`)
	storage := policy(t, "storage", `interfaces: [{name: bond0.200, type: vlan, state: up, vlan: {base-iface: bond0, id: 200}}]`)
	profiles := []migration.Profile{
		keyfileProfile("bond0.nmconnection", "bond", "bond0", "", ""),
		keyfileProfile("eth1.nmconnection", "802-3-ethernet", "eth1", "bond0", "bond"),
		keyfileProfile("eth2.nmconnection", "802-3-ethernet", "eth2", "bond0", "bond"),
		keyfileProfile("bond0.100.nmconnection", "vlan", "bond0.100", "", ""),
		keyfileProfile("bond0.200.nmconnection", "vlan", "bond0.200", "", ""),
	}
	for _, tc := range []struct {
		critical map[string]string
		move     []string
	}{
		{map[string]string{"bond0.100": "bond0.100 holds the node's InternalIP 192.0.2.10"}, []string{"bond0.200.nmconnection"}},
		{map[string]string{"bond0.200": "bond0.200 carries the route to the API server"}, []string{"bond0.100.nmconnection"}},
		{nil, []string{"bond0.nmconnection", "eth1.nmconnection", "eth2.nmconnection", "bond0.100.nmconnection", "bond0.200.nmconnection"}},
		{map[string]string{"eth9": "eth9 carries the node's default route"},
			[]string{"bond0.nmconnection", "eth1.nmconnection", "eth2.nmconnection", "bond0.100.nmconnection", "bond0.200.nmconnection"}},
	} {
		plan := PersistentPlan(profiles, []state.Source{bond, api, storage}, tc.critical)
		var got []string
		for _, e := range plan.Move {
			got = append(got, e.File)
		}
		if !slices.Equal(got, tc.move) {
			t.Errorf("critical %v: moved %v, want %v", tc.critical, got, tc.move)
		}
		for _, e := range plan.Stay {
			if why := tc.critical[strings.TrimSuffix(e.File, ".nmconnection")]; why != "" && !strings.HasPrefix(e.Why, why) {
				t.Errorf("%s: %q, want it to start %q", e.File, e.Why, why)
			}
		}
	}
}
