package node

import (
	"github.com/nmoverlay/nmoverlay/api/shared"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
)

// setEnactment makes condType the one True condition with message (shared.SetEnactment).
func setEnactment(e *v1beta1.NodeNetworkConfigurationEnactment, condType, message string) {
	shared.SetEnactment(&e.Status.Conditions, condType, message)
}

// SetAvailable: the policy is applied on this node.
func SetAvailable(e *v1beta1.NodeNetworkConfigurationEnactment, message string) {
	setEnactment(e, shared.EnactmentAvailable, message)
}

// SetFailing: the policy could not be applied; message says why (field path, conflicting
// policy, failed probe).
func SetFailing(e *v1beta1.NodeNetworkConfigurationEnactment, message string) {
	setEnactment(e, shared.EnactmentFailing, message)
}

// SetProgressing: the policy is being applied.
func SetProgressing(e *v1beta1.NodeNetworkConfigurationEnactment, message string) {
	setEnactment(e, shared.EnactmentProgressing, message)
}

// SetPending: the policy waits for a rollout slot (maxUnavailable).
func SetPending(e *v1beta1.NodeNetworkConfigurationEnactment, message string) {
	setEnactment(e, shared.EnactmentPending, message)
}

// IsTrue reports whether the enactment's condition of that type is True with that reason.
func IsTrue(e *v1beta1.NodeNetworkConfigurationEnactment, condType, reason string) bool {
	return shared.IsTrue(e.Status.Conditions, condType, reason)
}

// TrueWith reports whether the enactment's condition of that type is True with exactly msg.
func TrueWith(e *v1beta1.NodeNetworkConfigurationEnactment, condType, msg string) bool {
	return shared.TrueWith(e.Status.Conditions, condType, msg)
}
