package cluster

import (
	"context"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/rebootgate"
)

// This file is the reboot gate (spec.rebootGate: Taint), run only when it is on: after a
// node reboots its tmpfs layer is empty until its handler has applied every policy again,
// so the node is tainted nmoverlay.io/reconverging:NoSchedule meanwhile. The decision is
// rebootgate.Decide; this is its I/O, one pass per node.

// Event reasons on a Node whose gate ended without its policies.
const (
	ReasonReconvergenceFailed   = "ReconvergenceFailed"
	ReasonReconvergenceTimedOut = "ReconvergenceTimedOut"
)

// conflictRetry: a pass whose patch met a newer Node decides again this soon.
const conflictRetry = 200 * time.Millisecond

// concurrentGates is how many nodes' gates are decided at once: after a power cut or
// with a pool's rollout many kubelets report a new boot together, and each node's taint
// is one patch (a round trip) that the others need not wait for. A node is never decided
// twice at once (the work queue's rule).
const concurrentGates = 4

// enactmentNodeIndex indexes enactments by their node label: a pass reads one node's.
const enactmentNodeIndex = "nmoverlay.gate.node"

// RebootGateController starts and lifts the nodes' reboot gates.
type RebootGateController struct {
	Client client.Client
	// Events, when set, tells on the Node when a gate ended without its policies.
	Events events.EventRecorder
	// Timeout bounds a gate (rebootgate.DefaultTimeout when 0).
	Timeout time.Duration

	// started is the boot of each node's last gate started, here or by another replica
	// (seen on the Node): rebootgate.View.Started.
	started sync.Map
}

// SetupWithManager runs on a Node's new boot ID, labels (what selects it) and gate; on the
// enactments and policies of gated nodes (and of nodes whose gate failed, to clear it once
// they are back). A node with nothing of a gate costs nothing when its enactments change.
func (r *RebootGateController) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1beta1.NodeNetworkConfigurationEnactment{}, enactmentNodeIndex,
		func(o client.Object) []string { return []string{o.GetLabels()[shared.NodeLabel]} }); err != nil {
		return err
	}
	gateChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, nu := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
		return rebootgate.Changed(old, nu) || !maps.Equal(old.Labels, nu.Labels)
	}}
	enactmentNode := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		name := o.GetLabels()[shared.NodeLabel]
		n := &corev1.Node{}
		if name == "" || r.Client.Get(ctx, types.NamespacedName{Name: name}, n) != nil || !rebootgate.Present(n) {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
	})
	gatedNodes := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		nodes := &corev1.NodeList{}
		if err := r.Client.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for i := range nodes.Items {
			if rebootgate.Present(&nodes.Items[i]) {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: nodes.Items[i].Name}})
			}
		}
		return reqs
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("reboot-gate").
		// Every replica decides gates, not only the leader: the leader may run on the node
		// that reboots, and a gate must start as the kubelet reports the new boot, not once
		// another replica holds the lease (15 s after a leader that could not release it).
		// Two replicas deciding the same change write one patch: the other's meets a
		// conflict (the patch is conditional) and decides again on the new Node.
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrentGates, NeedLeaderElection: ptr.To(false)}).
		For(&corev1.Node{}, builder.WithPredicates(gateChanged)).
		Watches(&v1beta1.NodeNetworkConfigurationEnactment{}, enactmentNode).
		Watches(&nmstatev1.NodeNetworkConfigurationPolicy{}, gatedNodes, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}

// Reconcile decides the node's gate and writes what changes in one patch, conditional on
// the Node's resource version: its taints are one list, and a patch of it must not drop a
// taint someone added since it was read.
func (r *RebootGateController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	n := &corev1.Node{}
	if err := r.Client.Get(ctx, req.NamespacedName, n); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	policies := &nmstatev1.NodeNetworkConfigurationPolicyList{}
	if err := r.Client.List(ctx, policies, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	enactments := &v1beta1.NodeNetworkConfigurationEnactmentList{}
	if err := r.Client.List(ctx, enactments, client.MatchingFields{enactmentNodeIndex: n.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	v := rebootgate.View{Node: n, Enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{}, Now: time.Now(), Timeout: r.Timeout}
	if _, boot, ok := rebootgate.ParseSince(n.Annotations[rebootgate.SinceAnnotation]); ok && boot == n.Status.NodeInfo.BootID {
		r.started.Store(n.Name, boot) // another replica started it
	}
	if b, ok := r.started.Load(n.Name); ok {
		v.Started = b.(string)
	}
	byName := map[string]*nmstatev1.NodeNetworkConfigurationPolicy{}
	for i := range policies.Items {
		p := &policies.Items[i]
		if shared.SelectsNode(p.Spec.NodeSelector, n.Labels) {
			v.Selected = append(v.Selected, rebootgate.Policy{Name: p.Name, Generation: p.Generation})
			byName[p.Name] = p
		}
	}
	for i := range enactments.Items {
		v.Enactments[enactments.Items[i].Labels[shared.PolicyLabel]] = &enactments.Items[i]
	}
	d := rebootgate.Decide(v)
	if !d.Changes() {
		return reconcile.Result{RequeueAfter: d.Recheck}, nil
	}
	since, _, _ := rebootgate.ParseSince(n.Annotations[rebootgate.SinceAnnotation])
	before := n.DeepCopy()
	d.ApplyTo(n)
	if err := r.Client.Patch(ctx, n, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			// The Node changed since the cache showed it (the kubelet, the handler lifting
			// its own gate): decided again on the new one, which a status change of the
			// kubelet's alone would not bring.
			return reconcile.Result{RequeueAfter: conflictRetry}, nil
		}
		return reconcile.Result{}, err
	}
	if d.Outcome == rebootgate.Started {
		r.started.Store(n.Name, d.Boot)
	}
	r.tell(ctx, n, byName[d.Policy], d, v.Now.Sub(since))
	return reconcile.Result{RequeueAfter: d.Recheck}, nil
}

// tell logs what the pass changed on the node and, for a gate that ended without its
// policies, records a Warning on the Node (naming the failed policy, related to it).
func (r *RebootGateController) tell(ctx context.Context, n *corev1.Node, failed *nmstatev1.NodeNetworkConfigurationPolicy, d rebootgate.Decision, held time.Duration) {
	log := ctrl.LoggerFrom(ctx).WithValues("node", n.Name, "boot", d.Boot)
	switch d.Outcome {
	case rebootgate.Started:
		log.Info("reboot gate: node tainted until its policies are Available in its new boot", "taint", rebootgate.TaintKey,
			"waiting", d.Waiting, "timeout", d.Recheck.String())
	case rebootgate.Converged:
		log.Info("reboot gate lifted: every policy is Available in the node's new boot", "after", held.Round(time.Millisecond).String())
	case rebootgate.Failed, rebootgate.TimedOut:
		log.Info("reboot gate lifted without the node's policies", "outcome", d.Outcome, "policy", d.Policy, "message", d.Message,
			"after", held.Round(time.Millisecond).String())
		if r.Events == nil {
			return
		}
		reason := ReasonReconvergenceTimedOut
		if d.Outcome == rebootgate.Failed {
			reason = ReasonReconvergenceFailed
		}
		var related runtime.Object // a typed nil would be taken for an object
		if failed != nil {
			related = failed
		}
		r.Events.Eventf(n, related, corev1.EventTypeWarning, reason, "RebootGate", "%s; the %s taint is removed", d.Message, rebootgate.TaintKey)
	case rebootgate.Cleared:
		log.Info("reboot gate: what was left of an earlier gate is removed", "removed", d.Remove, "untainted", d.Untaint)
	}
}
