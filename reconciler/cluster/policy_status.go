package cluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/reconciler/readyourwrites"
)

// writeStatus writes the policy's conditions, only when they change, and records the write
// in w (the next pass compares against it, so it waits for the cache to show it). A write
// that only moves the counts of a Progressing policy waits out ProgressInterval (the
// returned requeue).
func (r *PolicyController) writeStatus(ctx context.Context, w *readyourwrites.Writes, policy *nmstatev1.NodeNetworkConfigurationPolicy,
	nodes []corev1.Node, enactments []v1beta1.NodeNetworkConfigurationEnactment, slots slotPlan) (time.Duration, error) {
	before := policy.Status.DeepCopy()
	Summarize(policy, nodes, enactments, len(slots.Waiting))
	if equality.Semantic.DeepEqual(before, &policy.Status) {
		return 0, nil
	}
	was, now := trueCondition(before.Conditions), trueCondition(policy.Status.Conditions)
	countsOnly := was != nil && now != nil && was.Type == now.Type && was.Reason == now.Reason &&
		was.ObservedGeneration == now.ObservedGeneration && now.Type == shared.PolicyProgressing
	if wait := r.progressWait(policy.Name, countsOnly); wait > 0 {
		return wait, nil
	}
	if err := r.Client.Status().Update(ctx, policy); err != nil {
		return 0, err
	}
	w.Wrote(policy)
	log := ctrl.LoggerFrom(ctx).WithValues("policy", policy.Name, "generation", policy.Generation)
	if was == nil || was.Type != now.Type {
		log.Info("policy status", "status", now.Type, "reason", now.Reason, "message", now.Message)
	} else {
		log.V(1).Info("policy status", "status", now.Type, "message", now.Message) // the counts moved
	}
	if r.Events != nil && (was == nil || was.Type != now.Type) {
		switch now.Type {
		case shared.PolicyAvailable:
			r.Events.Eventf(policy, nil, corev1.EventTypeNormal, now.Reason, "Rollout", now.Message)
		case shared.PolicyDegraded:
			r.Events.Eventf(policy, nil, corev1.EventTypeWarning, now.Reason, "Rollout", now.Message)
		}
	}
	return 0, nil
}

// DefaultProgressInterval: the counts are for someone watching a rollout, who needs no
// more than one update every 2 s.
const DefaultProgressInterval = 2 * time.Second

// progressWait is how long a counts-only write must wait; any write restarts the interval.
func (r *PolicyController) progressWait(policy string, countsOnly bool) time.Duration {
	interval := r.ProgressInterval
	if interval <= 0 {
		interval = DefaultProgressInterval
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lastProgress == nil {
		r.lastProgress = map[string]time.Time{}
	}
	if last, ok := r.lastProgress[policy]; countsOnly && ok && time.Since(last) < interval {
		return interval - time.Since(last)
	}
	r.lastProgress[policy] = time.Now()
	return 0
}

func trueCondition(conds []metav1.Condition) *metav1.Condition {
	for i := range conds {
		if conds[i].Status == metav1.ConditionTrue {
			return &conds[i]
		}
	}
	return nil
}

// Summarize sets exactly one of Available, Degraded, Progressing, Ignored on the policy,
// from the enactments of its current generation on the nodes it selects; waiting is how
// many of them wait for a rollout slot.
func Summarize(policy *nmstatev1.NodeNetworkConfigurationPolicy, nodes []corev1.Node, enactments []v1beta1.NodeNetworkConfigurationEnactment, waiting int) {
	// A node's enactment that reports the current generation counts, should it have more
	// than one (a forged one, or one left from an older controller).
	reports := func(e *v1beta1.NodeNetworkConfigurationEnactment) bool {
		return e.Status.PolicyGeneration == policy.Generation && (shared.IsTrue(e.Status.Conditions, shared.EnactmentAvailable, "") ||
			shared.IsTrue(e.Status.Conditions, shared.EnactmentFailing, ""))
	}
	byNode := map[string]*v1beta1.NodeNetworkConfigurationEnactment{}
	for i := range enactments {
		node := enactments[i].Labels[shared.NodeLabel]
		if e, ok := byNode[node]; !ok || !reports(e) {
			byNode[node] = &enactments[i]
		}
	}
	matching, available, failing := 0, 0, 0
	for _, n := range nodes {
		if !shared.SelectsNode(policy.Spec.NodeSelector, n.Labels) {
			continue
		}
		matching++
		e, ok := byNode[n.Name]
		if !ok || e.Status.PolicyGeneration != policy.Generation {
			continue
		}
		switch {
		case shared.IsTrue(e.Status.Conditions, shared.EnactmentAvailable, ""):
			available++
		case shared.IsTrue(e.Status.Conditions, shared.EnactmentFailing, ""):
			failing++
		}
	}
	condType, reason, msg := shared.PolicyProgressing, shared.ReasonConfigurationProgressing,
		fmt.Sprintf("%d/%d nodes configured, %d failed, %d in progress, %d waiting for a rollout slot",
			available, matching, failing, matching-available-failing-waiting, waiting)
	switch {
	case matching == 0:
		condType, reason, msg = shared.PolicyIgnored, shared.ReasonNoMatchingNode, "no node matches the node selector"
	case failing > 0 && available+failing == matching:
		condType, reason, msg = shared.PolicyDegraded, shared.ReasonFailedToConfigure, fmt.Sprintf("%d/%d nodes failed to configure", failing, matching)
	case available == matching:
		condType, reason, msg = shared.PolicyAvailable, shared.ReasonSuccessfullyConfigured, fmt.Sprintf("%d/%d nodes successfully configured", available, matching)
	}
	shared.SetExclusive(&policy.Status.Conditions, shared.PolicyTypes, condType, reason, msg, policy.Generation)
}
