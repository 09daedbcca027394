package node

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nmoverlay/nmoverlay/api/shared"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
)

func TestSlotsFull(t *testing.T) {
	const (
		self    = "node-c"
		gen     = 2
		timeout = 5 * time.Minute
	)
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }

	// Five nodes, node-e NotReady; only node-a and node-b are labelled for the "ab" selector.
	var nodes []corev1.Node
	for _, name := range []string{"node-a", "node-b", "node-c", "node-d", "node-e"} {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		ready := corev1.ConditionTrue
		if name == "node-e" {
			ready = corev1.ConditionFalse
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}
		if name == "node-a" || name == "node-b" {
			n.Labels["ab"] = "yes"
		}
		nodes = append(nodes, n)
	}

	seq := 0 // distinct names, as the API server would have them
	claimOf := func(node string, generation int64, status metav1.ConditionStatus, at time.Time) v1beta1.NodeNetworkConfigurationEnactment {
		seq++
		e := v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("%s.p-%08d", node, seq),
			Labels: map[string]string{shared.NodeLabel: node, shared.PolicyLabel: "p"},
		}}
		e.Status.PolicyGeneration = generation
		e.Status.Conditions = []metav1.Condition{{Type: shared.EnactmentProgressing, Status: status,
			Reason: shared.ReasonConfigurationProgressing, LastTransitionTime: metav1.NewTime(at)}}
		return e
	}
	claim := func(node string, at time.Time) v1beta1.NodeNetworkConfigurationEnactment {
		return claimOf(node, gen, metav1.ConditionTrue, at)
	}
	mine := func(at time.Time) *v1beta1.NodeNetworkConfigurationEnactment {
		e := claim(self, at)
		return &e
	}
	pol := func(maxUnavailable *intstr.IntOrString, selector map[string]string) Policy {
		return Policy{Name: "p", Generation: gen, MaxUnavailable: maxUnavailable, NodeSelector: selector}
	}
	cs := func(e ...v1beta1.NodeNetworkConfigurationEnactment) []v1beta1.NodeNetworkConfigurationEnactment {
		return e
	}
	one := pol(&intstr.IntOrString{IntVal: 1}, nil)
	two := pol(&intstr.IntOrString{IntVal: 2}, nil)
	percent := func(p string) *intstr.IntOrString { return &intstr.IntOrString{Type: intstr.String, StrVal: p} }
	const whyOne, whyTwo = "p: 1 of 5 nodes may apply it at once", "p: 2 of 5 nodes may apply it at once"

	for _, tc := range []struct {
		name   string
		policy Policy
		claims []v1beta1.NodeNetworkConfigurationEnactment
		own    *v1beta1.NodeNetworkConfigurationEnactment
		full   bool
		why    string
	}{
		{name: "no claim", policy: one,
			claims: nil, full: false, why: whyOne},
		{name: "another node's claim takes the one slot", policy: one,
			claims: cs(claim("node-a", ago(time.Minute))), full: true, why: whyOne},
		{name: "two slots, one taken", policy: two,
			claims: cs(claim("node-a", ago(time.Minute))), full: false, why: whyTwo},
		{name: "two slots, both taken", policy: two,
			claims: cs(claim("node-a", ago(time.Minute)), claim("node-b", ago(time.Minute))), full: true, why: whyTwo},

		// One slot per node, however many enactments it labels for the policy.
		{name: "three claims of one node hold one slot", policy: two,
			claims: cs(claim("node-a", ago(time.Minute)), claim("node-a", ago(2*time.Minute)), claim("node-a", ago(3*time.Minute))), full: false, why: whyTwo},
		{name: "three claims of one node rank once, ahead of self", policy: two,
			claims: cs(claim("node-a", ago(time.Minute)), claim("node-a", ago(2*time.Minute)), claim("node-a", ago(3*time.Minute))), own: mine(now), full: false, why: whyTwo},
		{name: "a node ranks by its earliest valid claim", policy: one,
			claims: cs(claim("node-a", now.Add(time.Second)), claim("node-a", ago(time.Second))), own: mine(now), full: true, why: whyOne},
		{name: "an expired claim does not move its node ahead", policy: one,
			claims: cs(claim("node-a", now.Add(time.Second)), claim("node-a", ago(timeout+time.Second))), own: mine(now), full: false, why: whyOne},
		{name: "self's other enactments are not claims against it", policy: one,
			claims: cs(claim(self, ago(time.Minute)), claim(self, ago(2*time.Minute))), full: false, why: whyOne},

		// Claims dated in the future.
		{name: "a claim dated beyond the clock skew holds no slot", policy: one,
			claims: cs(claim("node-a", now.Add(clockSkew+time.Second))), full: false, why: whyOne},
		{name: "a claim dated a year ahead holds no slot", policy: one,
			claims: cs(claim("node-a", now.AddDate(1, 0, 0))), full: false, why: whyOne},
		{name: "a claim dated within the clock skew holds one", policy: one,
			claims: cs(claim("node-a", now.Add(clockSkew))), full: true, why: whyOne},
		{name: "two slots: a claim dated an hour ahead leaves the second free", policy: two,
			claims: cs(claim("node-a", ago(time.Minute)), claim("node-b", now.Add(time.Hour))), full: false, why: whyTwo},

		// The rules that free a slot.
		{name: "a NotReady node's claim holds no slot", policy: one,
			claims: cs(claim("node-e", ago(time.Minute))), full: false, why: whyOne},
		{name: "an unknown node's claim holds no slot", policy: one,
			claims: cs(claim("node-gone", ago(time.Minute))), full: false, why: whyOne},
		{name: "a claim older than the timeout holds no slot", policy: one,
			claims: cs(claim("node-a", ago(timeout+time.Second))), full: false, why: whyOne},
		{name: "a claim exactly as old as the timeout still holds one", policy: one,
			claims: cs(claim("node-a", ago(timeout))), full: true, why: whyOne},
		{name: "a claim of another generation holds no slot", policy: one,
			claims: cs(claimOf("node-a", gen-1, metav1.ConditionTrue, ago(time.Minute))), full: false, why: whyOne},
		{name: "an enactment no longer Progressing holds no slot", policy: one,
			claims: cs(claimOf("node-a", gen, metav1.ConditionFalse, ago(time.Minute))), full: false, why: whyOne},

		// Ranking with own: by time, then node name.
		{name: "an earlier claim is ahead", policy: one,
			claims: cs(claim("node-d", ago(time.Second))), own: mine(now), full: true, why: whyOne},
		{name: "a later claim is behind", policy: one,
			claims: cs(claim("node-a", now.Add(time.Second))), own: mine(now), full: false, why: whyOne},
		{name: "at the same time, a lower node name is ahead", policy: one,
			claims: cs(claim("node-a", now)), own: mine(now), full: true, why: whyOne},
		{name: "at the same time, a higher node name is behind", policy: one,
			claims: cs(claim("node-d", now)), own: mine(now), full: false, why: whyOne},
		{name: "two slots, two ahead", policy: two,
			claims: cs(claim("node-a", ago(2*time.Second)), claim("node-b", ago(time.Second)), claim("node-d", now.Add(time.Second))), own: mine(now), full: true, why: whyTwo},
		{name: "two slots, one ahead", policy: two,
			claims: cs(claim("node-a", ago(time.Second)), claim("node-b", now.Add(time.Second)), claim("node-d", now.Add(time.Second))), own: mine(now), full: false, why: whyTwo},

		// maxUnavailable, resolved against the nodes the policy selects.
		{name: "default 50% of 5 nodes rounds up to 3", policy: pol(nil, nil),
			claims: cs(claim("node-a", now), claim("node-b", now)), full: false, why: "p: 3 of 5 nodes may apply it at once"},
		{name: "default 50% of 5 nodes, 3 taken", policy: pol(nil, nil),
			claims: cs(claim("node-a", now), claim("node-b", now), claim("node-d", now)), full: true, why: "p: 3 of 5 nodes may apply it at once"},
		{name: "a percentage of the selected nodes only", policy: pol(percent("50%"), map[string]string{"ab": "yes"}),
			claims: cs(claim("node-a", now)), full: true, why: "p: 1 of 2 nodes may apply it at once"},
		{name: "100%", policy: pol(percent("100%"), nil),
			claims: cs(claim("node-a", now), claim("node-b", now), claim("node-d", now)), full: false, why: "p: 5 of 5 nodes may apply it at once"},
		{name: "1% is still one node", policy: pol(percent("1%"), nil),
			claims: cs(claim("node-a", now)), full: true, why: "p: 1 of 5 nodes may apply it at once"},
		{name: "no selected node is still one slot", policy: pol(nil, map[string]string{"none": "yes"}),
			claims: nil, full: false, why: "p: 1 of 0 nodes may apply it at once"},
		{name: "a number as a string is one node", policy: pol(percent("3"), nil),
			claims: cs(claim("node-a", now)), full: true, why: "p: 1 of 5 nodes may apply it at once"},
		{name: "zero is one node", policy: pol(&intstr.IntOrString{IntVal: 0}, nil),
			claims: cs(claim("node-a", now)), full: true, why: "p: 1 of 5 nodes may apply it at once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newRolloutView(nodes, tc.claims)
			full, why, _ := v.slotsFull(tc.policy, self, tc.own, timeout, now)
			if full != tc.full || why != tc.why {
				t.Errorf("slotsFull = %v, %q; want %v, %q", full, why, tc.full, tc.why)
			}
		})
	}
}
