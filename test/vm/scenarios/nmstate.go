package scenarios

import (
	"context"
	"regexp"
	"strings"

	"github.com/nmoverlay/nmoverlay/test/published"
)

// NmstateApplied are nmstate's own example states (test/published/nmstate) the Debian 13
// guest applies, in this order, each on what the ones before left, as nmstate's own
// example tests apply them: an example that removes something follows the one that made
// it. Its eth1 and eth2 are the guest's NICs B and C. The engine verifies each: what the
// node runs afterwards is what the example states.
var NmstateApplied = []string{
	"vlan101_eth1_up.yaml", "vlan101_eth1_down.yaml", "vlan101_eth1_absent.yaml",
	"bond_linuxbridge_vlan_up.yaml", "bond_linuxbridge_vlan_absent.yaml",
	"bond_port_up.yaml", "bond_port_absent.yaml",
	"linuxbrige_eth1_up.yaml", "linuxbrige_eth1_absent.yaml",
	"linuxbrige_eth1_up_port_vlan.yaml", "linuxbrige_eth1_absent.yaml",
	"mac_vlan_create.yaml", "mac_vlan_absent.yaml",
	"mac_vtap_create.yaml", "mac_vtap_absent.yaml",
	"ipvlan_create.yaml", "ipvlan_absent.yaml",
	"hsr0_up.yaml", "hsr0_absent.yaml",
	"macsec0_up.yaml", "macsec0_absent.yaml",
	"veth1_up.yaml", "veth1_absent.yaml",
	"vrf0_with_eth1.yaml", "vrf0_absent.yaml",
	"ovsbridge_create.yaml", "ovsbridge_delete.yaml",
	"ovsbridge_bond_create.yaml", "ovsbridge_delete.yaml", "ovsbridge_dpdk_absent.yaml",
	"ovsbridge_patch_create.yaml", "ovsbridge_patch_delete.yaml",
	"ovsbridge_vlan_port.yaml", "ovsbridge_delete.yaml",
	"eth1_add_route.yaml", "eth1_add_route_rule.yaml", "eth1_del_all_route_rules.yaml", "eth1_del_all_routes.yaml",
	"dns_edit_eth1.yaml", "dns_remove.yaml",
}

// nmstatePrelude is what the guest's NICs need before an example that nmstate's test NICs
// have already: no IP configuration. They are veths with none there; here they have
// Debian's DHCP profiles and no DHCP server on their link, and a VRF's port keeps its IP
// configuration (it would wait for a lease).
var nmstatePrelude = map[string]string{"vrf0_with_eth1.yaml": `
interfaces:
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: false}}
`}

// nmstateNICs are the names nmstate's examples give the NICs, whole words only (veth1 is
// an example's own).
var nmstateNICs = regexp.MustCompile(`\beth[12]\b`)

func nmstateScenarios() []Scenario {
	var out []Scenario
	seen := map[string]int{}
	for _, file := range NmstateApplied {
		name := "nmstate's example " + file
		// The host tells scenarios apart by name: each repeat is numbered.
		if seen[file] > 0 {
			name += ", again" + strings.Repeat(", and again", seen[file]-1)
		}
		seen[file]++
		out = append(out, Scenario{name, func(ctx context.Context, e *Env) error {
			doc, err := published.Nmstate(file)
			if err != nil {
				return err
			}
			nics := func(doc string) string {
				return nmstateNICs.ReplaceAllStringFunc(doc, func(n string) string {
					if n == "eth1" {
						return e.NICs.B
					}
					return e.NICs.C
				})
			}
			if prelude, ok := nmstatePrelude[file]; ok {
				if err := e.Apply(ctx, nics(prelude)); err != nil {
					return err
				}
			}
			doc = nics(doc)
			if err := e.check(ctx, doc); err != nil {
				return err
			}
			if err := waitForOVSDB(ctx); err != nil {
				return err
			}
			return e.Apply(ctx, doc)
		}})
	}
	return out
}
