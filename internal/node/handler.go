package node

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/backend"
	"github.com/nmoverlay/nmoverlay/internal/probe"
	"github.com/nmoverlay/nmoverlay/internal/readyourwrites"
	"github.com/nmoverlay/nmoverlay/internal/rebootgate"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// Handler reconciles one node: every policy selecting it is applied in one transaction.
type Handler struct {
	Client   client.Client
	NodeName string
	Backend  backend.Backend
	// BootID identifies the running boot (/proc/sys/kernel/random/boot_id).
	BootID func() (string, error)
	// Degraded returns why the node's overlay is not in use, or "": policies applied
	// then would become permanent, so none is.
	Degraded func() (string, error)
	// APIReader reads uncached: whether the policy of an enactment this cache has no
	// policy for is gone, or only not seen yet (the controller created the enactment, and
	// its watch was faster than the policies'); and whether a write the cache never
	// showed was superseded (etcd restored to before it), so no pass waits for it.
	APIReader client.Reader
	// Probes run after each apply, before its commit; a failure rolls the apply back.
	Probes probe.Set
	// Events, when set, tells operators on the policy when it failed on this node
	// (only when something happened: an up-to-date node emits nothing).
	Events events.EventRecorder

	// Wake, when set, starts a pass from outside the API: the lower dir changed.
	Wake <-chan event.GenericEvent
	// NetworkChanged signals a change of the node's network (NetworkManager's change
	// signal); with Show, each starts a check for drift: what a policy in effect committed,
	// changed outside nmoverlay.
	NetworkChanged <-chan struct{}
	Show           func(ctx context.Context) (state.State, error)
	// ReapplyDrift re-applies every drifted policy, not only those annotated
	// DriftAnnotation=DriftReapply.
	ReapplyDrift bool
	// DriftChanged, when set, is called when the drift reported changes (for the
	// NodeNetworkState reporter).
	DriftChanged func()
	// Transactions, when set, is told of each transaction (the reporter reads between them).
	Transactions *Transactions
	// Migration, when set, keeps the node's plan for its move from kubernetes-nmstate
	// while it is not on the overlay.
	Migration *Migration
	// RebootGate, when set (spec.rebootGate: Taint), has the handler lift its node's reboot
	// gate should the cluster controller not (rebootgate.go).
	RebootGate *RebootGate
	drift      drift

	started time.Time // for the boot re-convergence metric
	// firstPass ends the reporter's wait for this process's first pass (Transactions.Expect).
	firstPass func()
	// failures: the applies that failed, in memory (a restarted handler tries once at
	// once). One worker: no lock.
	failures failures
	// committed: the commitKey of the last commit in this process.
	committed string
	// last: the state last committed (or restored) in this process, and in which boot.
	last struct {
		boot  string
		state backend.Desired
	}
	// keptProbes: probes that passed before an apply that did not end in a commit. They
	// stay in force until a commit, even if they fail before the next apply: that apply may
	// be what restores them, and a probe dropped because our own change broke it would let
	// the next try commit a broken network.
	keptProbes map[string]bool
	// writes: what passes wrote that the cache has not shown yet.
	writes readyourwrites.Writes
	// waitLogged: what was last logged of each policy waiting for a slot: its generation,
	// and whether its rollout was aborted.
	waitLogged map[string]string
	// failedBaseline: the probes that failed the last baseline, checked once (not polled)
	// at the next: one that cannot pass here would cost every apply its poll.
	failedBaseline map[string]bool
	// burst: the grants gathered for the next pass (gatherWait).
	burst struct {
		sync.Mutex
		first, last time.Time
	}
	// unrestored: NetworkManager could not roll back an apply (its checkpoint was lost)
	// and restoring the last committed state failed too; every pass tries again first.
	unrestored string
}

// CacheOptions scope the handler's cache to its own node: its Node, its enactments and
// its NodeNetworkState; policies are cluster-wide.
func CacheOptions(nodeName string) cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Node{}: {Field: fields.OneTermEqualSelector("metadata.name", nodeName)},
		&v1beta1.NodeNetworkConfigurationEnactment{}: {Label: labels.SelectorFromSet(labels.Set{shared.NodeLabel: nodeName})},
		NodeNetworkStateMeta(""):                     {Field: fields.OneTermEqualSelector("metadata.name", nodeName)},
	}}
}

// SetupWithManager runs the handler on policy changes, on changes of its Node's labels, and
// on its enactments' creation (the controller creates each with a rollout slot), grants
// and deletion.
func (h *Handler) SetupWithManager(mgr ctrl.Manager) error {
	h.started = time.Now()
	if h.Transactions != nil {
		h.firstPass = h.Transactions.Expect(firstPassHold)
	}
	toNode := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: h.NodeName}}}
	})
	var nodeChanged predicate.Predicate = predicate.LabelChangedPredicate{}
	if h.RebootGate != nil {
		// Its gate too: tainted after the pass that made the policies Available, the node
		// is lifted by the next.
		nodeChanged = predicate.Or(nodeChanged, predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			old, nu := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
			return rebootgate.Changed(old, nu)
		}})
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("node-handler").
		For(&corev1.Node{}, builder.WithPredicates(nodeChanged)).
		Watches(&nmstatev1.NodeNetworkConfigurationPolicy{}, toNode, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Its own writes (status) and the controller's Pending and Aborted do not wake it; a
		// grant (on creation or later) and a deleted enactment (by hand, or a policy gone) do.
		Watches(&v1beta1.NodeNetworkConfigurationEnactment{}, h.onEnactment())
	if h.Wake != nil {
		b = b.WatchesRawSource(source.Channel(h.Wake, toNode))
	}
	if h.NetworkChanged != nil {
		changed := make(chan event.GenericEvent, 1)
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			for {
				select {
				case <-ctx.Done():
					return nil
				case _, ok := <-h.NetworkChanged:
					if !ok {
						return nil
					}
					h.drift.changed.Store(true)
					select {
					case changed <- event.GenericEvent{Object: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: h.NodeName}}}:
					default:
					}
				}
			}
		})); err != nil {
			return err
		}
		b = b.WatchesRawSource(source.Channel(changed, toNode))
	}
	return b.Complete(h)
}

// firstPassHold bounds how long the reporter waits for the handler's first pass
// (Transactions.Expect): a pass needs the cache synced, and the NodeNetworkState is not to
// wait on an API server that does not answer.
const firstPassHold = time.Minute

// Grants are gathered before a pass: the controller grants each policy's slots on its
// own, and policies created together would otherwise cost a transaction (and its probes)
// each. While another selected policy still waits for its grant, a pass woken by a grant
// waits until none came for grantQuiet, and no longer than grantGathering after the
// first: a burst is applied together. When none waits, no grant can join the pass, and it
// goes at once.
const (
	grantQuiet     = 300 * time.Millisecond
	grantGathering = 2 * time.Second
)

// gatherWait is how long a pass waits for more grants: the burst began at first, its last
// grant came at last (zero: no burst); awaited says whether a selected policy still waits
// for its grant.
func gatherWait(first, last, now time.Time, awaited bool) time.Duration {
	if first.IsZero() || !awaited {
		return 0
	}
	quiet, capped := last.Add(grantQuiet).Sub(now), first.Add(grantGathering).Sub(now)
	return max(min(quiet, capped), 0)
}

// grantArrived notes a grant (on an enactment created with one, or granted later) for
// gatherWait.
func (h *Handler) grantArrived(now time.Time) {
	h.burst.Lock()
	defer h.burst.Unlock()
	if h.burst.first.IsZero() {
		h.burst.first = now
	}
	h.burst.last = now
}

// gathering is how long the pass must still wait for grants; once none is to come, the
// burst is over.
func (h *Handler) gathering(now time.Time, awaited bool) time.Duration {
	h.burst.Lock()
	defer h.burst.Unlock()
	wait := gatherWait(h.burst.first, h.burst.last, now, awaited)
	if wait == 0 {
		h.burst.first, h.burst.last = time.Time{}, time.Time{}
	}
	return wait
}

// onEnactment wakes the handler on its enactments' grants, whether the enactment was created
// with one or granted one later (gathered: gatherWait), and at once on a deletion.
func (h *Handler) onEnactment() handler.TypedEventHandler[client.Object, reconcile.Request] {
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: h.NodeName}}
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q queue) {
			// One created Pending is the controller's to change: nothing for the node to do
			// until its grant (a rollout of 20 policies on 200 nodes creates 2,000 such).
			if e.Object.GetAnnotations()[shared.RolloutSlotAnnotation] == "" {
				return
			}
			h.grantArrived(time.Now())
			q.Add(req) // the pass decides whether to gather more
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
			if e.ObjectOld.GetAnnotations()[shared.RolloutSlotAnnotation] != e.ObjectNew.GetAnnotations()[shared.RolloutSlotAnnotation] {
				h.grantArrived(time.Now())
				q.Add(req)
			}
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
			h.writes.Gone(e.Object) // a status written to it will never show
			q.Add(req)
		},
	}
}

// Reconcile brings the node to the merged state of its policies when anything is not
// up to date: a new or changed policy, a label change, a new boot. It returns once its
// cache shows what it wrote, so the next pass never decides on stale enactments.
func (h *Handler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if !h.writes.Await(ctx, h.Client, h.APIReader) {
		// A cache still without the last pass's writes (an API server dropping watches)
		// would have this pass write them again, or conflict.
		ctrl.LoggerFrom(ctx).V(1).Info("the cache has not shown this node's last writes yet; deciding later", "node", h.NodeName)
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	res, err := h.reconcile(ctx, &h.writes)
	if h.firstPass != nil {
		h.firstPass() // once its work is done: the wait for its writes to show is no read of the node
	}
	h.writes.Await(ctx, h.Client, h.APIReader)
	return res, err
}

// nodeView is what one pass reads: the node, the policies selecting it, its enactments.
type nodeView struct {
	node     *corev1.Node
	selected []Policy // sorted by name
	byName   map[string]*nmstatev1.NodeNetworkConfigurationPolicy
	existing map[string]*v1beta1.NodeNetworkConfigurationEnactment
	boot     string
	degraded string
}

// read reads the pass's view from the cache; nil when the Node is gone.
func (h *Handler) read(ctx context.Context) (*nodeView, error) {
	v := &nodeView{node: &corev1.Node{}, byName: map[string]*nmstatev1.NodeNetworkConfigurationPolicy{},
		existing: map[string]*v1beta1.NodeNetworkConfigurationEnactment{}}
	if err := h.Client.Get(ctx, types.NamespacedName{Name: h.NodeName}, v.node); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	policies := &nmstatev1.NodeNetworkConfigurationPolicyList{}
	if err := h.Client.List(ctx, policies); err != nil {
		return nil, err
	}
	enactments := &v1beta1.NodeNetworkConfigurationEnactmentList{}
	if err := h.Client.List(ctx, enactments, client.MatchingLabels{shared.NodeLabel: h.NodeName}); err != nil {
		return nil, err
	}
	var err error
	if v.boot, err = h.BootID(); err != nil {
		return nil, fmt.Errorf("reading the boot ID: %w", err)
	}
	if v.degraded, err = h.Degraded(); err != nil {
		return nil, err
	}
	for i, p := range policies.Items {
		v.byName[p.Name] = &policies.Items[i]
		pol := PolicyOf(&policies.Items[i])
		if pol.Selects(v.node.Labels) {
			v.selected = append(v.selected, pol)
		}
	}
	sort.Slice(v.selected, func(i, j int) bool { return v.selected[i].Name < v.selected[j].Name })
	for i := range enactments.Items {
		e := &enactments.Items[i]
		policy := e.Labels[shared.PolicyLabel]
		if _, known := v.byName[policy]; !known {
			if seen, err := h.policyNotSeenYet(ctx, policy); err != nil {
				return nil, err
			} else if seen {
				continue // left alone until the policy's own event brings it
			}
		}
		v.existing[policy] = e
	}
	if err := h.renderCaptures(ctx, v, time.Now()); err != nil {
		return nil, err
	}
	for i, pol := range v.selected {
		if pol.CaptureError != "" {
			continue
		}
		if err := h.Backend.Check(ctx, pol.Name, pol.DesiredState); err != nil {
			v.selected[i].Refused = "spec.desiredState: " + err.Error()
		}
	}
	return v, nil
}

// policyNotSeenYet: the policy of an enactment is not in the cache but exists (its event
// has not arrived yet); otherwise its enactment is one of a policy gone, to delete.
func (h *Handler) policyNotSeenYet(ctx context.Context, policy string) (bool, error) {
	if h.APIReader == nil {
		return false, nil
	}
	err := h.APIReader.Get(ctx, types.NamespacedName{Name: policy}, &nmstatev1.NodeNetworkConfigurationPolicy{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// snapshot is what Decide sees of the pass's view and of this process's memory.
func (h *Handler) snapshot(v *nodeView, reapply bool) Snapshot {
	return Snapshot{Node: h.NodeName, Boot: v.boot, Degraded: v.degraded, Now: time.Now(), Selected: v.selected,
		Enactments: v.existing, Failures: h.failures.byPolicy, Drifted: h.driftedNow(), Reapply: reapply,
		Committed: h.committed, Schema: h.Backend}
}

// reconcile is one pass: read, decide (Decide), apply, decide what to report (Settle),
// then write each enactment's status once.
func (h *Handler) reconcile(ctx context.Context, w *readyourwrites.Writes) (reconcile.Result, error) {
	v, err := h.read(ctx)
	if v == nil || err != nil {
		return reconcile.Result{}, err
	}
	s := h.snapshot(v, false)
	d := Decide(s)
	if wait := h.gathering(time.Now(), len(d.Waiting) > 0); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("node", h.NodeName)
	var recheck time.Duration
	if v.degraded == "" {
		overlayDegraded.Set(0)
		if h.unrestored != "" {
			// The node may run a change that was never committed: nothing else until it
			// is back on the last committed state.
			if err := h.restore(ctx, v); err != nil {
				log.Error(err, "restoring the last committed state")
				return reconcile.Result{RequeueAfter: restoreRetry}, nil
			}
			s = h.snapshot(v, false)
			d = Decide(s)
		}
		// A pass that applies skips the drift check and its read of the node (0.4-0.5 s
		// on 2,000 interfaces): the apply verifies every policy's state and activates
		// again what drifted. The change stays noted for the next pass that does not.
		if !d.Apply {
			var reapply bool
			if reapply, recheck, err = h.checkDrift(ctx, v); err != nil {
				return reconcile.Result{}, err
			}
			s = h.snapshot(v, reapply) // the drift found is in it too
			d = Decide(s)
		}
	} else {
		overlayDegraded.Set(1)
		if err := h.planMigration(ctx, v); err != nil {
			log.Error(err, "planning the node's migration from kubernetes-nmstate")
		}
	}
	h.logDecision(ctx, s, d)
	if d.Settle {
		var applyErr error
		if d.Apply {
			if d.NewBoot {
				log.Info("boot re-convergence: applying the node's policies again", "boot", v.boot, "policies", s.versions(d.Composed.Applied))
			}
			if err := h.saveCaptures(ctx, w, v, d.Composed.Applied); err != nil {
				return reconcile.Result{}, err
			}
			if applyErr = h.apply(ctx, v, s.versions(d.Composed.Applied), d.Composed.Apply); applyErr == nil {
				h.committed = commitKey(v.boot, d.Composed)
				h.clearDrift() // the backend verified the whole state, drifted interfaces activated again
				s.Drifted = nil
				if d.NewBoot {
					bootReconvergence.Set(time.Since(h.started).Seconds())
					log.Info("boot re-convergence done", "boot", v.boot, "after", time.Since(h.started).Round(time.Millisecond).String())
				}
			}
		}
		s.Now = time.Now() // an apply takes up to minutes: its failure's backoff starts when it ended
		d = Settle(s, d, applyErr)
		// A failure waits out its backoff, then is tried again.
		h.failures.record(s, d)
		s.Failures = h.failures.byPolicy
		for _, name := range d.Composed.Applied {
			d.requeue(untilRetry(s, name), false)
		}
	}
	if err := h.write(ctx, w, v, d); err != nil {
		return reconcile.Result{}, err
	}
	d.requeue(recheck, false)
	gateRecheck, err := h.liftGate(ctx, w, v)
	if err != nil {
		return reconcile.Result{}, err
	}
	d.requeue(gateRecheck, false)
	if d.Jitter {
		return reconcile.Result{RequeueAfter: wait.Jitter(d.Requeue, 0.5)}, nil
	}
	return reconcile.Result{RequeueAfter: d.Requeue}, nil
}
