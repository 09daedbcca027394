package shared

import (
	"strconv"
	"strings"
	"time"

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
