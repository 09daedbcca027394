package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/node"
	"github.com/nmoverlay/nmoverlay/internal/plan"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/accuracy"
	"github.com/nmoverlay/nmoverlay/test/published"
)

// NmstateApplied are nmstate's own example states (test/published/nmstate) the Debian 13
// guest applies, in this order, each on what the ones before left, as nmstate's own
// example tests apply them: an example that removes something follows the one that made
// it. Its eth1 and eth2 are the guest's NICs B and C. The engine verifies each: what the
// node runs afterwards is what the example states. Each is planned first, as `nmoverlay
// plan` plans a policy: what the plan predicted is what the apply changed, no more.
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
			before, changes, err := e.plan(ctx, file, doc)
			if err != nil {
				return err
			}
			if err := e.Apply(ctx, doc); err != nil {
				return err
			}
			return e.planWasAccurate(ctx, file, doc, before, changes)
		}})
	}
	return out
}

// plan is what `nmoverlay plan` says applying doc as policy name would change on this
// node, against its state as its NodeNetworkState shows it (which it returns): no other
// policy is in force here.
func (e *Env) plan(ctx context.Context, name, doc string) (state.State, []plan.Change, error) {
	before, err := e.settledState(ctx)
	if err != nil {
		return before, nil, err
	}
	changes, err := e.planOn(name, doc, before)
	return before, changes, err
}

// planOn is the plan of doc against current.
func (e *Env) planOn(name, doc string, current state.State) ([]plan.Change, error) {
	caps, err := e.NM.Capabilities()
	if err != nil {
		return nil, err
	}
	desired, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		return nil, err
	}
	r, err := plan.ForNode(plan.Input{Planned: node.Policy{Name: name, Generation: 1, DesiredState: desired}, Now: time.Now()},
		plan.Node{Name: "guest", Current: current, Capabilities: caps.Names()})
	if err != nil {
		return nil, err
	}
	if r.Failed() {
		return nil, fmt.Errorf("plan: conflicts %v, refusals %v", r.Conflicts, r.Refusals)
	}
	return r.Changes, nil
}

// planWasAccurate: the node's state after the apply differs from before by what the
// plan predicted and nothing else, and the plan again predicts no change.
func (e *Env) planWasAccurate(ctx context.Context, name, doc string, before state.State, changes []plan.Change) error {
	after, err := e.settledState(ctx)
	if err != nil {
		return err
	}
	// NICs A and D are no example's: Debian's DHCP profiles on them come and go on their
	// own (no server answers A; D serves the others from its own namespace).
	quiet := func(s state.State) state.State {
		s.Interfaces = slices.DeleteFunc(slices.Clone(s.Interfaces), func(it state.Interface) bool {
			return it.Name == e.NICs.A || it.Name == e.NICs.D
		})
		return s
	}
	if err := accuracy.Check(changes, quiet(before), quiet(after)); err != nil {
		return fmt.Errorf("%w\nplan: %v", err, changes)
	}
	again, err := e.planOn(name, doc, after)
	if err != nil {
		return err
	}
	if len(again) > 0 {
		return fmt.Errorf("applied, the plan still predicts %v", again)
	}
	return nil
}

// settledState is the node's state as its NodeNetworkState shows it, once two reads
// half a second apart agree: a port's carrier, or an address's duplicate detection, done.
func (e *Env) settledState(ctx context.Context) (state.State, error) {
	show := networkmanager.Backend{Client: e.NM, OVSDBSocket: ovsdbSocket}.Show
	var last []byte
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, err := show(ctx)
		if err != nil {
			return s, err
		}
		b, err := json.Marshal(s)
		if err != nil {
			return s, err
		}
		if bytes.Equal(b, last) || time.Now().After(deadline) {
			return s, nil
		}
		last = b
		time.Sleep(500 * time.Millisecond)
	}
}
