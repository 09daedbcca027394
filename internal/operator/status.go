package operator

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
)

// observed is what the conditions are computed from: the apply's outcome and the
// workloads as the cache has them (nil: not there yet).
type observed struct {
	applyErr   error
	handler    *appsv1.DaemonSet
	controller *appsv1.Deployment
	// gateFailures: the nodes whose reboot gate ended without their policies, "node: what
	// happened" (rebootgate.go).
	gateFailures []string
}

// conditions are the singleton's Available, Progressing and Degraded for what was
// observed. A pure function: the reconciler writes them only when they differ.
func conditions(o observed, generation int64) []metav1.Condition {
	c := func(t string, s bool, reason, msg string) metav1.Condition {
		st := metav1.ConditionFalse
		if s {
			st = metav1.ConditionTrue
		}
		return metav1.Condition{Type: t, Status: st, Reason: reason, Message: msg, ObservedGeneration: generation}
	}
	if o.applyErr != nil {
		msg := o.applyErr.Error()
		return []metav1.Condition{
			c(nmstatev1.NMStateAvailable, false, nmstatev1.ReasonInternalError, msg),
			c(nmstatev1.NMStateProgressing, false, nmstatev1.ReasonInternalError, msg),
			c(nmstatev1.NMStateDegraded, true, nmstatev1.ReasonInternalError, msg),
		}
	}
	// A node whose policies did not come back after a reboot degrades the NMState whether
	// or not the operand is being rolled: it is about the nodes, not the operand.
	degraded := func(reason string) metav1.Condition {
		if len(o.gateFailures) == 0 {
			return c(nmstatev1.NMStateDegraded, false, reason, "")
		}
		return c(nmstatev1.NMStateDegraded, true, nmstatev1.ReasonReconvergenceFailed, gateMessage(o.gateFailures))
	}
	waiting := rollout(o.handler, o.controller)
	if waiting != "" {
		return []metav1.Condition{
			c(nmstatev1.NMStateAvailable, false, nmstatev1.ReasonDeploying, waiting),
			c(nmstatev1.NMStateProgressing, true, nmstatev1.ReasonDeploying, waiting),
			degraded(nmstatev1.ReasonDeploying),
		}
	}
	st := o.handler.Status
	msg := fmt.Sprintf("the handler runs on %d nodes, the controller has %d of %d replicas available",
		st.NumberAvailable, o.controller.Status.AvailableReplicas, o.controller.Status.Replicas)
	return []metav1.Condition{
		c(nmstatev1.NMStateAvailable, true, nmstatev1.ReasonSuccessfullyDeployed, msg),
		c(nmstatev1.NMStateProgressing, false, nmstatev1.ReasonSuccessfullyDeployed, ""),
		degraded(nmstatev1.ReasonSuccessfullyDeployed),
	}
}

// gateMessage names the nodes whose reboot gate ended without their policies, the first
// few with what happened.
func gateMessage(failures []string) string {
	const named = 5
	shown, more := failures, ""
	if len(failures) > named {
		shown, more = failures[:named], fmt.Sprintf("; and %d more nodes", len(failures)-named)
	}
	return fmt.Sprintf("the reboot gate was lifted without the policies of %d nodes (an event on each Node says more): %s%s",
		len(failures), strings.Join(shown, "; "), more)
}

// rollout says what the handler and the controller are still waiting for; "" once both
// run their current spec everywhere.
func rollout(ds *appsv1.DaemonSet, d *appsv1.Deployment) string {
	switch {
	case ds == nil:
		return "the handler DaemonSet is not created yet"
	case d == nil:
		return "the controller Deployment is not created yet"
	}
	st := ds.Status
	switch {
	case st.ObservedGeneration < ds.Generation:
		return "the handler DaemonSet's new spec is not observed yet"
	case st.UpdatedNumberScheduled < st.DesiredNumberScheduled || st.NumberAvailable < st.DesiredNumberScheduled:
		return fmt.Sprintf("the handler is updated on %d and available on %d of %d nodes",
			st.UpdatedNumberScheduled, st.NumberAvailable, st.DesiredNumberScheduled)
	case d.Status.ObservedGeneration < d.Generation:
		return "the controller Deployment's new spec is not observed yet"
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	if d.Status.UpdatedReplicas < want || d.Status.AvailableReplicas < want || !available(d) {
		return fmt.Sprintf("the controller has %d updated and %d available of %d replicas",
			d.Status.UpdatedReplicas, d.Status.AvailableReplicas, want)
	}
	return ""
}

func available(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ignoredConditions are an NMState's that is not the singleton.
func ignoredConditions(name string, generation int64) []metav1.Condition {
	msg := fmt.Sprintf("only the NMState named %q is used; %q is ignored", nmstatev1.NMStateName, name)
	return []metav1.Condition{
		{Type: nmstatev1.NMStateAvailable, Status: metav1.ConditionFalse, Reason: nmstatev1.ReasonIgnored, Message: msg, ObservedGeneration: generation},
		{Type: nmstatev1.NMStateProgressing, Status: metav1.ConditionFalse, Reason: nmstatev1.ReasonIgnored, Message: msg, ObservedGeneration: generation},
		{Type: nmstatev1.NMStateDegraded, Status: metav1.ConditionTrue, Reason: nmstatev1.ReasonIgnored, Message: msg, ObservedGeneration: generation},
	}
}
