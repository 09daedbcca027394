package state

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Features names what nmstate's statistics name, on nmstate's own examples and on states
// that use the rest.
func TestFeatures(t *testing.T) {
	example := func(file string) string {
		b, err := os.ReadFile("../../test/published/nmstate/" + file)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	many := "interfaces:\n"
	for i := range 12 {
		many += fmt.Sprintf("- {name: d%d, type: dummy, state: up}\n", i)
	}
	for _, tc := range []struct {
		name, doc string
		want      string
	}{
		{"ovsbridge_bond_create.yaml", example("ovsbridge_bond_create.yaml"), "ovs-bond"},
		{"ovsbridge_patch_create.yaml", example("ovsbridge_patch_create.yaml"), "ovs-patch"},
		{"dns_edit_eth1.yaml", example("dns_edit_eth1.yaml"), "static-dns-name-server static-dns-option static-dns-search static-route"},
		{"eth1_add_route_rule.yaml", example("eth1_add_route_rule.yaml"), "static-route static-route-rule"},
		{"eth1_with_sriov.yaml", example("eth1_with_sriov.yaml"), "sriov"},
		{"vlan101_eth1_up.yaml", example("vlan101_eth1_up.yaml"), ""},
		{"a NIC by MAC, LLDP, ovs-db", `{interfaces: [{name: nic0, type: ethernet, identifier: mac-address, mac-address: "52:54:00:00:00:01",
			lldp: {enabled: true}}, {name: br0, type: ovs-interface, ovs-db: {external_ids: {a: b}}},
			{name: br0, type: ovs-bridge, bridge: {port: [{name: br0}]}}]}`,
			"lldp mac-based-identifier ovs-db-interface"},
		{"OVN mappings, DNS options", `{ovn: {bridge-mappings: [{localnet: a, bridge: br-ex}]}, dns-resolver: {config: {options: [rotate]}}}`,
			"ovn-mapping static-dns-option"},
		{"a rule with suppress-prefix-length", `{route-rules: {config: [{ip-to: 10.0.0.0/8, route-table: 100, suppress-prefix-length: 0}]}}`,
			"static-route-rule static-route-rule-suppress-prefix-length"},
		{"12 interfaces up", many, "iface-count10-plus"},
	} {
		if got := strings.Join(Features(mustParse(t, tc.doc)), " "); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
