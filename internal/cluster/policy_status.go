package cluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/readyourwrites"
)

// writeStatus writes the policy's conditions, only when they change, and records the write
// in w (the next pass compares against it, so it waits for the cache to show it). A write
// that only moves the counts of a Progressing policy waits out ProgressInterval (the
// returned requeue).
func (r *PolicyController) writeStatus(ctx context.Context, w *readyourwrites.Writes, policy *nmstatev1.NodeNetworkConfigurationPolicy,
	nodes []corev1.Node, enactments []v1beta1.NodeNetworkConfigurationEnactment) (time.Duration, error) {
	before := policy.Status.DeepCopy()
	Summarize(policy, nodes, enactments)
	if equality.Semantic.DeepEqual(before, &policy.Status) {
		return 0, nil
	}
	was, now := shared.TrueCondition(before.Conditions), shared.TrueCondition(policy.Status.Conditions)
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

// Summarize sets exactly one of Available, Degraded, Progressing, Ignored on the policy,
// from the enactments of its current generation on the nodes it selects, as
// kubernetes-nmstate does (pkg/policyconditions), with its messages:
//   - no node selected: Ignored;
//   - a node failed, or was aborted: Degraded at once, while others may still apply
//     ("1/4 nodes failed to configure, 2 nodes aborted configuration");
//   - a Ready node has not finished: Progressing ("Policy is progressing 1/4 nodes
//     finished, 2 pending"); Available and Degraded are Unknown meanwhile;
//   - else Available; NotReady nodes that have not finished are left out
//     ("3/4 nodes successfully configured, 1 nodes ignored due to NotReady state").
//
// Where the peer compares all finished nodes with the Ready ones, this counts the Ready
// nodes that finished: a NotReady node's report cannot stand in for a Ready node's.
func Summarize(policy *nmstatev1.NodeNetworkConfigurationPolicy, nodes []corev1.Node, enactments []v1beta1.NodeNetworkConfigurationEnactment) {
	// A node's enactment that reports the current generation counts, should it have more
	// than one (a forged one, or one left from an older controller).
	reports := func(e *v1beta1.NodeNetworkConfigurationEnactment) bool {
		return e.Status.PolicyGeneration == policy.Generation && shared.TrueCondition(e.Status.Conditions) != nil
	}
	byNode := map[string]*v1beta1.NodeNetworkConfigurationEnactment{}
	for i := range enactments {
		node := enactments[i].Labels[shared.NodeLabel]
		if e, ok := byNode[node]; !ok || !reports(e) {
			byNode[node] = &enactments[i]
		}
	}
	var matching, ready, readyFinished, available, failed, aborted, pending int
	for i := range nodes {
		n := &nodes[i]
		if !shared.SelectsNode(policy.Spec.NodeSelector, n.Labels) {
			continue
		}
		matching++
		isReady := shared.NodeReady(n)
		if isReady {
			ready++
		}
		e, ok := byNode[n.Name]
		if !ok || !reports(e) {
			continue
		}
		finished := true
		switch shared.TrueCondition(e.Status.Conditions).Type {
		case shared.EnactmentAvailable:
			available++
		case shared.EnactmentFailing:
			failed++
		case shared.EnactmentAborted:
			aborted++
		case shared.EnactmentPending:
			finished = false
			if isReady {
				pending++
			}
		default:
			finished = false
		}
		if finished && isReady {
			readyFinished++
		}
	}
	notReady := ""
	if matching > ready {
		notReady = fmt.Sprintf(", %d nodes ignored due to NotReady state", matching-ready)
	}
	switch {
	case matching == 0:
		shared.SetPolicy(&policy.Status.Conditions, shared.PolicyIgnored, shared.ReasonNoMatchingNode, shared.MessageNoMatchingNode, policy.Generation)
	case failed > 0 || aborted > 0:
		msg := fmt.Sprintf("%d/%d nodes failed to configure", failed, matching)
		if aborted > 0 {
			msg += fmt.Sprintf(", %d nodes aborted configuration", aborted)
		}
		shared.SetPolicy(&policy.Status.Conditions, shared.PolicyDegraded, shared.ReasonFailedToConfigure, msg, policy.Generation)
	case readyFinished < ready:
		msg := fmt.Sprintf("Policy is progressing %d/%d nodes finished", readyFinished, ready)
		if pending > 0 {
			msg += fmt.Sprintf(", %d pending", pending)
		}
		shared.SetPolicy(&policy.Status.Conditions, shared.PolicyProgressing, shared.ReasonConfigurationProgressing, msg+notReady, policy.Generation)
	default:
		shared.SetPolicy(&policy.Status.Conditions, shared.PolicyAvailable, shared.ReasonSuccessfullyConfigured,
			fmt.Sprintf("%d/%d nodes successfully configured", available, matching)+notReady, policy.Generation)
	}
}
