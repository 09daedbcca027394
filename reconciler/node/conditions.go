package node

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nmoverlay/nmoverlay/api/shared"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
)

// enactmentTypes are the condition types an enactment always carries, exactly one True.
var enactmentTypes = []string{shared.EnactmentAvailable, shared.EnactmentFailing, shared.EnactmentProgressing,
	shared.EnactmentPending, shared.EnactmentAborted}

// setEnactment makes condType True with reason and message and every other type False.
// meta.SetStatusCondition moves LastTransitionTime only when a status changes, so a write
// that changes nothing bumps no timestamp.
func setEnactment(e *v1beta1.NodeNetworkConfigurationEnactment, condType, reason, message string) {
	for _, t := range enactmentTypes {
		c := metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: reason, Message: ""}
		if t == condType {
			c.Status, c.Message = metav1.ConditionTrue, message
		}
		meta.SetStatusCondition(&e.Status.Conditions, c)
	}
}

// SetAvailable: the policy is applied on this node.
func SetAvailable(e *v1beta1.NodeNetworkConfigurationEnactment, message string) {
	setEnactment(e, shared.EnactmentAvailable, shared.ReasonSuccessfullyConfigured, message)
}

// SetFailing: the policy could not be applied; message says why (field path, conflicting
// policy, failed probe).
func SetFailing(e *v1beta1.NodeNetworkConfigurationEnactment, message string) {
	setEnactment(e, shared.EnactmentFailing, shared.ReasonFailedToConfigure, message)
}

// SetProgressing: the policy is being applied.
func SetProgressing(e *v1beta1.NodeNetworkConfigurationEnactment, message string) {
	setEnactment(e, shared.EnactmentProgressing, shared.ReasonConfigurationProgressing, message)
}

// SetPending: the policy waits for a rollout slot (maxUnavailable).
func SetPending(e *v1beta1.NodeNetworkConfigurationEnactment, message string) {
	setEnactment(e, shared.EnactmentPending, shared.ReasonMaxUnavailableLimitReached, message)
}

// IsTrue reports whether the enactment's condition of that type is True with that reason.
func IsTrue(e *v1beta1.NodeNetworkConfigurationEnactment, condType, reason string) bool {
	c := meta.FindStatusCondition(e.Status.Conditions, condType)
	return c != nil && c.Status == metav1.ConditionTrue && (reason == "" || c.Reason == reason)
}

// TrueWith reports whether the enactment's condition of that type is True with exactly
// msg: writers compare before they write, so a condition already said is not written again.
func TrueWith(e *v1beta1.NodeNetworkConfigurationEnactment, condType, msg string) bool {
	c := meta.FindStatusCondition(e.Status.Conditions, condType)
	return c != nil && c.Status == metav1.ConditionTrue && c.Message == msg
}
