package adoption

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// Assessment is whether a cluster can move from kubernetes-nmstate now, and what the move
// will keep persistent.
type Assessment struct {
	Components []Component `json:"components"`
	CSVs       []CSV       `json:"csvs,omitempty"`
	CRDs       []CRD       `json:"crds"`
	NMStates   []string    `json:"nmstates"`
	// Policies are the policies and, per node, the state of their enactment there.
	Policies []PolicyReport `json:"policies"`
	// Nodes are the nodes policies select.
	Nodes []NodeReport `json:"nodes"`
	// Blocking says what keeps the move from starting; empty when it can.
	Blocking []string `json:"blocking"`
}

// PolicyReport is one policy's enactments: node -> "Available", "Failing: why", ...
type PolicyReport struct {
	Name  string            `json:"name"`
	Nodes map[string]string `json:"nodes"`
}

// NodeReport is one node: its readiness, the interfaces it needs to reach its cluster, and
// what policies do to them.
type NodeReport struct {
	Name  string `json:"name"`
	Ready bool   `json:"ready"`
	// Critical are the interfaces it needs to reach its cluster, with why (from its
	// NodeNetworkState, its InternalIPs and the API server's address).
	Critical map[string]string `json:"critical,omitempty"`
	// Persistent are the policies' interfaces the node needs to boot: their profiles stay
	// in the persistent dir at the move (the node would boot without them otherwise).
	Persistent []Touch `json:"persistent,omitempty"`
	// Migration is the node's own plan and move, as its nmoverlay handler reports them
	// once it runs with spec.migrateFrom.
	Migration *v1beta1.MigrationStatus `json:"migration,omitempty"`
}

// Touch is a policy's interface the node needs to boot.
type Touch struct {
	Policy    string `json:"policy"`
	Interface string `json:"interface"`
	Why       string `json:"why"`
}

// Assess decides from inv whether the move can start: kubernetes-nmstate is there, each
// CRD's stored versions are ones nmoverlay's CRDs serve (served: CRD name -> versions),
// every enactment is Available, and every node a policy selects is Ready. It reports, per
// node, the policies' interfaces the node needs to reach its cluster (through
// apiServer's route, its default route or its InternalIP, per its NodeNetworkState):
// their profiles stay persistent.
func Assess(inv *Inventory, apiServer netip.Addr, served map[string][]string) Assessment {
	a := Assessment{Components: inv.Components, CSVs: inv.CSVs, CRDs: inv.CRDs, NMStates: inv.NMStates,
		Policies: []PolicyReport{}, Nodes: []NodeReport{}, Blocking: []string{}}
	block := func(format string, args ...any) { a.Blocking = append(a.Blocking, fmt.Sprintf(format, args...)) }
	if len(inv.Components) == 0 && len(inv.CSVs) == 0 {
		block("no kubernetes-nmstate found: no %s Deployment, no DaemonSet of %s=%s pods, no %s.* ClusterServiceVersion",
			operatorName, "component", handlerComponent, operatorApp)
	}
	for _, crd := range inv.CRDs {
		for _, v := range crd.Stored {
			if !slices.Contains(served[crd.Name], v) {
				block("CRD %s: objects may be stored at %s, which nmoverlay's CRD does not serve: migrate them to %s first "+
					"(the kube-storage-version-migrator, or a read and a write of each) and drop %s from status.storedVersions",
					crd.Name, v, crd.Storage, v)
			}
		}
	}
	if len(inv.CRDs) == len(CRDNames) && !slices.Contains(inv.NMStates, nmstatev1.NMStateName) {
		block("no NMState named %s (there are: %s): nmoverlay's operator answers only to %s; create it with the spec of the one in use",
			nmstatev1.NMStateName, strings.Join(inv.NMStates, ", "), nmstatev1.NMStateName)
	}
	if missing := len(CRDNames) - len(inv.CRDs); missing > 0 {
		block("%d of the nmstate.io CRDs are missing: this is no cluster kubernetes-nmstate runs on", missing)
	}

	byPolicy := map[string]map[string]string{}
	desired := map[string][]state.Source{} // node -> the policies' states as applied there
	for _, e := range inv.Enactments {
		policy, node := e.Labels[shared.PolicyLabel], e.Labels[shared.NodeLabel]
		if policy == "" || node == "" {
			continue
		}
		if byPolicy[policy] == nil {
			byPolicy[policy] = map[string]string{}
		}
		summary := enactmentState(e.Status.Conditions)
		byPolicy[policy][node] = summary
		if summary != "Available" {
			block("policy %s is %s on node %s: the move waits until every enactment is Available", policy, summary, node)
		}
		if s, err := state.Parse(e.Status.DesiredState.Raw); err == nil && len(e.Status.DesiredState.Raw) > 0 {
			desired[node] = append(desired[node], state.Source{Policy: policy, State: s})
		}
	}
	for _, p := range inv.Policies {
		a.Policies = append(a.Policies, PolicyReport{Name: p.Name, Nodes: byPolicy[p.Name]})
	}
	slices.SortFunc(a.Policies, func(x, y PolicyReport) int { return strings.Compare(x.Name, y.Name) })

	states := map[string]state.State{}
	plans := map[string]*v1beta1.MigrationStatus{}
	for _, nns := range inv.States {
		var s state.State
		if json.Unmarshal(nns.Status.CurrentState.Raw, &s) == nil {
			states[nns.Name] = s
		}
		if nns.Status.Overlay != nil {
			plans[nns.Name] = nns.Status.Overlay.Migration
		}
	}
	for _, n := range inv.Nodes {
		if _, selected := desired[n.Name]; !selected && !hasEnactment(byPolicy, n.Name) {
			continue
		}
		r := NodeReport{Name: n.Name, Ready: shared.NodeReady(&n), Migration: plans[n.Name]}
		if !r.Ready {
			block("node %s is not Ready: the move waits for it", n.Name)
		}
		r.Critical = state.CriticalInterfaces(states[n.Name], apiServer, shared.InternalIPs(&n))
		needed := state.NeededToBoot(desired[n.Name], r.Critical)
		for _, src := range desired[n.Name] {
			for _, it := range src.State.Interfaces {
				if why, ok := needed[it.Name]; ok && it.State != state.Absent &&
					!slices.ContainsFunc(r.Persistent, func(t Touch) bool { return t.Policy == src.Policy && t.Interface == it.Name }) {
					r.Persistent = append(r.Persistent, Touch{Policy: src.Policy, Interface: it.Name, Why: why})
				}
			}
		}
		if len(r.Critical) == 0 {
			r.Critical = nil
		}
		a.Nodes = append(a.Nodes, r)
	}
	slices.SortFunc(a.Nodes, func(x, y NodeReport) int { return strings.Compare(x.Name, y.Name) })
	return a
}

// enactmentState is an enactment's state as kubernetes-nmstate's conditions say it: the
// first true of Available, Failing (with its message), Progressing, Pending, Aborted.
func enactmentState(conds []metav1.Condition) string {
	for _, t := range []string{shared.EnactmentAvailable, shared.EnactmentFailing, shared.EnactmentProgressing,
		shared.EnactmentPending, shared.EnactmentAborted} {
		if c := meta.FindStatusCondition(conds, t); c != nil && c.Status == "True" {
			if t == shared.EnactmentFailing && c.Message != "" {
				return t + ": " + c.Message
			}
			return t
		}
	}
	return "without a state"
}

func hasEnactment(byPolicy map[string]map[string]string, node string) bool {
	for _, nodes := range byPolicy {
		if _, ok := nodes[node]; ok {
			return true
		}
	}
	return false
}
