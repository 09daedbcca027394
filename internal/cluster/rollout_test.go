package cluster

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
)

func TestDecideSlots(t *testing.T) {
	const (
		gen     = 2
		timeout = 5 * time.Minute
	)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }

	// Five nodes, node-e NotReady; only node-a and node-b are labelled for the "ab" selector.
	var nodes []corev1.Node
	for _, name := range []string{"node-d", "node-c", "node-b", "node-a", "node-e"} { // not in order
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
	enactment := func(node string) v1beta1.NodeNetworkConfigurationEnactment {
		seq++
		return v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("%s.p-%08d", node, seq),
			Labels: map[string]string{shared.NodeLabel: node, shared.PolicyLabel: "p"},
		}}
	}
	grantOf := func(node string, generation int64, at time.Time) v1beta1.NodeNetworkConfigurationEnactment {
		e := enactment(node)
		metav1.SetMetaDataAnnotation(&e.ObjectMeta, shared.RolloutSlotAnnotation, shared.FormatRolloutSlot(generation, at))
		return e
	}
	grant := func(node string, at time.Time) v1beta1.NodeNetworkConfigurationEnactment {
		return grantOf(node, gen, at)
	}
	// reported: the node's handler reported generation with this condition, after its grant.
	reported := func(e v1beta1.NodeNetworkConfigurationEnactment, generation int64, cond string) v1beta1.NodeNetworkConfigurationEnactment {
		e.Status.PolicyGeneration = generation
		shared.SetEnactment(&e.Status.Conditions, cond, "m")
		return e
	}
	// refusedDegraded: the node's handler refused the generation, its overlay not in use.
	refusedDegraded := func(e v1beta1.NodeNetworkConfigurationEnactment) v1beta1.NodeNetworkConfigurationEnactment {
		e.Status.PolicyGeneration = gen
		shared.SetEnactment(&e.Status.Conditions, shared.EnactmentFailing, shared.MessageRefusedDegraded+"not set up in this boot")
		return e
	}
	requeuedAt := func(e v1beta1.NodeNetworkConfigurationEnactment, generation int64) v1beta1.NodeNetworkConfigurationEnactment {
		metav1.SetMetaDataAnnotation(&e.ObjectMeta, shared.RolloutRequeuedAnnotation, fmt.Sprint(generation))
		return e
	}
	pol := func(maxUnavailable *intstr.IntOrString, selector map[string]string) *nmstatev1.NodeNetworkConfigurationPolicy {
		p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: gen}}
		p.Spec.MaxUnavailable, p.Spec.NodeSelector = maxUnavailable, selector
		return p
	}
	es := func(e ...v1beta1.NodeNetworkConfigurationEnactment) []v1beta1.NodeNetworkConfigurationEnactment {
		return e
	}
	one := pol(&intstr.IntOrString{IntVal: 1}, nil)
	two := pol(&intstr.IntOrString{IntVal: 2}, nil)
	percent := func(p string) *intstr.IntOrString { return &intstr.IntOrString{Type: intstr.String, StrVal: p} }
	list := func(names ...string) []string { return names }
	bcde := list("node-b", "node-c", "node-d", "node-e")

	for _, tc := range []struct {
		name       string
		policy     *nmstatev1.NodeNetworkConfigurationPolicy
		enactments []v1beta1.NodeNetworkConfigurationEnactment
		max        int
		requeued   map[string]int64
		holding    []string
		grant      []string
		pending    []string
		abort      []string
		failedOn   []string
		refused    []string
		requeue    []string
		recheck    time.Duration
	}{
		{name: "nothing granted yet: the first Ready node by name", policy: one,
			max: 1, grant: list("node-a"), pending: bcde},
		{name: "a grant held takes the one slot", policy: one, enactments: es(grant("node-a", ago(time.Minute))),
			max: 1, holding: list("node-a"), pending: bcde, recheck: 4 * time.Minute},
		{name: "two slots, one held", policy: two, enactments: es(grant("node-a", ago(time.Minute))),
			max: 2, holding: list("node-a"), grant: list("node-b"), pending: list("node-c", "node-d", "node-e"), recheck: 4 * time.Minute},
		{name: "two slots, both held", policy: two, enactments: es(grant("node-a", ago(time.Minute)), grant("node-c", ago(2*time.Minute))),
			max: 2, holding: list("node-a", "node-c"), pending: list("node-b", "node-d", "node-e"), recheck: 3 * time.Minute},
		{name: "a grant used (Available) frees its slot", policy: one, enactments: es(reported(grant("node-a", ago(time.Minute)), gen, shared.EnactmentAvailable)),
			max: 1, grant: list("node-b"), pending: list("node-c", "node-d", "node-e")},
		{name: "a failure stops the rollout: every node not granted is aborted", policy: one,
			enactments: es(reported(grant("node-a", ago(time.Minute)), gen, shared.EnactmentFailing)),
			max:        1, failedOn: list("node-a"), abort: bcde},
		{name: "a failure stops the rollout; nodes applying go on", policy: pol(percent("100%"), nil),
			enactments: es(reported(grant("node-a", ago(time.Minute)), gen, shared.EnactmentFailing), grant("node-b", ago(time.Minute))),
			max:        5, holding: list("node-b"), failedOn: list("node-a"), abort: list("node-c", "node-d", "node-e"), recheck: 4 * time.Minute},
		{name: "a failure stops the rollout even with slots free", policy: pol(percent("100%"), nil),
			enactments: es(reported(grant("node-c", ago(time.Minute)), gen, shared.EnactmentFailing),
				reported(grant("node-d", ago(time.Minute)), gen, shared.EnactmentFailing), reported(grant("node-a", ago(time.Minute)), gen, shared.EnactmentAvailable)),
			max: 5, failedOn: list("node-c", "node-d"), abort: list("node-b", "node-e")},
		{name: "an enactment set Failing by hand, without a grant, stops it too", policy: one,
			enactments: es(reported(enactment("node-d"), gen, shared.EnactmentFailing)),
			max:        1, failedOn: list("node-d"), abort: list("node-a", "node-b", "node-c", "node-e")},
		{name: "a failure of an earlier generation does not: the new one starts clean", policy: one,
			enactments: es(reported(grantOf("node-a", gen-1, ago(time.Hour)), gen-1, shared.EnactmentFailing)),
			max:        1, grant: list("node-a"), pending: bcde},
		{name: "a failure on a node the policy no longer selects does not", policy: pol(nil, map[string]string{"ab": "yes"}),
			enactments: es(reported(grant("node-c", ago(time.Minute)), gen, shared.EnactmentFailing)),
			max:        1, grant: list("node-a"), pending: list("node-b")},
		{name: "a node Aborted before stays aborted while the failure lasts", policy: one,
			enactments: es(reported(grant("node-a", ago(time.Minute)), gen, shared.EnactmentFailing), reported(enactment("node-b"), gen, shared.EnactmentAborted)),
			max:        1, failedOn: list("node-a"), abort: bcde},
		{name: "a node that refused while its overlay is not in use failed nothing: the others go on, it waits unwritten", policy: one,
			enactments: es(refusedDegraded(enactment("node-a"))),
			max:        1, grant: list("node-b"), pending: list("node-c", "node-d", "node-e"), refused: list("node-a")},
		{name: "a refusal while degraded beside a failure: the failure aborts the others, the refusal is left", policy: one,
			enactments: es(refusedDegraded(enactment("node-a")), reported(grant("node-b", ago(time.Minute)), gen, shared.EnactmentFailing)),
			max:        1, failedOn: list("node-b"), abort: list("node-c", "node-d", "node-e"), refused: list("node-a")},
		{name: "once the failed node recovers (a retry succeeded), the aborted nodes go on", policy: one,
			enactments: es(reported(grant("node-a", ago(time.Minute)), gen, shared.EnactmentAvailable), reported(enactment("node-b"), gen, shared.EnactmentAborted)),
			max:        1, grant: list("node-b"), pending: list("node-c", "node-d", "node-e")},

		// A node that lost its grant (its enactment deleted) goes behind
		// every node that has not had one.
		{name: "a requeued node (remembered) comes after the others", policy: one, requeued: map[string]int64{"node-a": gen},
			max: 1, grant: list("node-b"), pending: list("node-a", "node-c", "node-d", "node-e"), requeue: list("node-a")},
		{name: "a requeued node (its recreated enactment says so) comes after the others", policy: one,
			enactments: es(requeuedAt(enactment("node-a"), gen)),
			max:        1, grant: list("node-b"), pending: list("node-a", "node-c", "node-d", "node-e"), requeue: list("node-a")},
		{name: "requeued for an earlier generation: not behind", policy: one, requeued: map[string]int64{"node-a": gen - 1},
			max: 1, grant: list("node-a"), pending: bcde},
		{name: "a requeued node is granted once every other Ready node had a grant", policy: pol(percent("100%"), nil),
			requeued: map[string]int64{"node-a": gen},
			enactments: es(reported(grant("node-b", ago(time.Minute)), gen, shared.EnactmentAvailable), grant("node-c", ago(time.Minute)),
				reported(grant("node-d", ago(time.Minute)), gen, shared.EnactmentAvailable)),
			max: 5, holding: list("node-c"), grant: list("node-a"), pending: list("node-e"), requeue: list("node-a"), recheck: 4 * time.Minute},
		{name: "a requeued node granted again holds its slot", policy: one,
			enactments: es(requeuedAt(grant("node-a", ago(time.Minute)), gen)), requeued: map[string]int64{"node-a": gen},
			max: 1, holding: list("node-a"), pending: bcde, recheck: 4 * time.Minute},
		{name: "two requeued nodes, by name, after the fresh", policy: pol(&intstr.IntOrString{IntVal: 3}, nil),
			requeued: map[string]int64{"node-c": gen, "node-a": gen},
			max:      3, grant: list("node-a", "node-b", "node-d"), pending: list("node-c", "node-e"), requeue: list("node-a", "node-c")},
		{name: "a node waiting for another tool's checkpoint (Progressing) still holds it", policy: one,
			enactments: es(reported(grant("node-a", ago(time.Minute)), gen, shared.EnactmentProgressing)),
			max:        1, holding: list("node-a"), pending: bcde, recheck: 4 * time.Minute},
		{name: "a generation reported before any grant (an enactment from before grants, a refusal) is done", policy: one,
			enactments: es(reported(enactment("node-a"), gen, shared.EnactmentAvailable)),
			max:        1, grant: list("node-b"), pending: list("node-c", "node-d", "node-e")},

		// One slot per node, however many enactments it has for the policy.
		{name: "three grants of one node hold one slot", policy: two,
			enactments: es(grant("node-a", ago(time.Minute)), grant("node-a", ago(2*time.Minute)), grant("node-a", ago(3*time.Minute))),
			max:        2, holding: list("node-a"), grant: list("node-b"), pending: list("node-c", "node-d", "node-e"), recheck: 4 * time.Minute},
		{name: "a node's latest grant is the one that times out", policy: one,
			enactments: es(grant("node-a", ago(time.Hour)), grant("node-a", ago(time.Minute))),
			max:        1, holding: list("node-a"), pending: bcde, recheck: 4 * time.Minute},

		// Grants dated in the future (another replica's clock).
		{name: "a grant dated beyond the clock skew holds no slot", policy: one, enactments: es(grant("node-a", now.Add(clockSkew+time.Second))),
			max: 1, grant: list("node-b"), pending: list("node-c", "node-d", "node-e")},
		{name: "a grant dated a year ahead holds no slot", policy: one, enactments: es(grant("node-a", now.AddDate(1, 0, 0))),
			max: 1, grant: list("node-b"), pending: list("node-c", "node-d", "node-e")},
		{name: "a grant dated within the clock skew holds one", policy: one, enactments: es(grant("node-a", now.Add(clockSkew))),
			max: 1, holding: list("node-a"), pending: bcde, recheck: timeout + clockSkew},

		// What frees a slot without a report.
		{name: "a NotReady node's grant holds no slot (it applies it when back: not Pending)", policy: one, enactments: es(grant("node-e", ago(time.Minute))),
			max: 1, grant: list("node-a"), pending: list("node-b", "node-c", "node-d")},
		{name: "a NotReady node is not granted one", policy: pol(percent("100%"), nil),
			max: 5, grant: list("node-a", "node-b", "node-c", "node-d"), pending: list("node-e")},
		{name: "an unknown node's grant holds no slot", policy: one, enactments: es(grant("node-gone", ago(time.Minute))),
			max: 1, grant: list("node-a"), pending: bcde},
		{name: "a grant older than the timeout holds no slot and is not renewed", policy: one, enactments: es(grant("node-a", ago(timeout+time.Second))),
			max: 1, grant: list("node-b"), pending: list("node-c", "node-d", "node-e")},
		{name: "a grant exactly as old as the timeout still holds one", policy: one, enactments: es(grant("node-a", ago(timeout))),
			max: 1, holding: list("node-a"), pending: bcde, recheck: time.Second},
		{name: "a grant of another generation holds no slot: the node waits for the new one", policy: one,
			enactments: es(reported(grantOf("node-b", gen-1, ago(time.Minute)), gen-1, shared.EnactmentAvailable)),
			max:        1, grant: list("node-a"), pending: bcde},
		{name: "a grant that does not parse is none", policy: one,
			enactments: func() []v1beta1.NodeNetworkConfigurationEnactment {
				e := enactment("node-a")
				metav1.SetMetaDataAnnotation(&e.ObjectMeta, shared.RolloutSlotAnnotation, "2/soon")
				return es(e)
			}(),
			max: 1, grant: list("node-a"), pending: bcde},

		// maxUnavailable, resolved against the nodes the policy selects.
		{name: "default 50% of 5 nodes rounds up to 3", policy: pol(nil, nil), enactments: es(grant("node-a", now)),
			max: 3, holding: list("node-a"), grant: list("node-b", "node-c"), pending: list("node-d", "node-e"), recheck: timeout},
		{name: "a percentage of the selected nodes only", policy: pol(percent("50%"), map[string]string{"ab": "yes"}),
			max: 1, grant: list("node-a"), pending: list("node-b")},
		{name: "1% is still one node", policy: pol(percent("1%"), nil),
			max: 1, grant: list("node-a"), pending: bcde},
		{name: "no selected node: nothing to grant", policy: pol(nil, map[string]string{"none": "yes"}),
			max: 1},
		{name: "a number as a string is one node", policy: pol(percent("3"), nil),
			max: 1, grant: list("node-a"), pending: bcde},
		{name: "zero is one node", policy: pol(&intstr.IntOrString{IntVal: 0}, nil),
			max: 1, grant: list("node-a"), pending: bcde},
		{name: "more grants held than slots (maxUnavailable lowered): none granted", policy: one,
			enactments: es(grant("node-a", ago(time.Minute)), grant("node-b", ago(time.Minute))),
			max:        1, holding: list("node-a", "node-b"), pending: list("node-c", "node-d", "node-e"), recheck: 4 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := decideSlots(tc.policy, nodes, tc.enactments, tc.requeued, timeout, now)
			want := slotDecision{Max: tc.max, Holding: tc.holding, Grant: tc.grant, Pending: tc.pending, Abort: tc.abort,
				FailedOn: tc.failedOn, Refused: tc.refused, Requeued: tc.requeue, Recheck: tc.recheck}
			if got := fmt.Sprintf("%+v", p); got != fmt.Sprintf("%+v", withMatching(want, p.Matching)) {
				t.Errorf("decideSlots =\n  %s\nwant\n  %+v", got, withMatching(want, p.Matching))
			}
		})
	}
}

func withMatching(p slotDecision, matching int) slotDecision {
	p.Matching = matching
	return p
}
