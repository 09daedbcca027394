package shared

import (
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statuses renders conditions as type=status/reason, in the order of types.
func statuses(conds []metav1.Condition, types []string) map[string]string {
	out := map[string]string{}
	for _, t := range types {
		for _, c := range conds {
			if c.Type == t {
				out[t] = string(c.Status) + "/" + c.Reason
			}
		}
	}
	return out
}

// kubernetes-nmstate's enactment setters (pkg/enactmentstatus/conditions): the True
// condition, its reason, and which others are Unknown.
func TestSetEnactment(t *testing.T) {
	for _, tc := range []struct {
		condType string
		want     map[string]string
	}{
		{EnactmentProgressing, map[string]string{
			EnactmentAvailable: "Unknown/ConfigurationProgressing", EnactmentFailing: "Unknown/ConfigurationProgressing",
			EnactmentProgressing: "True/ConfigurationProgressing", EnactmentPending: "False/ConfigurationProgressing",
			EnactmentAborted: "False/ConfigurationProgressing"}},
		{EnactmentAvailable, map[string]string{
			EnactmentAvailable: "True/SuccessfullyConfigured", EnactmentFailing: "False/SuccessfullyConfigured",
			EnactmentProgressing: "False/SuccessfullyConfigured", EnactmentPending: "False/SuccessfullyConfigured",
			EnactmentAborted: "False/SuccessfullyConfigured"}},
		{EnactmentFailing, map[string]string{
			EnactmentAvailable: "False/FailedToConfigure", EnactmentFailing: "True/FailedToConfigure",
			EnactmentProgressing: "False/FailedToConfigure", EnactmentPending: "False/FailedToConfigure",
			EnactmentAborted: "False/FailedToConfigure"}},
		{EnactmentPending, map[string]string{
			EnactmentAvailable: "False/MaxUnavailableLimitReached", EnactmentFailing: "False/MaxUnavailableLimitReached",
			EnactmentProgressing: "False/MaxUnavailableLimitReached", EnactmentPending: "True/MaxUnavailableLimitReached",
			EnactmentAborted: "False/MaxUnavailableLimitReached"}},
		{EnactmentAborted, map[string]string{
			EnactmentAvailable: "False/ConfigurationAborted", EnactmentFailing: "False/ConfigurationAborted",
			EnactmentProgressing: "False/ConfigurationAborted", EnactmentPending: "False/ConfigurationAborted",
			EnactmentAborted: "True/ConfigurationAborted"}},
	} {
		t.Run(tc.condType, func(t *testing.T) {
			// From every other state, so nothing of the previous one is left.
			for _, from := range EnactmentTypes {
				var conds []metav1.Condition
				SetEnactment(&conds, from, "before")
				SetEnactment(&conds, tc.condType, "msg")
				if got := statuses(conds, EnactmentTypes); !maps.Equal(got, tc.want) {
					t.Errorf("from %s: got %v, want %v", from, got, tc.want)
				}
				if len(conds) != len(EnactmentTypes) {
					t.Errorf("from %s: %d conditions", from, len(conds))
				}
				if c := TrueCondition(conds); c == nil || c.Type != tc.condType || c.Message != "msg" {
					t.Errorf("from %s: True condition %+v", from, c)
				}
				for _, c := range conds {
					if c.Type != tc.condType && c.Message != "" {
						t.Errorf("from %s: %s keeps message %q", from, c.Type, c.Message)
					}
				}
			}
		})
	}
}

// kubernetes-nmstate's policy setters (pkg/policyconditions).
func TestSetPolicy(t *testing.T) {
	for _, tc := range []struct {
		condType, reason string
		want             map[string]string
	}{
		{PolicyProgressing, ReasonConfigurationProgressing, map[string]string{
			PolicyAvailable: "Unknown/ConfigurationProgressing", PolicyDegraded: "Unknown/ConfigurationProgressing",
			PolicyProgressing: "True/ConfigurationProgressing", PolicyIgnored: "False/ConfigurationProgressing"}},
		{PolicyAvailable, ReasonSuccessfullyConfigured, map[string]string{
			PolicyAvailable: "True/SuccessfullyConfigured", PolicyDegraded: "False/SuccessfullyConfigured",
			PolicyProgressing: "False/SuccessfullyConfigured", PolicyIgnored: "False/SuccessfullyConfigured"}},
		{PolicyDegraded, ReasonFailedToConfigure, map[string]string{
			PolicyAvailable: "False/FailedToConfigure", PolicyDegraded: "True/FailedToConfigure",
			PolicyProgressing: "False/FailedToConfigure", PolicyIgnored: "False/FailedToConfigure"}},
		{PolicyIgnored, ReasonNoMatchingNode, map[string]string{
			PolicyAvailable: "False/NoMatchingNode", PolicyDegraded: "False/NoMatchingNode",
			PolicyProgressing: "False/NoMatchingNode", PolicyIgnored: "True/NoMatchingNode"}},
	} {
		t.Run(tc.condType, func(t *testing.T) {
			var conds []metav1.Condition
			SetPolicy(&conds, PolicyDegraded, ReasonFailedToConfigure, "before", 1)
			SetPolicy(&conds, tc.condType, tc.reason, "msg", 2)
			if got := statuses(conds, PolicyTypes); !maps.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			for _, c := range conds {
				if c.ObservedGeneration != 2 {
					t.Errorf("%s observedGeneration %d", c.Type, c.ObservedGeneration)
				}
			}
		})
	}
}

func TestConditionsMoveTimeOnlyOnChange(t *testing.T) {
	var conds []metav1.Condition
	SetEnactment(&conds, EnactmentPending, MessagePending)
	for i := range conds {
		conds[i].LastTransitionTime = metav1.Unix(1, 0)
	}
	SetEnactment(&conds, EnactmentPending, MessagePending)
	for _, c := range conds {
		if !c.LastTransitionTime.Equal(&metav1.Time{Time: metav1.Unix(1, 0).Time}) {
			t.Errorf("%s moved its transition time without a change", c.Type)
		}
	}
	if !IsTrue(conds, EnactmentPending, ReasonMaxUnavailableLimitReached) || IsTrue(conds, EnactmentPending, ReasonRetrying) {
		t.Error("IsTrue ignores the reason")
	}
}

func TestAbortedMessage(t *testing.T) {
	if got, want := AbortedMessage("w3.p", []string{"w1"}), `reconciliation of enactment "w3.p" has aborted: the policy failed on node w1`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	got := AbortedMessage("w9.p", []string{"a", "b", "c", "d", "e", "f", "g"})
	if want := `reconciliation of enactment "w9.p" has aborted: the policy failed on nodes a, b, c, d, e and 2 more`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
