// Package plan is what applying a policy would change on each node it selects, decided as
// the node's handler would decide it, against the node's NodeNetworkState, touching no
// node (`nmoverlay plan`). The policy is merged with the node's other policies by the
// handler's own Compose, their captures rendered by its own Capture (results an
// enactment keeps are reused, the others evaluated against the NodeNetworkState), and
// what would change is the backend's own Drift of the merged state against the node's
// current state: the fields the apply must change to be verified in effect. What the
// policy in force made and the new one no longer states goes too: the handler builds the
// node's profiles from the merged state only. Pure: the command reads the cluster.
package plan

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/backend"
	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/nmpolicy"
	"github.com/nmoverlay/nmoverlay/internal/node"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// Node is what the plan reads of one node.
type Node struct {
	Name   string
	Labels map[string]string
	// InternalIPs are the Node's InternalIP addresses.
	InternalIPs []netip.Addr
	// Current is its NodeNetworkState's currentState; Capabilities its
	// hostNetworkManagerCapabilities.
	Current      state.State
	Capabilities []string
	// Enactments are its enactments by policy: the captures they keep are reused.
	Enactments map[string]*v1beta1.NodeNetworkConfigurationEnactment
}

// Input is what every node's plan shares.
type Input struct {
	// InForce are the cluster's policies as they are now.
	InForce []node.Policy
	// Planned is the policy to plan: a new one, or an edit of the one of InForce with its
	// name.
	Planned node.Policy
	// APIServer is the API server's address: a change to the interface carrying the
	// route to it is a risk.
	APIServer netip.Addr
	Now       time.Time
}

// Kind is what a change does.
type Kind string

const (
	// Create: an interface that does not exist is made.
	Create Kind = "create"
	// Remove: an existing interface the policy states absent is removed.
	Remove Kind = "remove"
	// Release: no policy states the interface any more; the node runs its persistent
	// profile again, or, for one the policies made, no longer has it.
	Release Kind = "release"
	// Set: a field changes, Old → New.
	Set Kind = "set"
	// Add and Drop: an address, route, route rule or DNS entry added or dropped.
	Add  Kind = "add"
	Drop Kind = "drop"
)

// Change is one change on a node.
type Change struct {
	Kind Kind `json:"kind"`
	// Path is the field's path, its interface first (`eth1.mtu`, `routes.config`).
	Path string `json:"path"`
	Old  string `json:"old,omitempty"`
	New  string `json:"new,omitempty"`
}

func (c Change) String() string {
	switch c.Kind {
	case Create:
		return fmt.Sprintf("+ %s %s", c.Path, c.New)
	case Remove:
		return fmt.Sprintf("- %s (absent)", c.Path)
	case Release:
		return fmt.Sprintf("< %s: %s", c.Path, c.Old)
	case Add:
		return fmt.Sprintf("+ %s: %s", c.Path, c.New)
	case Drop:
		return fmt.Sprintf("- %s: %s", c.Path, c.Old)
	}
	return fmt.Sprintf("~ %s: %s → %s", c.Path, c.Old, c.New)
}

// Result is one node's plan.
type Result struct {
	Node    string   `json:"-"`
	Changes []Change `json:"changes,omitempty"`
	// Conflicts name the policies the planned one conflicts with on the node; Refusals
	// say why the node would refuse it (a field path and the reason).
	Conflicts []string `json:"conflicts,omitempty"`
	Refusals  []string `json:"refusals,omitempty"`
	// Risks: the change touches what the node needs to reach its cluster.
	Risks []string `json:"risks,omitempty"`
}

// Failed reports whether the node would not apply the policy.
func (r Result) Failed() bool { return len(r.Conflicts) > 0 || len(r.Refusals) > 0 }

// Selects reports whether the planned policy, or the one of its name in force, selects n:
// the nodes whose plan means something.
func (in Input) Selects(n Node) bool {
	if in.Planned.Selects(n.Labels) {
		return true
	}
	old, ok := in.old()
	return ok && old.Selects(n.Labels)
}

func (in Input) old() (node.Policy, bool) {
	i := slices.IndexFunc(in.InForce, func(p node.Policy) bool { return p.Name == in.Planned.Name })
	if i < 0 {
		return node.Policy{}, false
	}
	return in.InForce[i], true
}

// ForNode plans the policy on n with the nmstate schema (the networkmanager backend's).
func ForNode(in Input, n Node) (Result, error) {
	r := Result{Node: n.Name}
	var others []node.Policy
	for _, p := range in.InForce {
		if p.Name != in.Planned.Name && p.Selects(n.Labels) {
			others = append(others, p)
		}
	}
	var tree nmpolicy.Tree
	current := func() (nmpolicy.Tree, error) {
		if tree != nil {
			return tree, nil
		}
		var err error
		tree, err = nmpolicy.ToTree(n.Current)
		return tree, err
	}
	render := func(ps []node.Policy) ([]node.Policy, error) {
		out := slices.Clone(ps)
		for i := range out {
			if err := node.Capture(&out[i], n.Enactments[out[i].Name], current, in.Now); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	var err error
	if others, err = render(others); err != nil {
		return r, err
	}
	var before []node.Policy
	if old, ok := in.old(); ok && old.Selects(n.Labels) {
		if before, err = render([]node.Policy{old}); err != nil {
			return r, err
		}
	}
	after := []node.Policy{}
	if in.Planned.Selects(n.Labels) {
		if after, err = render([]node.Policy{in.Planned}); err != nil {
			return r, err
		}
		if p := &after[0]; p.CaptureError == "" {
			p.Refused = lacking(p.DesiredState, n)
		}
	}
	schema := backend.NMState{}
	was := node.Compose(schema, append(slices.Clone(others), before...))
	will := node.Compose(schema, append(slices.Clone(others), after...))

	if msg, failed := will.Failed[in.Planned.Name]; failed {
		var with []string
		for name := range will.Failed {
			if _, before := was.Failed[name]; name != in.Planned.Name && !before {
				with = append(with, name)
			}
		}
		slices.Sort(with)
		if len(with) > 0 {
			r.Conflicts = append(r.Conflicts, fmt.Sprintf("with %s: %s", strings.Join(with, ", "), msg))
		} else {
			r.Refusals = append(r.Refusals, msg)
		}
		return r, nil
	}
	wasState, err := backend.NMStateOf(was.Apply)
	if err != nil {
		return r, err
	}
	willState, err := backend.NMStateOf(will.Apply)
	if err != nil {
		return r, err
	}
	raw, err := json.Marshal(willState)
	if err != nil {
		return r, err
	}
	drift, err := schema.Drift(raw, n.Current)
	if err != nil {
		r.Refusals = append(r.Refusals, "spec.desiredState: "+err.Error())
		return r, nil
	}
	for _, line := range drift {
		r.Changes = append(r.Changes, classify(line, willState))
	}
	r.Changes = append(r.Changes, removed(r.Changes, willState, n.Current)...)
	r.Changes = append(r.Changes, adopted(r.Changes, willState, n.Current)...)
	r.Changes = append(r.Changes, orphaned(r.Changes, willState, n.Current)...)
	r.Changes = append(r.Changes, peers(r.Changes, willState, n.Current)...)
	r.Changes = append(r.Changes, replacedRoutes(willState, n.Current)...)
	r.Changes = append(r.Changes, released(wasState, willState, n.Current)...)
	r.Changes = unique(r.Changes)
	slices.SortStableFunc(r.Changes, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	r.Risks = risks(r.Changes, n, in.APIServer)
	return r, nil
}

// lacking is why the node's NetworkManager cannot apply desired: each field that needs a
// capability its NodeNetworkState does not list, with the releases that have it. The
// node is not named: its group's heading names it, and nodes alike print once.
func lacking(desired []byte, n Node) string {
	_, needs, err := state.ParseNeeds(desired)
	if err != nil {
		return "" // Compose reports the parse error with its paths
	}
	var out []string
	for _, need := range needs {
		if !slices.Contains(n.Capabilities, string(need.Capability)) {
			out = append(out, fmt.Sprintf("spec.desiredState.%s: needs %s, which the node's NetworkManager does not have (%s; its NodeNetworkState lists %s)",
				need.Path, need.Capability, networkmanager.Supports(need.Capability), listed(n.Capabilities)))
		}
	}
	return strings.Join(out, "; ")
}

func listed(capabilities []string) string {
	if len(capabilities) == 0 {
		return "none"
	}
	return strings.Join(capabilities, ", ")
}
