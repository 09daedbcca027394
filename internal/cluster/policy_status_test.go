package cluster

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
)

// The policy's conditions as kubernetes-nmstate computes them (pkg/policyconditions):
// which is True, its reason and message, and which are Unknown.
func TestSummarize(t *testing.T) {
	const gen = 3
	node := func(name string, ready bool, labels ...string) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		for _, l := range labels {
			n.Labels[l] = ""
		}
		status := corev1.ConditionTrue
		if !ready {
			status = corev1.ConditionFalse
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}
		return n
	}
	four := []corev1.Node{node("w1", true, "worker"), node("w2", true, "worker"), node("w3", true, "worker"), node("w4", true, "worker")}
	threeAndDown := []corev1.Node{node("w1", true, "worker"), node("w2", true, "worker"), node("w3", true, "worker"), node("w4", false, "worker")}
	// states: one condition type per node (w1, w2, ...), "" for no enactment, "old:" for
	// one reporting an earlier generation.
	enactments := func(states ...string) []v1beta1.NodeNetworkConfigurationEnactment {
		var out []v1beta1.NodeNetworkConfigurationEnactment
		for i, st := range states {
			if st == "" {
				continue
			}
			e := v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("w%d.p", i+1), Labels: map[string]string{shared.NodeLabel: fmt.Sprintf("w%d", i+1), shared.PolicyLabel: "p"}}}
			e.Status.PolicyGeneration = gen
			if len(st) > 4 && st[:4] == "old:" {
				e.Status.PolicyGeneration, st = gen-1, st[4:]
			}
			shared.SetEnactment(&e.Status.Conditions, st, "m")
			out = append(out, e)
		}
		return out
	}
	const (
		av = shared.EnactmentAvailable
		fa = shared.EnactmentFailing
		pr = shared.EnactmentProgressing
		pe = shared.EnactmentPending
		ab = shared.EnactmentAborted
	)
	for _, tc := range []struct {
		name       string
		selector   map[string]string
		nodes      []corev1.Node
		enactments []v1beta1.NodeNetworkConfigurationEnactment
		// want: True type, reason, message; unknown: the types that are Unknown
		want    [3]string
		unknown []string
	}{
		{"no node selected", map[string]string{"infra": ""}, four, nil,
			[3]string{shared.PolicyIgnored, shared.ReasonNoMatchingNode, "Policy does not match any node"}, nil},
		{"no enactment yet", nil, four, nil,
			[3]string{shared.PolicyProgressing, shared.ReasonConfigurationProgressing, "Policy is progressing 0/4 nodes finished"},
			[]string{shared.PolicyAvailable, shared.PolicyDegraded}},
		{"one applying, three pending", nil, four, enactments(pr, pe, pe, pe),
			[3]string{shared.PolicyProgressing, shared.ReasonConfigurationProgressing, "Policy is progressing 0/4 nodes finished, 3 pending"},
			[]string{shared.PolicyAvailable, shared.PolicyDegraded}},
		{"half done", nil, four, enactments(av, av, pr, pe),
			[3]string{shared.PolicyProgressing, shared.ReasonConfigurationProgressing, "Policy is progressing 2/4 nodes finished, 1 pending"},
			[]string{shared.PolicyAvailable, shared.PolicyDegraded}},
		{"an earlier generation's report does not count", nil, four, enactments(av, av, av, "old:"+av),
			[3]string{shared.PolicyProgressing, shared.ReasonConfigurationProgressing, "Policy is progressing 3/4 nodes finished"},
			[]string{shared.PolicyAvailable, shared.PolicyDegraded}},
		{"all available", nil, four, enactments(av, av, av, av),
			[3]string{shared.PolicyAvailable, shared.ReasonSuccessfullyConfigured, "4/4 nodes successfully configured"}, nil},
		{"one failed while others still apply: Degraded at once", nil, four, enactments(av, fa, pr, pe),
			[3]string{shared.PolicyDegraded, shared.ReasonFailedToConfigure, "1/4 nodes failed to configure"}, nil},
		{"one failed, the rest aborted", nil, four, enactments(fa, ab, ab, ab),
			[3]string{shared.PolicyDegraded, shared.ReasonFailedToConfigure, "1/4 nodes failed to configure, 3 nodes aborted configuration"}, nil},
		{"aborted alone is Degraded (the failure healed meanwhile)", nil, four, enactments(av, ab, ab, pe),
			[3]string{shared.PolicyDegraded, shared.ReasonFailedToConfigure, "0/4 nodes failed to configure, 2 nodes aborted configuration"}, nil},
		{"a NotReady node not finished is left out", nil, threeAndDown, enactments(av, av, av, pe),
			[3]string{shared.PolicyAvailable, shared.ReasonSuccessfullyConfigured, "3/4 nodes successfully configured, 1 nodes ignored due to NotReady state"}, nil},
		{"a NotReady node's report does not stand in for a Ready node's", nil, threeAndDown, enactments(av, av, pr, av),
			[3]string{shared.PolicyProgressing, shared.ReasonConfigurationProgressing,
				"Policy is progressing 2/3 nodes finished, 1 nodes ignored due to NotReady state"},
			[]string{shared.PolicyAvailable, shared.PolicyDegraded}},
		{"nodes not selected are not counted", map[string]string{"worker": ""}, append(four, node("m1", true, "master")), enactments(av, av, av, av),
			[3]string{shared.PolicyAvailable, shared.ReasonSuccessfullyConfigured, "4/4 nodes successfully configured"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: gen}}
			p.Spec.NodeSelector = tc.selector
			Summarize(p, tc.nodes, tc.enactments)
			c := shared.TrueCondition(p.Status.Conditions)
			if c == nil || [3]string{c.Type, c.Reason, c.Message} != tc.want {
				t.Fatalf("True condition %+v, want %v", c, tc.want)
			}
			var unknown []string
			for _, c := range p.Status.Conditions {
				if c.Status == metav1.ConditionUnknown {
					unknown = append(unknown, c.Type)
				}
				if c.ObservedGeneration != gen || c.Reason != tc.want[1] {
					t.Errorf("%s: observedGeneration %d, reason %s", c.Type, c.ObservedGeneration, c.Reason)
				}
			}
			if fmt.Sprint(unknown) != fmt.Sprint(tc.unknown) {
				t.Errorf("Unknown: %v, want %v", unknown, tc.unknown)
			}
			if len(p.Status.Conditions) != len(shared.PolicyTypes) {
				t.Errorf("%d conditions", len(p.Status.Conditions))
			}
		})
	}
}
