package shared

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// This file is kubernetes-nmstate's condition semantics, written once for every writer:
// which condition of an enactment or a policy is True, which are False, and which Unknown,
// with which reason. The peer's own quirks (a reason left from another state on a False
// condition) are not reproduced: every condition carries the reason of the True one.

// Messages kubernetes-nmstate writes, which scripts and consoles may match.
const (
	// MessageRefusedDegraded begins a Failing enactment's message when its node refused the
	// policy because its keyfile overlay is not in use (the change would be persistent):
	// the node could not try, so the generation has not failed there and its rollout goes
	// on elsewhere.
	MessageRefusedDegraded = "refused: the node's keyfile overlay is degraded, so changes would become persistent: "
	// MessagePending is a Pending enactment's: the node waits for a rollout slot.
	MessagePending = "Waiting for progressing nodes to finish"
	// MessageApplying is a Progressing enactment's: the node holds a slot and applies.
	MessageApplying = "Applying desired state"
	// MessageNoMatchingNode is an Ignored policy's.
	MessageNoMatchingNode = "Policy does not match any node"
)

// AbortedMessage is an Aborted enactment's message: kubernetes-nmstate's, then the nodes
// the generation failed on (the first few).
func AbortedMessage(enactment string, failedOn []string) string {
	const named = 5
	nodes := failedOn
	more := ""
	if len(nodes) > named {
		nodes, more = nodes[:named], fmt.Sprintf(" and %d more", len(failedOn)-named)
	}
	noun := "node"
	if len(failedOn) > 1 {
		noun = "nodes"
	}
	return fmt.Sprintf("reconciliation of enactment %q has aborted: the policy failed on %s %s%s", enactment, noun, strings.Join(nodes, ", "), more)
}

// enactmentReasons: the reason each enactment condition type is set True with.
var enactmentReasons = map[string]string{
	EnactmentAvailable:   ReasonSuccessfullyConfigured,
	EnactmentFailing:     ReasonFailedToConfigure,
	EnactmentProgressing: ReasonConfigurationProgressing,
	EnactmentPending:     ReasonMaxUnavailableLimitReached,
	EnactmentAborted:     ReasonConfigurationAborted,
}

// EnactmentTypes are the condition types an enactment always carries, exactly one True.
var EnactmentTypes = []string{EnactmentAvailable, EnactmentFailing, EnactmentProgressing, EnactmentPending, EnactmentAborted}

// PolicyTypes are the condition types a policy always carries, exactly one True.
var PolicyTypes = []string{PolicyAvailable, PolicyDegraded, PolicyProgressing, PolicyIgnored}

// SetEnactment makes condType the enactment's one True condition, with message and the
// type's reason. While it is Progressing, whether the node ends Available or Failing is not
// known yet: those two are Unknown, as kubernetes-nmstate sets them. Every other condition
// is False.
func SetEnactment(conds *[]metav1.Condition, condType, message string) {
	set(conds, EnactmentTypes, condType, enactmentReasons[condType], message, 0, func(t string) bool {
		return condType == EnactmentProgressing && (t == EnactmentAvailable || t == EnactmentFailing)
	})
}

// SetPolicy makes condType the policy's one True condition, with reason and message, for
// generation. While it is Progressing, Available and Degraded are Unknown, as
// kubernetes-nmstate sets them; every other condition is False.
func SetPolicy(conds *[]metav1.Condition, condType, reason, message string, generation int64) {
	set(conds, PolicyTypes, condType, reason, message, generation, func(t string) bool {
		return condType == PolicyProgressing && (t == PolicyAvailable || t == PolicyDegraded)
	})
}

// set writes every type of types: condType True with message, those unknown(type) says
// Unknown, the rest False; all with reason. meta.SetStatusCondition moves
// LastTransitionTime only when a status changes, so a write that changes nothing bumps no
// timestamp.
func set(conds *[]metav1.Condition, types []string, condType, reason, message string, generation int64, unknown func(string) bool) {
	for _, t := range types {
		c := metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: reason, ObservedGeneration: generation}
		switch {
		case t == condType:
			c.Status, c.Message = metav1.ConditionTrue, message
		case unknown(t):
			c.Status = metav1.ConditionUnknown
		}
		meta.SetStatusCondition(conds, c)
	}
}

// NodeNetworkStateTypes are the condition types a NodeNetworkState carries, one True.
var NodeNetworkStateTypes = []string{NodeNetworkStateAvailable, NodeNetworkStateFailing}

// MessageStateRead is an Available NodeNetworkState's: its currentState is the node's.
const MessageStateRead = "the node's network state as NetworkManager reports it"

// SetNodeNetworkState makes the NodeNetworkState Available (readErr nil) or Failing with
// why the handler could not read the node's state, with kubernetes-nmstate's reasons.
func SetNodeNetworkState(conds *[]metav1.Condition, readErr error) {
	if readErr == nil {
		set(conds, NodeNetworkStateTypes, NodeNetworkStateAvailable, ReasonSuccessfullyConfigured, MessageStateRead, 0, func(string) bool { return false })
		return
	}
	set(conds, NodeNetworkStateTypes, NodeNetworkStateFailing, ReasonFailedToConfigure,
		"reading the node's network state failed: "+readErr.Error(), 0, func(string) bool { return false })
}

// TrueCondition is the one True condition of conds, or nil.
func TrueCondition(conds []metav1.Condition) *metav1.Condition {
	for i := range conds {
		if conds[i].Status == metav1.ConditionTrue {
			return &conds[i]
		}
	}
	return nil
}
