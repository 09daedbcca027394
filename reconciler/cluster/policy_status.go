// Package cluster is the cluster-wide controller: it is the one writer of policy status,
// computed from the policy's enactments and the nodes it selects, O(nodes) per policy.
package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/reconciler/readyourwrites"
)

// PolicyStatus computes each policy's conditions from its enactments.
type PolicyStatus struct {
	Client client.Client
	// Events, when set, tells operators once per policy when it became Available or
	// Degraded (the handlers tell each node's failure).
	Events events.EventRecorder
	// ProgressInterval spaces writes that only move the counts of a Progressing
	// policy ("3/20 nodes configured"): a rollout over 200 nodes is not 200 writes.
	// Changes of condition are written at once. Default 1 second.
	ProgressInterval time.Duration

	mu           sync.Mutex
	lastProgress map[string]time.Time // by policy
}

// SetupWithManager runs on policy changes, on enactment changes (mapped to their policy by
// label) and on node label changes (which can change what a policy selects).
func (r *PolicyStatus) SetupWithManager(mgr ctrl.Manager) error {
	byPolicyLabel := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if p := o.GetLabels()[shared.PolicyLabel]; p != "" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: p}}}
		}
		return nil
	})
	allPolicies := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		list := &nmstatev1.NodeNetworkConfigurationPolicyList{}
		if err := r.Client.List(ctx, list); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, len(list.Items))
		for i, p := range list.Items {
			reqs[i] = reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}}
		}
		return reqs
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("policy-status").
		For(&nmstatev1.NodeNetworkConfigurationPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1beta1.NodeNetworkConfigurationEnactment{}, byPolicyLabel).
		Watches(&corev1.Node{}, allPolicies, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Complete(r)
}

// Reconcile writes the policy's conditions, only when they change, and returns once its
// cache shows the write (the next pass compares against it).
func (r *PolicyStatus) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	policy := &nmstatev1.NodeNetworkConfigurationPolicy{}
	if err := r.Client.Get(ctx, req.NamespacedName, policy); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes); err != nil {
		return reconcile.Result{}, err
	}
	enactments := &v1beta1.NodeNetworkConfigurationEnactmentList{}
	if err := r.Client.List(ctx, enactments, client.MatchingLabels{shared.PolicyLabel: policy.Name}); err != nil {
		return reconcile.Result{}, err
	}
	before := policy.Status.DeepCopy()
	Summarize(policy, nodes.Items, enactments.Items)
	if equality.Semantic.DeepEqual(before, &policy.Status) {
		return reconcile.Result{}, nil
	}
	was, now := trueCondition(before.Conditions), trueCondition(policy.Status.Conditions)
	countsOnly := was != nil && now != nil && was.Type == now.Type && was.Reason == now.Reason &&
		was.ObservedGeneration == now.ObservedGeneration && now.Type == shared.PolicyProgressing
	if wait := r.progressWait(policy.Name, countsOnly); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	if err := r.Client.Status().Update(ctx, policy); err != nil {
		return reconcile.Result{}, err
	}
	w := &readyourwrites.Writes{}
	w.Wrote(policy)
	w.Await(ctx, r.Client)
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
	return reconcile.Result{}, nil
}

// progressWait is how long a counts-only write must wait; any write restarts the interval.
func (r *PolicyStatus) progressWait(policy string, countsOnly bool) time.Duration {
	interval := r.ProgressInterval
	if interval <= 0 {
		interval = time.Second
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
// from the enactments of its current generation on the nodes it selects.
func Summarize(policy *nmstatev1.NodeNetworkConfigurationPolicy, nodes []corev1.Node, enactments []v1beta1.NodeNetworkConfigurationEnactment) {
	byNode := map[string]*v1beta1.NodeNetworkConfigurationEnactment{}
	for i := range enactments {
		byNode[enactments[i].Labels[shared.NodeLabel]] = &enactments[i]
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
		fmt.Sprintf("%d/%d nodes configured, %d failed, %d in progress", available, matching, failing, matching-available-failing)
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
