// Package cluster is the cluster-wide controller: it grants rollout slots on the nodes'
// enactments and is the one writer of policy status, both computed from the policy's
// enactments and the nodes it selects, O(nodes) per policy.
package cluster

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
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
	"github.com/nmoverlay/nmoverlay/internal/readyourwrites"
)

// concurrentPolicies is how many policies are reconciled at once.
const concurrentPolicies = 8

// PolicyController reconciles each policy in two phases: the rollout (rollout.go: an
// enactment per selected node, free slots granted, the rest Pending, or Aborted once the
// generation failed somewhere) and its status (policy_status.go).
type PolicyController struct {
	Client client.Client
	// APIReader reads uncached: whether a write the cache never showed was superseded
	// (etcd restored to before it), so no pass waits for it.
	APIReader client.Reader
	// Events, when set, tells operators once per policy when it became Available or
	// Degraded (the handlers tell each node's failure).
	Events events.EventRecorder
	// ProgressInterval spaces writes that only move the counts of a Progressing
	// policy ("3/20 nodes configured"): a rollout over 200 nodes is not 200 writes.
	// Changes of condition are written at once. Default DefaultProgressInterval.
	ProgressInterval time.Duration
	// SlotTimeout is how long a grant holds its slot while the node has not reported the
	// generation. Default DefaultSlotTimeout.
	SlotTimeout time.Duration

	mu           sync.Mutex
	lastProgress map[string]time.Time // by policy
	// doubted: policies an enactment of which was deleted. Before its next pass creates an
	// enactment for one, it asks the API server whether the policy is still there: its
	// node deletes an enactment of a policy gone, which a cache may still hold.
	doubted map[string]bool
	// unobserved: each policy's writes its cache has not shown yet. A pass never grants on
	// a cache without the previous pass's grants: it would grant a slot twice, or create a
	// node's enactment again under another name.
	unobserved map[string]*readyourwrites.Writes
	// requeued: per policy, the nodes whose granted enactment was deleted before it
	// reported, and the generation (noteDeleted): recreated, it carries
	// RolloutRequeuedAnnotation, and the node is granted again only after the others.
	requeued map[string]map[string]int64
}

// SetupWithManager runs on policy changes, on enactment changes (mapped to their policy by
// label) and on Node changes of labels (what a policy selects) or readiness (who may hold
// a slot).
func (r *PolicyController) SetupWithManager(mgr ctrl.Manager) error {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	toPolicy := func(o client.Object, q queue) {
		if p := o.GetLabels()[shared.PolicyLabel]; p != "" {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: p}})
		}
	}
	byPolicyLabel := handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q queue) { toPolicy(e.Object, q) },
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q queue) { toPolicy(e.ObjectNew, q) },
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
			if p := e.Object.GetLabels()[shared.PolicyLabel]; p != "" {
				r.doubt(p)                   // the pass this enqueues forgets it if the cache has the policy's delete
				r.writesOf(p).Gone(e.Object) // a grant written to it will never show
				if en, ok := e.Object.(*v1beta1.NodeNetworkConfigurationEnactment); ok {
					r.noteDeleted(en)
				}
			}
			toPolicy(e.Object, q)
		},
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[client.Object], q queue) { toPolicy(e.Object, q) },
	}
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
	readinessChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, nu := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
		return old != nil && nu != nil && shared.NodeReady(old) != shared.NodeReady(nu)
	}}
	return ctrl.NewControllerManagedBy(mgr).
		Named("policy-status").
		// Policies roll out independently: one pass per policy at a time (the work queue's
		// rule), several policies at once.
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrentPolicies}).
		For(&nmstatev1.NodeNetworkConfigurationPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1beta1.NodeNetworkConfigurationEnactment{}, byPolicyLabel).
		Watches(&corev1.Node{}, allPolicies, builder.WithPredicates(predicate.Or(predicate.LabelChangedPredicate{}, readinessChanged))).
		Complete(r)
}

// Reconcile grants the policy's free rollout slots, then writes its status. It returns
// once its cache shows its writes, so the next pass never grants a slot twice.
func (r *PolicyController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	w := r.writesOf(req.Name)
	if !w.Await(ctx, r.Client, r.APIReader) {
		ctrl.LoggerFrom(ctx).V(1).Info("the cache has not shown this policy's last grants yet; deciding later", "policy", req.Name)
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	policy := &nmstatev1.NodeNetworkConfigurationPolicy{}
	if err := r.Client.Get(ctx, req.NamespacedName, policy); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// Read-only views of the cache (no copy of every Node and enactment in each pass): the
	// phases copy what they write.
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	enactments := &v1beta1.NodeNetworkConfigurationEnactmentList{}
	if err := r.Client.List(ctx, enactments, client.MatchingLabels{shared.PolicyLabel: policy.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	// One record of the pass's writes, grants and status: what the cache does not show
	// once the pass ends, the next pass waits for.
	defer w.Await(ctx, r.Client, r.APIReader)
	now := time.Now()
	slots := decideSlots(policy, nodes.Items, enactments.Items, r.requeuedOf(policy.Name), r.slotTimeout(), now)
	after, err := r.rollOut(ctx, w, policy, nodes.Items, enactments.Items, slots, now)
	if errors.Is(err, errPolicyGone) {
		// Its delete reaches the cache soon; until then nothing is created for it.
		ctrl.LoggerFrom(ctx).Info("no enactment created: "+err.Error(), "policy", policy.Name, "generation", policy.Generation)
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	statusWait, err := r.writeStatus(ctx, w, policy, nodes.Items, after)
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: soonest(slots.Recheck, statusWait)}, nil
}

// writesOf is the policy's record of writes not yet seen in the cache.
func (r *PolicyController) writesOf(policy string) *readyourwrites.Writes {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unobserved == nil {
		r.unobserved = map[string]*readyourwrites.Writes{}
	}
	if r.unobserved[policy] == nil {
		r.unobserved[policy] = &readyourwrites.Writes{}
	}
	return r.unobserved[policy]
}

// noteDeleted remembers the node of a deleted enactment that had a grant (reported or
// not), or was requeued already: deleting its own enactment must not bring a node's grant
// back ahead of the nodes that have not had one.
func (r *PolicyController) noteDeleted(e *v1beta1.NodeNetworkConfigurationEnactment) {
	gen, _, granted := shared.RolloutSlot(e.Annotations)
	if !granted {
		g, err := strconv.ParseInt(e.Annotations[shared.RolloutRequeuedAnnotation], 10, 64)
		if err != nil {
			return
		}
		gen = g
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.requeued == nil {
		r.requeued = map[string]map[string]int64{}
	}
	policy := e.Labels[shared.PolicyLabel]
	if r.requeued[policy] == nil {
		r.requeued[policy] = map[string]int64{}
	}
	r.requeued[policy][e.Labels[shared.NodeLabel]] = gen
}

// requeuedOf is a copy of the policy's requeued nodes.
func (r *PolicyController) requeuedOf(policy string) map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.requeued[policy])
}

// forget drops a deleted policy's records.
func (r *PolicyController) forget(policy string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.unobserved, policy)
	delete(r.lastProgress, policy)
	delete(r.doubted, policy)
	delete(r.requeued, policy)
}

// doubt marks a policy to be looked up in the API server before enactments are created for
// it; undoubt clears the mark and reports whether it was set.
func (r *PolicyController) doubt(policy string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.doubted == nil {
		r.doubted = map[string]bool{}
	}
	r.doubted[policy] = true
}

func (r *PolicyController) undoubt(policy string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	was := r.doubted[policy]
	delete(r.doubted, policy)
	return was
}

// soonest is the earliest of the phases' times to look again (0: none).
func soonest(ds ...time.Duration) time.Duration {
	var s time.Duration
	for _, d := range ds {
		if d > 0 && (s == 0 || d < s) {
			s = d
		}
	}
	return s
}
