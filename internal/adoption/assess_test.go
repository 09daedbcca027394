package adoption

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
)

var served = map[string][]string{
	"nmstates.nmstate.io":                           {"v1", "v1beta1"},
	"nodenetworkconfigurationenactments.nmstate.io": {"v1beta1"},
	"nodenetworkconfigurationpolicies.nmstate.io":   {"v1", "v1beta1"},
	"nodenetworkstates.nmstate.io":                  {"v1beta1"},
}

func crds(stored ...string) []CRD {
	var out []CRD
	for _, name := range CRDNames {
		out = append(out, CRD{Name: name, Served: served[name], Storage: served[name][0], Stored: append([]string{served[name][0]}, stored...)})
	}
	return out
}

func node(name string, ready bool, internalIP string) corev1.Node {
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}},
		Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: internalIP}}}}
}

// enactment is kubernetes-nmstate's, as its handler writes it: named node.policy, its
// labels, the desired state applied, and one true condition.
func enactment(node, policy, desired, cond, message string) v1beta1.NodeNetworkConfigurationEnactment {
	e := v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: node + "." + policy,
		Labels: map[string]string{shared.NodeLabel: node, shared.PolicyLabel: policy}}}
	e.Status.DesiredState = shared.State{Raw: []byte(desired)}
	for _, t := range []string{shared.EnactmentAvailable, shared.EnactmentFailing, shared.EnactmentProgressing} {
		st := metav1.ConditionFalse
		if t == cond {
			st = metav1.ConditionTrue
		}
		e.Status.Conditions = append(e.Status.Conditions, metav1.Condition{Type: t, Status: st, Message: message})
	}
	return e
}

func nns(node, current string) v1beta1.NodeNetworkState {
	s := v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: node}}
	s.Status.CurrentState = shared.State{Raw: []byte(current)}
	return s
}

const (
	brex = `{"interfaces":[{"name":"br-ex","type":"ovs-bridge","state":"up","bridge":{"port":[{"name":"bond0"},{"name":"br-ex"}]}},
  {"name":"br-ex","type":"ovs-interface","state":"up"},
  {"name":"bond0","type":"bond","state":"up","link-aggregation":{"mode":"active-backup","port":["eth0","eth1"]}}]}`
	storage = `{"interfaces":[{"name":"bond0.200","type":"vlan","state":"up","vlan":{"base-iface":"bond0","id":200}}]}`
	current = `{"interfaces":[{"name":"br-ex","type":"ovs-interface","state":"up","ipv4":{"enabled":true,"address":[{"ip":"192.0.2.10","prefix-length":24}]}}],
  "routes":{"running":[{"destination":"0.0.0.0/0","next-hop-address":"192.0.2.1","next-hop-interface":"br-ex","table-id":254}]}}`
)

func cluster() *Inventory {
	return &Inventory{
		Components: []Component{{Kind: "Deployment", Namespace: "openshift-nmstate", Name: "nmstate-operator", Ready: 1, Desired: 1},
			{Kind: "DaemonSet", Namespace: "openshift-nmstate", Name: "nmstate-handler", Ready: 2, Desired: 2}},
		CRDs:     crds(),
		NMStates: []string{"nmstate"},
		Policies: []nmstatev1.NodeNetworkConfigurationPolicy{{ObjectMeta: metav1.ObjectMeta{Name: "br-ex"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "storage"}}},
		Enactments: []v1beta1.NodeNetworkConfigurationEnactment{
			enactment("worker-0", "br-ex", brex, shared.EnactmentAvailable, ""),
			enactment("worker-0", "storage", storage, shared.EnactmentAvailable, ""),
			enactment("worker-1", "br-ex", brex, shared.EnactmentAvailable, ""),
			enactment("worker-1", "storage", storage, shared.EnactmentAvailable, ""),
		},
		States: []v1beta1.NodeNetworkState{nns("worker-0", current), nns("worker-1", current)},
		Nodes:  []corev1.Node{node("worker-0", true, "192.0.2.10"), node("worker-1", true, "192.0.2.11"), node("master-0", true, "192.0.2.2")},
	}
}

func TestAssess(t *testing.T) {
	api := netip.MustParseAddr("198.51.100.5")
	for _, tc := range []struct {
		name     string
		change   func(*Inventory)
		blocking []string // each a part of one blocking reason, in order
	}{
		{"ready", func(*Inventory) {}, nil},
		{"a policy failing on a node", func(inv *Inventory) {
			inv.Enactments[3] = enactment("worker-1", "storage", storage, shared.EnactmentFailing, "error reconciling NodeNetworkConfigurationPolicy: rolled back")
		}, []string{"policy storage is Failing: error reconciling NodeNetworkConfigurationPolicy: rolled back on node worker-1: the move waits until every enactment is Available"}},
		{"a policy still progressing", func(inv *Inventory) {
			inv.Enactments[0] = enactment("worker-0", "br-ex", brex, shared.EnactmentProgressing, "")
		}, []string{"policy br-ex is Progressing on node worker-0"}},
		{"an NMState of another name", func(inv *Inventory) { inv.NMStates = []string{"my-nmstate"} },
			[]string{"no NMState named nmstate (there are: my-nmstate)"}},
		{"a node not Ready", func(inv *Inventory) { inv.Nodes[1] = node("worker-1", false, "192.0.2.11") },
			[]string{"node worker-1 is not Ready"}},
		{"objects stored at a version nmoverlay does not serve", func(inv *Inventory) { inv.CRDs = crds("v1alpha1") },
			[]string{"CRD nmstates.nmstate.io: objects may be stored at v1alpha1", "CRD nodenetworkconfigurationenactments.nmstate.io",
				"CRD nodenetworkconfigurationpolicies.nmstate.io", "CRD nodenetworkstates.nmstate.io"}},
		{"no kubernetes-nmstate", func(inv *Inventory) { *inv = Inventory{} },
			[]string{"no kubernetes-nmstate found: no nmstate-operator Deployment", "4 of the nmstate.io CRDs are missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv := cluster()
			tc.change(inv)
			a := Assess(inv, api, served)
			if len(a.Blocking) != len(tc.blocking) {
				t.Fatalf("blocking %q, want %d", a.Blocking, len(tc.blocking))
			}
			for i, part := range tc.blocking {
				if !strings.Contains(a.Blocking[i], part) {
					t.Errorf("blocking[%d] %q, want %q in it", i, a.Blocking[i], part)
				}
			}
		})
	}
}

// TestAssessPersistent: per node, what the node needs to reach its cluster (br-ex carries
// its default route) and, through the policies, what br-ex runs on: the br-ex policy's
// interfaces stay persistent, the storage VLAN on the same bond moves.
func TestAssessPersistent(t *testing.T) {
	inv := cluster()
	a := Assess(inv, netip.Addr{}, served)
	if len(a.Nodes) != 2 || a.Nodes[0].Name != "worker-0" || a.Nodes[1].Name != "worker-1" {
		t.Fatalf("nodes %+v, want the two the policies select", a.Nodes)
	}
	w0 := a.Nodes[0]
	if w0.Critical["br-ex"] != "br-ex carries the node's default route" || w0.Critical["br-ex"] == "" {
		t.Errorf("critical %v", w0.Critical)
	}
	var touched []string
	for _, tch := range w0.Persistent {
		if tch.Policy != "br-ex" || !strings.HasPrefix(tch.Why, "br-ex carries the node's default route") {
			t.Errorf("touch %+v", tch)
		}
		touched = append(touched, tch.Interface)
	}
	if !slices.Equal(touched, []string{"br-ex", "bond0"}) {
		t.Errorf("persistent %v, want br-ex and bond0 of the br-ex policy", touched)
	}
	if got := a.Policies; len(got) != 2 || got[1].Name != "storage" || got[1].Nodes["worker-1"] != "Available" {
		t.Errorf("policies %+v", got)
	}
	// Its handler's plan, once nmoverlay runs with spec.migrateFrom, is shown as it reports it.
	inv.States[0].Status.Overlay = &v1beta1.OverlayStatus{Migration: &v1beta1.MigrationStatus{
		Move: []v1beta1.PersistentProfile{{File: "bond0.200.nmconnection", Interface: "bond0.200", Policies: []string{"storage"}}}}}
	if m := Assess(inv, netip.Addr{}, served).Nodes[0].Migration; m == nil || m.Move[0].File != "bond0.200.nmconnection" {
		t.Errorf("worker-0's plan %+v", m)
	}
	// The InternalIP of worker-1 is on no interface of its state: only the default route.
	if len(a.Nodes[1].Critical) != 1 {
		t.Errorf("worker-1 critical %v", a.Nodes[1].Critical)
	}
}
