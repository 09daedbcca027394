// Package shared holds the nmstate.io types every API version uses.
// +kubebuilder:object:generate=true
package shared

import "encoding/json"

// State is an nmstate network state document (desiredState, currentState), kept as
// the administrator wrote it: the engine parses and validates it, so the API server
// accepts exactly what kubernetes-nmstate accepts.
// +kubebuilder:validation:Type=object
// +kubebuilder:pruning:PreserveUnknownFields
type State struct {
	Raw json.RawMessage `json:"-"`
}

// MarshalJSON writes the document itself.
func (s State) MarshalJSON() ([]byte, error) {
	if len(s.Raw) == 0 {
		return []byte("{}"), nil
	}
	return s.Raw, nil
}

// UnmarshalJSON keeps the document as it is.
func (s *State) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		s.Raw = nil
		return nil
	}
	s.Raw = append(s.Raw[:0], b...)
	return nil
}

// Condition types and reasons, as kubernetes-nmstate names them.
const (
	// Policy conditions.
	PolicyAvailable   = "Available"
	PolicyDegraded    = "Degraded"
	PolicyProgressing = "Progressing"
	PolicyIgnored     = "Ignored"

	// Enactment conditions.
	EnactmentAvailable   = "Available"
	EnactmentFailing     = "Failing"
	EnactmentProgressing = "Progressing"
	EnactmentPending     = "Pending"
	EnactmentAborted     = "Aborted"

	// NodeNetworkState conditions.
	NodeNetworkStateAvailable = "Available"
	NodeNetworkStateFailing   = "Failing"

	// Reasons.
	ReasonSuccessfullyConfigured     = "SuccessfullyConfigured"
	ReasonFailedToConfigure          = "FailedToConfigure"
	ReasonConfigurationProgressing   = "ConfigurationProgressing"
	ReasonConfigurationAborted       = "ConfigurationAborted"
	ReasonMaxUnavailableLimitReached = "MaxUnavailableLimitReached"
	ReasonRetrying                   = "Retrying"
	ReasonNoMatchingNode             = "NoMatchingNode"
)

// Labels on enactments.
const (
	NodeLabel   = "nmstate.io/node"
	PolicyLabel = "nmstate.io/policy"
)

// EnactmentKey is the name of a node's enactment of a policy, as kubernetes-nmstate names
// it. With dots in names two pairs can share it (worker + a.x, worker.a + x): the second
// node's handler then uses this name with a random suffix, and finds its enactments by
// their labels, never by name.
func EnactmentKey(node, policy string) string { return node + "." + policy }

// RolloutSlotAnnotation on an enactment is the cluster controller's grant of a rollout slot:
// the node may apply that generation of the policy. Only the controller writes it (the
// handler may patch nothing but an enactment's status); a node waiting for a slot learns of
// it from its own enactment's watch. Its value is "<generation>/<RFC 3339 time granted>"
// (RolloutSlot, FormatRolloutSlot): a grant older than the slot timeout holds no slot.
const RolloutSlotAnnotation = "nmoverlay.io/rollout-slot"

// RolloutRequeuedAnnotation on an enactment says that its node lost a grant of that
// generation (its enactment deleted while granted) and is granted again only after every
// selected node that has not had one: deleting its own enactment cannot move a node ahead
// of the others. Only the controller writes it; its value is the generation.
const RolloutRequeuedAnnotation = "nmoverlay.io/rollout-requeued"
