package cluster

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
)

func TestPlanSlots(t *testing.T) {
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
		shared.SetExclusive(&e.Status.Conditions, []string{shared.EnactmentAvailable, shared.EnactmentFailing, shared.EnactmentProgressing},
			cond, "r", "m", 0)
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
	bcd := list("node-b", "node-c", "node-d")

	for _, tc := range []struct {
		name       string
		policy     *nmstatev1.NodeNetworkConfigurationPolicy
		enactments []v1beta1.NodeNetworkConfigurationEnactment
		max        int
		holding    []string
		grant      []string
		waiting    []string
		recheck    time.Duration
	}{
		{name: "nothing granted yet: the first Ready node by name", policy: one,
			max: 1, grant: list("node-a"), waiting: bcd},
		{name: "a grant held takes the one slot", policy: one, enactments: es(grant("node-a", ago(time.Minute))),
			max: 1, holding: list("node-a"), waiting: bcd, recheck: 4 * time.Minute},
		{name: "two slots, one held", policy: two, enactments: es(grant("node-a", ago(time.Minute))),
			max: 2, holding: list("node-a"), grant: list("node-b"), waiting: list("node-c", "node-d"), recheck: 4 * time.Minute},
		{name: "two slots, both held", policy: two, enactments: es(grant("node-a", ago(time.Minute)), grant("node-c", ago(2*time.Minute))),
			max: 2, holding: list("node-a", "node-c"), waiting: list("node-b", "node-d"), recheck: 3 * time.Minute},
		{name: "a grant used (Available) frees its slot", policy: one, enactments: es(reported(grant("node-a", ago(time.Minute)), gen, shared.EnactmentAvailable)),
			max: 1, grant: list("node-b"), waiting: list("node-c", "node-d")},
		{name: "a grant that failed (Failing) frees its slot", policy: one, enactments: es(reported(grant("node-a", ago(time.Minute)), gen, shared.EnactmentFailing)),
			max: 1, grant: list("node-b"), waiting: list("node-c", "node-d")},
		{name: "a node waiting for another tool's checkpoint (Progressing) still holds it", policy: one,
			enactments: es(reported(grant("node-a", ago(time.Minute)), gen, shared.EnactmentProgressing)),
			max:        1, holding: list("node-a"), waiting: bcd, recheck: 4 * time.Minute},
		{name: "a generation reported before any grant (an enactment from before grants, a refusal) is done", policy: one,
			enactments: es(reported(enactment("node-a"), gen, shared.EnactmentAvailable)),
			max:        1, grant: list("node-b"), waiting: list("node-c", "node-d")},

		// One slot per node, however many enactments it has for the policy.
		{name: "three grants of one node hold one slot", policy: two,
			enactments: es(grant("node-a", ago(time.Minute)), grant("node-a", ago(2*time.Minute)), grant("node-a", ago(3*time.Minute))),
			max:        2, holding: list("node-a"), grant: list("node-b"), waiting: list("node-c", "node-d"), recheck: 4 * time.Minute},
		{name: "a node's latest grant is the one that times out", policy: one,
			enactments: es(grant("node-a", ago(time.Hour)), grant("node-a", ago(time.Minute))),
			max:        1, holding: list("node-a"), waiting: bcd, recheck: 4 * time.Minute},

		// Grants dated in the future (another replica's clock).
		{name: "a grant dated beyond the clock skew holds no slot", policy: one, enactments: es(grant("node-a", now.Add(clockSkew+time.Second))),
			max: 1, grant: list("node-b"), waiting: list("node-c", "node-d")},
		{name: "a grant dated a year ahead holds no slot", policy: one, enactments: es(grant("node-a", now.AddDate(1, 0, 0))),
			max: 1, grant: list("node-b"), waiting: list("node-c", "node-d")},
		{name: "a grant dated within the clock skew holds one", policy: one, enactments: es(grant("node-a", now.Add(clockSkew))),
			max: 1, holding: list("node-a"), waiting: bcd, recheck: timeout + clockSkew},

		// What frees a slot without a report.
		{name: "a NotReady node's grant holds no slot", policy: one, enactments: es(grant("node-e", ago(time.Minute))),
			max: 1, grant: list("node-a"), waiting: bcd},
		{name: "a NotReady node is not granted one", policy: pol(percent("100%"), nil),
			max: 5, grant: list("node-a", "node-b", "node-c", "node-d")},
		{name: "an unknown node's grant holds no slot", policy: one, enactments: es(grant("node-gone", ago(time.Minute))),
			max: 1, grant: list("node-a"), waiting: bcd},
		{name: "a grant older than the timeout holds no slot and is not renewed", policy: one, enactments: es(grant("node-a", ago(timeout+time.Second))),
			max: 1, grant: list("node-b"), waiting: list("node-c", "node-d")},
		{name: "a grant exactly as old as the timeout still holds one", policy: one, enactments: es(grant("node-a", ago(timeout))),
			max: 1, holding: list("node-a"), waiting: bcd, recheck: time.Second},
		{name: "a grant of another generation holds no slot: the node waits for the new one", policy: one,
			enactments: es(reported(grantOf("node-b", gen-1, ago(time.Minute)), gen-1, shared.EnactmentAvailable)),
			max:        1, grant: list("node-a"), waiting: bcd},
		{name: "a grant that does not parse is none", policy: one,
			enactments: func() []v1beta1.NodeNetworkConfigurationEnactment {
				e := enactment("node-a")
				metav1.SetMetaDataAnnotation(&e.ObjectMeta, shared.RolloutSlotAnnotation, "2/soon")
				return es(e)
			}(),
			max: 1, grant: list("node-a"), waiting: bcd},

		// maxUnavailable, resolved against the nodes the policy selects.
		{name: "default 50% of 5 nodes rounds up to 3", policy: pol(nil, nil), enactments: es(grant("node-a", now)),
			max: 3, holding: list("node-a"), grant: list("node-b", "node-c"), waiting: list("node-d"), recheck: timeout},
		{name: "a percentage of the selected nodes only", policy: pol(percent("50%"), map[string]string{"ab": "yes"}),
			max: 1, grant: list("node-a"), waiting: list("node-b")},
		{name: "1% is still one node", policy: pol(percent("1%"), nil),
			max: 1, grant: list("node-a"), waiting: bcd},
		{name: "no selected node: nothing to grant", policy: pol(nil, map[string]string{"none": "yes"}),
			max: 1},
		{name: "a number as a string is one node", policy: pol(percent("3"), nil),
			max: 1, grant: list("node-a"), waiting: bcd},
		{name: "zero is one node", policy: pol(&intstr.IntOrString{IntVal: 0}, nil),
			max: 1, grant: list("node-a"), waiting: bcd},
		{name: "more grants held than slots (maxUnavailable lowered): none granted", policy: one,
			enactments: es(grant("node-a", ago(time.Minute)), grant("node-b", ago(time.Minute))),
			max:        1, holding: list("node-a", "node-b"), waiting: list("node-c", "node-d"), recheck: 4 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planSlots(tc.policy, nodes, tc.enactments, timeout, now)
			if p.Max != tc.max || !slices.Equal(p.Holding, tc.holding) || !slices.Equal(p.Grant, tc.grant) ||
				!slices.Equal(p.Waiting, tc.waiting) || p.Recheck != tc.recheck {
				t.Errorf("planSlots = max %d, holding %v, grant %v, waiting %v, recheck %v;\nwant max %d, holding %v, grant %v, waiting %v, recheck %v",
					p.Max, p.Holding, p.Grant, p.Waiting, p.Recheck, tc.max, tc.holding, tc.grant, tc.waiting, tc.recheck)
			}
		})
	}
}
