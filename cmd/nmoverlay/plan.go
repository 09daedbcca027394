package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/api/field"
	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/deploy"
	"github.com/nmoverlay/nmoverlay/internal/node"
	"github.com/nmoverlay/nmoverlay/internal/plan"
	"github.com/nmoverlay/nmoverlay/internal/probe"
)

const planAbout = `Shows what applying a policy would change on each node it selects, before it is applied,
touching no node. With the administrator's kubeconfig it reads the Nodes, the policies in
force, the NodeNetworkStates and the enactments, and for each node the policy selects it
merges the policy with the node's other policies as the node's handler would (captures
evaluated against the NodeNetworkState, or reused from the enactment as the handler reuses
them), then compares the merged state with the node's current state as the handler
verifies an apply: what would be created, changed (old → new) or removed, what the policy
in force made and the new one no longer states, conflicts with other policies (named),
refusals (the field path and the reason, a capability the node's NetworkManager lacks
among them), and risks (the interface of the node's default route, of its route to the
API server, or holding its InternalIP). Nodes with the same plan print once.

POLICY is a manifest file holding one NodeNetworkConfigurationPolicy (an edit of a policy
in force when its name is one), or the name of a policy in force (what applying it again
would change). Installed as kubectl-nmoverlay, it runs as kubectl nmoverlay plan.

Exit status: 0 no change on any node, 2 changes, 1 refusals or conflicts on a node, or an
error (bad input, no kubeconfig, an unknown node, a selected node without its
NodeNetworkState).`

// Exit statuses of plan, which scripts read.
const (
	planNoChange = 0
	planFailed   = 1
	planChanges  = 2
)

// runPlan is `nmoverlay plan [--kubeconfig FILE] [--node NAME] [-o text|yaml|json] POLICY`.
func runPlan(args []string, stdout, stderr io.Writer) int {
	const name = "nmoverlay plan"
	fset := flag.NewFlagSet(name, flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	kubeconfig := fset.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	output := fset.String("o", "text", "output: text, yaml or json")
	only := fset.String("node", "", "plan this node only")
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, name+": "+format+"\n", a...)
		return planFailed
	}
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "Usage: %s [--kubeconfig FILE] [--node NAME] [-o text|yaml|json] POLICY.yaml|NAME\n\n%s\n", name, planAbout)
			return planNoChange
		}
		return fail("%v (see %s -h)", err, name)
	}
	if !slices.Contains([]string{"text", "yaml", "json"}, *output) || fset.NArg() != 1 {
		return fail("one POLICY.yaml or policy name, and -o text, yaml or json (see %s -h)", name)
	}
	arg := fset.Arg(0)
	var planned *nmstatev1.NodeNetworkConfigurationPolicy
	if _, err := os.Stat(arg); err == nil {
		var problems []string
		if planned, problems = policyFile(arg); len(problems) > 0 {
			for _, p := range problems {
				fmt.Fprintln(stderr, p)
			}
			return planFailed
		}
	}

	cfg, c, err := adminClient(*kubeconfig)
	if err != nil {
		return fail("%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := readCluster(ctx, c)
	if err != nil {
		return fail("%v", err)
	}
	if cl.backend == nmstatev1.BackendNetplan {
		return fail("this cluster's nodes take netplan's schema (spec.backend: netplan in the NMState): plan reads nmstate's only")
	}
	if planned == nil {
		i := slices.IndexFunc(cl.policies, func(p nmstatev1.NodeNetworkConfigurationPolicy) bool { return p.Name == arg })
		if i < 0 {
			return fail("%s: no such file, and no policy of that name in the cluster", arg)
		}
		planned = &cl.policies[i]
	}
	in := plan.Input{Planned: node.PolicyOf(planned), APIServer: probe.APIServerAddress(ctx, cfg.Host), Now: time.Now()}
	for i := range cl.policies {
		in.InForce = append(in.InForce, node.PolicyOf(&cl.policies[i]))
	}
	if *only != "" && !slices.ContainsFunc(cl.nodes, func(n corev1.Node) bool { return n.Name == *only }) {
		return fail("no node %s in the cluster", *only)
	}
	var results []plan.Result
	for _, n := range cl.nodes {
		if *only != "" && n.Name != *only {
			continue
		}
		pn := plan.Node{Name: n.Name, Labels: n.Labels, Enactments: cl.enactments[n.Name]}
		if !in.Selects(pn) {
			continue
		}
		nns, ok := cl.states[n.Name]
		if !ok {
			return fail("node %s: no NodeNetworkState (its handler has not reported the node's state yet)", n.Name)
		}
		if err := json.Unmarshal(nns.Status.CurrentState.Raw, &pn.Current); err != nil {
			return fail("node %s: its NodeNetworkState's currentState: %v", n.Name, err)
		}
		pn.Capabilities = nns.Status.HostNetworkManagerCapabilities
		for _, a := range n.Status.Addresses {
			if ip, err := netip.ParseAddr(a.Address); err == nil && a.Type == corev1.NodeInternalIP {
				pn.InternalIPs = append(pn.InternalIPs, ip)
			}
		}
		r, err := plan.ForNode(in, pn)
		if err != nil {
			return fail("node %s: %v", n.Name, err)
		}
		results = append(results, r)
	}
	groups := plan.Groups(results)
	switch *output {
	case "text":
		fmt.Fprintf(stdout, "policy %s on %d node(s):\n", planned.Name, len(results))
		for _, g := range groups {
			fmt.Fprint(stdout, g.Text())
		}
	default:
		out := struct {
			Policy string       `json:"policy"`
			Groups []plan.Group `json:"groups"`
		}{planned.Name, groups}
		b, err := json.MarshalIndent(out, "", "  ")
		if err == nil && *output == "yaml" {
			b, err = yaml.JSONToYAML(b)
		}
		if err != nil {
			return fail("%v", err)
		}
		fmt.Fprintf(stdout, "%s\n", b)
	}
	status := planNoChange
	for _, r := range results {
		switch {
		case r.Failed():
			return planFailed
		case len(r.Changes) > 0:
			status = planChanges
		}
	}
	return status
}

// policyFile reads the one policy of file, checked as validate checks it; problems are
// one line each, with the file and the field path.
func policyFile(file string) (*nmstatev1.NodeNetworkConfigurationPolicy, []string) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, []string{fmt.Sprintf("%s: %v", file, err)}
	}
	docs, err := deploy.Documents(b)
	if err != nil {
		return nil, []string{fmt.Sprintf("%s: not YAML: %v", file, err)}
	}
	var found []*unstructured.Unstructured
	for _, doc := range docs {
		d, err := doc.Object()
		if err != nil {
			return nil, []string{fmt.Sprintf("%s: document %d: %v", file, doc.Number, err)}
		}
		if isPolicy(d) {
			found = append(found, d)
		}
	}
	switch len(found) {
	case 0:
		return nil, []string{fmt.Sprintf("%s: not a NodeNetworkConfigurationPolicy (no document of apiVersion nmstate.io/v1 and that kind)", file)}
	case 1:
	default:
		return nil, []string{fmt.Sprintf("%s: %d policies; plan one at a time", file, len(found))}
	}
	d := found[0]
	if _, err := checkPolicy(d); err != nil {
		var errs field.Errors
		if !errors.As(err, &errs) {
			return nil, []string{fmt.Sprintf("%s: policy %s: %v", file, d.GetName(), err)}
		}
		var lines []string
		for _, e := range errs {
			lines = append(lines, fmt.Sprintf("%s: policy %s: %s", file, d.GetName(), e.Error()))
		}
		return nil, lines
	}
	p := &nmstatev1.NodeNetworkConfigurationPolicy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(d.Object, p); err != nil {
		return nil, []string{fmt.Sprintf("%s: policy %s: %v", file, d.GetName(), err)}
	}
	return p, nil
}

// cluster is what plan reads of the cluster.
type cluster struct {
	backend    string
	nodes      []corev1.Node
	policies   []nmstatev1.NodeNetworkConfigurationPolicy
	states     map[string]*v1beta1.NodeNetworkState
	enactments map[string]map[string]*v1beta1.NodeNetworkConfigurationEnactment // node → policy
}

func readCluster(ctx context.Context, c client.Client) (*cluster, error) {
	cl := &cluster{states: map[string]*v1beta1.NodeNetworkState{}, enactments: map[string]map[string]*v1beta1.NodeNetworkConfigurationEnactment{}}
	nm := &nmstatev1.NMState{}
	switch err := c.Get(ctx, client.ObjectKey{Name: nmstatev1.NMStateName}, nm); {
	case err == nil:
		cl.backend = nm.Spec.Backend
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading the NMState: %w", err)
	}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		return nil, fmt.Errorf("listing the nodes: %w", err)
	}
	cl.nodes = nodes.Items
	policies := &nmstatev1.NodeNetworkConfigurationPolicyList{}
	if err := c.List(ctx, policies); err != nil {
		return nil, fmt.Errorf("listing the policies (is nmoverlay installed?): %w", err)
	}
	cl.policies = policies.Items
	states := &v1beta1.NodeNetworkStateList{}
	if err := c.List(ctx, states); err != nil {
		return nil, fmt.Errorf("listing the NodeNetworkStates: %w", err)
	}
	for i := range states.Items {
		cl.states[states.Items[i].Name] = &states.Items[i]
	}
	enactments := &v1beta1.NodeNetworkConfigurationEnactmentList{}
	if err := c.List(ctx, enactments); err != nil {
		return nil, fmt.Errorf("listing the enactments: %w", err)
	}
	for i := range enactments.Items {
		e := &enactments.Items[i]
		n := e.Labels[shared.NodeLabel]
		if cl.enactments[n] == nil {
			cl.enactments[n] = map[string]*v1beta1.NodeNetworkConfigurationEnactment{}
		}
		cl.enactments[n][e.Labels[shared.PolicyLabel]] = e
	}
	return cl, nil
}
