package shared

import (
	"net/netip"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// SelectsNode reports whether a policy's nodeSelector selects a node with these labels:
// every key present with exactly that value; an empty selector selects every node.
func SelectsNode(nodeSelector, nodeLabels map[string]string) bool {
	return labels.SelectorFromSet(nodeSelector).Matches(labels.Set(nodeLabels))
}

// IsTrue reports whether the condition of that type is True, with that reason unless
// reason is "".
func IsTrue(conds []metav1.Condition, condType, reason string) bool {
	c := meta.FindStatusCondition(conds, condType)
	return c != nil && c.Status == metav1.ConditionTrue && (reason == "" || c.Reason == reason)
}

// RefusedWhileDegraded reports whether an enactment's conditions say its node refused the
// policy because its keyfile overlay is not in use (MessageRefusedDegraded): a node that
// could not try.
func RefusedWhileDegraded(conds []metav1.Condition) bool {
	c := meta.FindStatusCondition(conds, EnactmentFailing)
	return c != nil && c.Status == metav1.ConditionTrue && strings.HasPrefix(c.Message, MessageRefusedDegraded)
}

// NodeReady reports whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// InternalIPs are the node's InternalIP addresses.
func InternalIPs(n *corev1.Node) []netip.Addr {
	var out []netip.Addr
	for _, a := range n.Status.Addresses {
		if ip, err := netip.ParseAddr(a.Address); err == nil && a.Type == corev1.NodeInternalIP {
			out = append(out, ip)
		}
	}
	return out
}

// TrueWith reports whether the condition of that type is True with exactly msg: writers
// compare before they write, so a condition already said is not written again.
func TrueWith(conds []metav1.Condition, condType, msg string) bool {
	c := meta.FindStatusCondition(conds, condType)
	return c != nil && c.Status == metav1.ConditionTrue && c.Message == msg
}

// FormatRolloutSlot is the value of RolloutSlotAnnotation granting generation at a time.
func FormatRolloutSlot(generation int64, grantedAt time.Time) string {
	return strconv.FormatInt(generation, 10) + "/" + grantedAt.UTC().Format(time.RFC3339)
}

// RolloutSlot reads the grant in an enactment's annotations (RolloutSlotAnnotation); ok is
// false when there is none or it does not parse.
func RolloutSlot(annotations map[string]string) (generation int64, grantedAt time.Time, ok bool) {
	gen, at, found := strings.Cut(annotations[RolloutSlotAnnotation], "/")
	if !found {
		return 0, time.Time{}, false
	}
	generation, err := strconv.ParseInt(gen, 10, 64)
	if err != nil {
		return 0, time.Time{}, false
	}
	if grantedAt, err = time.Parse(time.RFC3339, at); err != nil {
		return 0, time.Time{}, false
	}
	return generation, grantedAt, true
}
