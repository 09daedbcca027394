package node

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/shared"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
)

// rolloutView is the cluster as slot decisions see it, read uncached (the decision must
// see the latest claims) in two requests however many policies roll out at once.
type rolloutView struct {
	nodes  []corev1.Node
	ready  map[string]bool
	claims map[string][]v1beta1.NodeNetworkConfigurationEnactment // by policy
}

func (h *Handler) readRollout(ctx context.Context, policies []string) (*rolloutView, error) {
	nodes := &corev1.NodeList{}
	if err := h.APIReader.List(ctx, nodes); err != nil {
		return nil, err
	}
	inRollout, err := labels.NewRequirement(shared.PolicyLabel, selection.In, policies)
	if err != nil {
		return nil, err
	}
	claims := &v1beta1.NodeNetworkConfigurationEnactmentList{}
	if err := h.APIReader.List(ctx, claims, client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*inRollout)}); err != nil {
		return nil, err
	}
	return newRolloutView(nodes.Items, claims.Items), nil
}

// newRolloutView indexes what readRollout read: which nodes are Ready, the claims by policy.
func newRolloutView(nodes []corev1.Node, enactments []v1beta1.NodeNetworkConfigurationEnactment) *rolloutView {
	v := &rolloutView{nodes: nodes, ready: map[string]bool{}, claims: map[string][]v1beta1.NodeNetworkConfigurationEnactment{}}
	for _, n := range nodes {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				v.ready[n.Name] = true
			}
		}
	}
	for _, e := range enactments {
		v.claims[e.Labels[shared.PolicyLabel]] = append(v.claims[e.Labels[shared.PolicyLabel]], e)
	}
	return v
}

// clockSkew is how far ahead of this node's clock another node's claim may be dated and
// still count: beyond it the claim is from a wrong clock or a forgery, and would otherwise
// never time out.
const clockSkew = time.Minute

// slotsFull decides whether self must wait at now to apply a new generation of policy.
// Another node's claim counts only while that node is Ready and the claim is younger than
// timeout and not dated ahead of now by more than clockSkew (a rebooting node, a dead
// handler or a wrong clock frees its slot). A node holds at most one slot however many
// enactments it labels for the policy: its earliest claim. With own (self's claim, just
// written), claims are ranked by time, then node name, and the first maxUnavailable go;
// without it, the question is whether any slot is free at all.
// ahead names the nodes whose claims count against self, sorted.
func (v *rolloutView) slotsFull(policy Policy, self string, own *v1beta1.NodeNetworkConfigurationEnactment, timeout time.Duration, now time.Time) (full bool, why string, ahead []string) {
	matching := 0
	for _, n := range v.nodes {
		if policy.Selects(n.Labels) {
			matching++
		}
	}
	max := maxUnavailable(policy.MaxUnavailable, matching)
	// A node's enactments are its own to create (the admission policy holds the node label
	// to the handler's node), so a compromised node can label many for one policy: they
	// count as one claim, the node's earliest.
	since := map[string]time.Time{}
	for _, e := range v.claims[policy.Name] {
		nodeName := e.Labels[shared.NodeLabel]
		c := meta.FindStatusCondition(e.Status.Conditions, shared.EnactmentProgressing)
		if nodeName == self || e.Status.PolicyGeneration != policy.Generation || c == nil ||
			c.Status != metav1.ConditionTrue || !v.ready[nodeName] {
			continue
		}
		at := c.LastTransitionTime.Time
		if now.Sub(at) > timeout || at.Sub(now) > clockSkew {
			continue
		}
		if t, ok := since[nodeName]; !ok || at.Before(t) {
			since[nodeName] = at
		}
	}
	// No count of the slots held: it changes with every claim, and a Pending enactment is
	// rewritten only when its message changes.
	why = fmt.Sprintf("%s: %d of %d nodes may apply it at once", policy.Name, max, matching)
	if own == nil {
		return len(since) >= max, why, slices.Sorted(maps.Keys(since))
	}
	mine := meta.FindStatusCondition(own.Status.Conditions, shared.EnactmentProgressing).LastTransitionTime.Time
	for nodeName, at := range since {
		if at.Before(mine) || (at.Equal(mine) && nodeName < self) {
			ahead = append(ahead, nodeName)
		}
	}
	slices.Sort(ahead)
	return len(ahead) >= max, why, ahead
}

// maxUnavailable resolves the policy's maxUnavailable (default "50%", rounded up, at least 1).
func maxUnavailable(v *intstr.IntOrString, matching int) int {
	val := intstr.FromString("50%")
	if v != nil {
		val = *v
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&val, matching, true)
	if err != nil || n < 1 {
		return 1
	}
	return n
}
