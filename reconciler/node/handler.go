package node

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/reconciler/networkmanager"
	"github.com/nmoverlay/nmoverlay/reconciler/probe"
	"github.com/nmoverlay/nmoverlay/reconciler/readyourwrites"
	"github.com/nmoverlay/nmoverlay/reconciler/state"
)

// Transaction is an applied, verified change the handler commits or rolls back.
type Transaction interface {
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// Engine applies a node's whole desired state; what it owns and the state does not name
// is removed (reconciler/networkmanager with Prune).
type Engine interface {
	Apply(ctx context.Context, desired state.State) (Transaction, error)
}

// Handler reconciles one node: every policy selecting it is applied in one transaction.
type Handler struct {
	Client   client.Client
	NodeName string
	Engine   Engine
	// BootID identifies the running boot (/proc/sys/kernel/random/boot_id).
	BootID func() (string, error)
	// Degraded returns why the node's overlay is not in use, or "": policies applied
	// then would become permanent, so none is.
	Degraded func() (string, error)
	// APIReader reads other nodes' enactments and readiness for rollout admission,
	// uncached: the decision must see the latest claims.
	APIReader client.Reader
	// Probes run after each apply, before its commit; a failure rolls the apply back.
	Probes probe.Set
	// Events, when set, tells operators on the policy when it failed on this node
	// (only when something happened: an up-to-date node emits nothing).
	Events events.EventRecorder
	// SlotTimeout is how long another node's Progressing enactment holds a rollout slot:
	// a handler that died mid-apply frees its slot after it. Default 5 minutes.
	SlotTimeout time.Duration

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
	drift        drift

	started time.Time // for the boot re-convergence metric
	// failures: policies whose apply failed, by name; in memory (a restarted handler
	// tries once at once). One worker: no lock.
	failures map[string]failure
	// committed: the boot and the state of the last commit in this process.
	committed string
	// last: the state last committed (or restored) in this process, and in which boot.
	last struct {
		boot  string
		state state.State
	}
	// keptProbes: probes that passed before an apply that did not end in a commit. They
	// stay in force until a commit, even if they fail before the next apply: that apply may
	// be what restores them, and a probe dropped because our own change broke it would let
	// the next try commit a broken network.
	keptProbes map[string]bool
	// unrestored: NetworkManager could not roll back an apply (its checkpoint was lost)
	// and restoring the last committed state failed too; every pass tries again first.
	unrestored string
}

// pendingRetry is how often a node waiting for a rollout slot asks again (each time two
// uncached lists), jittered so waiting nodes do not ask in step.
const pendingRetry = 4 * time.Second

// degradedRetry is how often a node refusing policies checks its overlay again.
const degradedRetry = 30 * time.Second

// busyRetry is how often a node waiting for another tool's checkpoint looks again.
const busyRetry = 2 * time.Second

// restoreRetry is how often a node that could not restore its last committed state tries
// again (NetworkManager may be restarting).
const restoreRetry = 2 * time.Second

// CacheOptions scope the handler's cache to its own node: its Node, its enactments and
// its NodeNetworkState; policies are cluster-wide.
func CacheOptions(nodeName string) cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Node{}: {Field: fields.OneTermEqualSelector("metadata.name", nodeName)},
		&v1beta1.NodeNetworkConfigurationEnactment{}: {Label: labels.SelectorFromSet(labels.Set{shared.NodeLabel: nodeName})},
		&v1beta1.NodeNetworkState{}:                  {Field: fields.OneTermEqualSelector("metadata.name", nodeName)},
	}}
}

// SetupWithManager runs the handler on policy changes and on changes of its Node's labels.
func (h *Handler) SetupWithManager(mgr ctrl.Manager) error {
	h.started = time.Now()
	toNode := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: h.NodeName}}}
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("node-handler").
		For(&corev1.Node{}, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&nmstatev1.NodeNetworkConfigurationPolicy{}, toNode, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Its own writes do not wake it; a deleted enactment (by hand, or a policy gone) does.
		Watches(&v1beta1.NodeNetworkConfigurationEnactment{}, toNode, builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(event.CreateEvent) bool { return false },
			UpdateFunc:  func(event.UpdateEvent) bool { return false },
			DeleteFunc:  func(event.DeleteEvent) bool { return true },
			GenericFunc: func(event.GenericEvent) bool { return false },
		}))
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

// Reconcile brings the node to the merged state of its policies when anything is not
// up to date: a new or changed policy, a label change, a new boot. It returns once its
// cache shows what it wrote, so the next pass never decides on stale enactments.
func (h *Handler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	w := &readyourwrites.Writes{}
	res, err := h.reconcile(ctx, w)
	w.Await(ctx, h.Client)
	return res, err
}

// report writes what a pass did: Available or Failing for each policy applied at its
// current generation (unless already so), Failing for the invalid and conflicting ones.
// It returns when to look again: at once for policies failed with a suspect, after the
// backoff for a failed change.
func (h *Handler) report(ctx context.Context, w *readyourwrites.Writes, v *nodeView, plan, apply Plan,
	current, inEffect map[string]bool, applyErr error) (requeue time.Duration, err error) {
	suspects := suspectsOf(applyErr, apply, func(name string) bool {
		return current[name] && !inEffect[name]
	}, func(name string) bool {
		f, ok := h.failures[name]
		return ok && f.generation == v.generation[name]
	})
	for _, name := range apply.Applied {
		if !current[name] || inEffect[name] || h.drifted(name) != "" {
			continue // its last applied generation, applied before in this boot, or drifted since: nothing new to say
		}
		if len(suspects) > 0 && !suspects[name] {
			requeue = time.Millisecond // innocent until tried without the suspects
			continue
		}
		e := v.existing[name]
		h.event(v.byName[name], v.node, applyErr)
		if applyErr != nil {
			h.failed(name, v.generation[name], applyErr, policySet(v))
			SetFailing(e, applyErr.Error())
		} else {
			h.succeeded(name)
			SetAvailable(e, "applied in boot "+v.boot)
			e.Status.BootID = v.boot
			e.Status.DesiredState = shared.State{Raw: v.byName[name].Spec.DesiredState.Raw}
		}
		e.Status.PolicyGeneration = v.generation[name]
		if err := h.updateStatus(ctx, w, e); err != nil {
			return 0, err
		}
	}
	// Invalid and conflicting policies: as written (plan), or against the generations
	// that stayed in effect (apply).
	for name, msg := range plan.Failed {
		if err := h.reportFailing(ctx, w, v, name, msg); err != nil {
			return 0, err
		}
	}
	for name, msg := range apply.Failed {
		if current[name] {
			if err := h.reportFailing(ctx, w, v, name, msg); err != nil {
				return 0, err
			}
		}
	}
	if applyErr != nil {
		// Rolled back: the node is as before. Try again when the backoff ends or the
		// node's policies change, not at once.
		for _, name := range apply.Applied {
			if wait := h.backoff(name, v.generation[name], policySet(v)); wait > 0 && (requeue == 0 || wait < requeue) {
				requeue = wait
			}
		}
	}
	return requeue, nil
}

// nodeView is what one pass reads: the node, the policies selecting it, its enactments.
type nodeView struct {
	node       *corev1.Node
	selected   []Policy // sorted by name
	byName     map[string]*nmstatev1.NodeNetworkConfigurationPolicy
	generation map[string]int64 // of the selected policies
	existing   map[string]*v1beta1.NodeNetworkConfigurationEnactment
	boot       string
	degraded   string
}

// read reads the pass's view from the cache; nil when the Node is gone.
func (h *Handler) read(ctx context.Context) (*nodeView, error) {
	v := &nodeView{node: &corev1.Node{}, byName: map[string]*nmstatev1.NodeNetworkConfigurationPolicy{},
		generation: map[string]int64{}, existing: map[string]*v1beta1.NodeNetworkConfigurationEnactment{}}
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
		pol := Policy{Name: p.Name, Generation: p.Generation, NodeSelector: p.Spec.NodeSelector,
			Capture: p.Spec.Capture, DesiredState: p.Spec.DesiredState.Raw}
		if pol.Selects(v.node.Labels) {
			v.selected = append(v.selected, pol)
			v.generation[p.Name] = p.Generation
		}
	}
	sort.Slice(v.selected, func(i, j int) bool { return v.selected[i].Name < v.selected[j].Name })
	for i := range enactments.Items {
		e := &enactments.Items[i]
		v.existing[e.Labels[shared.PolicyLabel]] = e
	}
	return v, nil
}

func (h *Handler) reconcile(ctx context.Context, w *readyourwrites.Writes) (reconcile.Result, error) {
	v, err := h.read(ctx)
	if v == nil || err != nil {
		return reconcile.Result{}, err
	}
	if v.degraded != "" {
		overlayDegraded.Set(1)
		return h.refuse(ctx, w, v)
	}
	overlayDegraded.Set(0)
	if h.unrestored != "" {
		// The node may run a change that was never committed: nothing else until it is
		// back on the last committed state.
		if err := h.restore(ctx, v); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "restoring the last committed state", "node", h.NodeName)
			return reconcile.Result{RequeueAfter: restoreRetry}, nil
		}
	}
	reapply, recheck, err := h.checkDrift(ctx, w, v)
	if err != nil {
		return reconcile.Result{}, err
	}
	plan := MakePlan(v.selected)
	if !reapply && h.upToDate(plan, v) {
		return reconcile.Result{RequeueAfter: recheck}, nil
	}

	// inEffect: applied in this boot at this generation. A new generation takes a rollout
	// slot first; re-applying after a boot or a failure does not (it was rolled out).
	inEffect := map[string]bool{}
	var rollout []string
	newBoot := false
	for _, name := range plan.Applied {
		e, ok := v.existing[name]
		inEffect[name] = ok && e.Status.PolicyGeneration == v.generation[name] && e.Status.BootID == v.boot &&
			IsTrue(e, shared.EnactmentAvailable, "")
		settled := ok && e.Status.PolicyGeneration == v.generation[name] &&
			(IsTrue(e, shared.EnactmentAvailable, "") || IsTrue(e, shared.EnactmentFailing, ""))
		if !settled {
			rollout = append(rollout, name)
		}
		newBoot = newBoot || (ok && e.Status.BootID != "" && e.Status.BootID != v.boot)
	}
	waiting, queued, err := h.claimSlots(ctx, w, v, rollout)
	if err != nil {
		return reconcile.Result{}, err
	}
	for name, why := range waiting {
		if err := h.setPending(ctx, w, v.existing[name], v.generation[name], "waiting for a rollout slot: "+why); err != nil {
			return reconcile.Result{}, err
		}
	}
	// Held: policies whose current generation is not applied in this pass (no slot yet,
	// or failed and waiting out its backoff). Their last applied generation stays.
	held := map[string]bool{}
	var requeue time.Duration
	for _, m := range []map[string]string{waiting, queued} {
		for name := range m {
			held[name], requeue = true, wait.Jitter(pendingRetry, 0.5)
		}
	}
	for _, name := range plan.Applied {
		if wait := h.backoff(name, v.generation[name], policySet(v)); wait > 0 && !inEffect[name] {
			// Said already, unless the write after the rollback did not get through.
			if err := h.reportFailing(ctx, w, v, name, h.failures[name].message); err != nil {
				return reconcile.Result{}, err
			}
			held[name] = true
			if requeue == 0 || wait < requeue {
				requeue = wait
			}
		}
	}
	apply, current := h.compose(v, plan, held)

	var applyErr error
	digest, err := json.Marshal(apply.Apply)
	if err != nil {
		return reconcile.Result{}, err
	}
	if key := v.boot + "/" + string(digest); key != h.committed {
		// The engine is idempotent, but a pass that changes nothing (a retry that leaves
		// a failed policy out) need not cost a transaction and the probes.
		if applyErr = h.apply(ctx, v, apply.Apply); applyErr == nil {
			h.committed = key
			h.clearDrift() // the engine verified the whole state, drifted interfaces activated again
		}
	}
	var busy *networkmanager.CheckpointBusyError
	if errors.As(applyErr, &busy) {
		// Another tool's transaction: nothing was changed and nobody failed. Say so on
		// what waits, and look again soon.
		return reconcile.Result{RequeueAfter: wait.Jitter(busyRetry, 0.5)}, h.reportBusy(ctx, w, v, apply, current, inEffect, busy)
	}
	if applyErr == nil && newBoot {
		bootReconvergence.Set(time.Since(h.started).Seconds())
	}
	// Enactments of policies that no longer select this node go once the engine has
	// pruned what they applied; if that failed, they stay and say why.
	if err := h.settleStale(ctx, w, v, applyErr); err != nil {
		return reconcile.Result{}, err
	}
	again, err := h.report(ctx, w, v, plan, apply, current, inEffect, applyErr)
	if err != nil {
		return reconcile.Result{}, err
	}
	for _, d := range []time.Duration{again, recheck} {
		if d > 0 && (requeue == 0 || d < requeue) {
			requeue = d
		}
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// event tells operators on the policy that it failed on this node. Success is told once
// per policy by the cluster controller, not once per node.
func (h *Handler) event(policy *nmstatev1.NodeNetworkConfigurationPolicy, node *corev1.Node, err error) {
	h.warn(policy, node, shared.ReasonFailedToConfigure, err)
}

// warn records a Warning on the policy, related to this node, its note in the form
// "node <node>: ..." (the admission policy admits no other type or form).
func (h *Handler) warn(policy *nmstatev1.NodeNetworkConfigurationPolicy, node *corev1.Node, reason string, err error) {
	if h.Events == nil || policy == nil || err == nil {
		return
	}
	h.Events.Eventf(policy, node, corev1.EventTypeWarning, reason, "Apply", "node %s: %v", h.NodeName, err)
}

// apply applies desired, probes the node and commits, or rolls back when a probe that
// passed before the apply fails after it. When NetworkManager cannot roll back (it
// restarted and lost the checkpoint) or cannot commit, the last committed state is
// applied again at once, so the node never stays on a change nobody committed.
func (h *Handler) apply(ctx context.Context, v *nodeView, desired state.State) error {
	start := time.Now()
	result := "failed"
	log := ctrl.LoggerFrom(ctx).WithValues("node", h.NodeName, "boot", v.boot)
	defer func() {
		applyDuration.WithLabelValues(result).Observe(time.Since(start).Seconds())
		log.Info("apply ended", "result", result, "duration", time.Since(start).Round(time.Millisecond).String())
	}()
	log.Info("applying the node's policies", "interfaces", len(desired.Interfaces))
	healthy := h.baseline(ctx)
	tx, err := h.Engine.Apply(ctx, desired)
	if err != nil {
		if errors.As(err, new(*networkmanager.CheckpointBusyError)) || errors.As(err, new(*state.FieldError)) {
			return err // nothing was changed
		}
		rollbacks.WithLabelValues("engine").Inc() // the engine rolls back what did not converge
		h.keepProbes(healthy)
		var applyErr *networkmanager.ApplyError
		if errors.As(err, &applyErr) && applyErr.RollbackErr != nil {
			return h.restored(ctx, v, err)
		}
		return err
	}
	if err := h.Probes.Verify(ctx, healthy); err != nil {
		rollbacks.WithLabelValues("probe").Inc()
		h.keepProbes(healthy)
		if rbErr := tx.Rollback(ctx); rbErr != nil {
			return probeFailure{h.restored(ctx, v, fmt.Errorf("%w; ROLLBACK FAILED: %v", err, rbErr))}
		}
		result = "rolled_back"
		return probeFailure{fmt.Errorf("%w; rolled back", err)}
	}
	if err := tx.Commit(ctx); err != nil {
		h.keepProbes(healthy)
		return h.restored(ctx, v, err)
	}
	result = "committed"
	h.keptProbes = nil
	h.last.boot, h.last.state = v.boot, desired
	return nil
}

// baseline is the probes to check after this apply: those passing now, and those kept
// from an apply that did not commit.
func (h *Handler) baseline(ctx context.Context) []probe.Probe {
	healthy := h.Probes.Baseline(ctx)
	in := map[string]bool{}
	for _, p := range healthy {
		in[p.Name()] = true
	}
	for _, p := range h.Probes.Probes {
		if h.keptProbes[p.Name()] && !in[p.Name()] {
			healthy = append(healthy, p)
		}
	}
	return healthy
}

func (h *Handler) keepProbes(probes []probe.Probe) {
	if h.keptProbes == nil {
		h.keptProbes = map[string]bool{}
	}
	for _, p := range probes {
		h.keptProbes[p.Name()] = true
	}
}

// restored restores the last committed state after cause (a rollback or commit that
// NetworkManager could not do) and says what happened.
func (h *Handler) restored(ctx context.Context, v *nodeView, cause error) error {
	h.committed = ""
	h.unrestored = cause.Error()
	if err := h.restore(ctx, v); err != nil {
		return fmt.Errorf("%w; restoring the last committed state failed too (%v): retrying every %s", cause, err, restoreRetry)
	}
	return fmt.Errorf("%w; restored the last committed state instead", cause)
}

// restore applies the last committed state again and commits it without probes: it
// passed them when it was committed, and nothing better is known.
func (h *Handler) restore(ctx context.Context, v *nodeView) error {
	last := h.lastCommitted(v)
	tx, err := h.Engine.Apply(ctx, last)
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("restored the last committed state", "node", h.NodeName, "after", h.unrestored)
	h.unrestored = ""
	h.last.boot, h.last.state = v.boot, last
	digest, _ := json.Marshal(last)
	h.committed = v.boot + "/" + string(digest)
	return nil
}

// lastCommitted is the state last committed on the node in this boot: this process's own
// record, or, after a restart, what the enactments Available in this boot applied
// (status.desiredState); in a new boot, nothing (the persistent profiles).
func (h *Handler) lastCommitted(v *nodeView) state.State {
	if h.last.boot == v.boot {
		return h.last.state
	}
	var pols []Policy
	for name, e := range v.existing {
		if committedIn(e, v.boot) {
			pols = append(pols, Policy{Name: name, DesiredState: e.Status.DesiredState.Raw})
		}
	}
	sort.Slice(pols, func(i, j int) bool { return pols[i].Name < pols[j].Name })
	return MakePlan(pols).Apply
}

// reportBusy says on each policy this pass would have applied anew that it waits for
// another tool's checkpoint; a claimed rollout slot stays claimed (Progressing).
func (h *Handler) reportBusy(ctx context.Context, w *readyourwrites.Writes, v *nodeView, apply Plan,
	current, inEffect map[string]bool, busy *networkmanager.CheckpointBusyError) error {
	ctrl.LoggerFrom(ctx).Info("waiting for another tool's NetworkManager checkpoint", "node", h.NodeName, "checkpoint", busy.Path)
	for _, name := range apply.Applied {
		if !current[name] || inEffect[name] {
			continue
		}
		e, err := h.enactment(ctx, w, v, name)
		if err != nil {
			return err
		}
		if TrueWith(e, shared.EnactmentProgressing, busy.Error()) {
			continue
		}
		SetProgressing(e, busy.Error())
		e.Status.PolicyGeneration = v.generation[name]
		if err := h.updateStatus(ctx, w, e); err != nil {
			return err
		}
	}
	return nil
}

// upToDate: every selected policy's enactment reports the current generation, Available
// in this boot (or Failing with the same reason), and no enactment is left for a policy
// that does not select the node.
func (h *Handler) upToDate(plan Plan, v *nodeView) bool {
	for name := range v.existing {
		if _, ok := v.generation[name]; !ok {
			return false
		}
	}
	for _, name := range plan.Applied {
		e, ok := v.existing[name]
		if !ok || e.Status.PolicyGeneration != v.generation[name] || e.Status.BootID != v.boot {
			return false
		}
		if d := h.drifted(name); d != "" {
			if !TrueWith(e, shared.EnactmentFailing, driftMessage(d)) {
				return false
			}
			continue
		}
		if !IsTrue(e, shared.EnactmentAvailable, "") {
			return false
		}
	}
	for name, msg := range plan.Failed {
		e, ok := v.existing[name]
		if !ok || e.Status.PolicyGeneration != v.generation[name] || !TrueWith(e, shared.EnactmentFailing, msg) {
			return false
		}
	}
	return true
}

// refuse fails every selected policy while the node's overlay is degraded: what it
// applied would become persistent.
func (h *Handler) refuse(ctx context.Context, w *readyourwrites.Writes, v *nodeView) (reconcile.Result, error) {
	msg := "refused: the node's keyfile overlay is degraded, so changes would become persistent: " + v.degraded
	for _, pol := range v.selected {
		if err := h.reportFailing(ctx, w, v, pol.Name, msg); err != nil {
			return reconcile.Result{}, err
		}
	}
	// Nothing signals a repaired overlay (nm-overlay reset): look again.
	return reconcile.Result{RequeueAfter: degradedRetry}, nil
}

// reportFailing marks the policy Failing with msg and tells operators, once: invalid,
// conflicting, refused, or failed and waiting out its backoff.
func (h *Handler) reportFailing(ctx context.Context, w *readyourwrites.Writes, v *nodeView, name, msg string) error {
	e, err := h.enactment(ctx, w, v, name)
	if err != nil {
		return err
	}
	if TrueWith(e, shared.EnactmentFailing, msg) && e.Status.PolicyGeneration == v.generation[name] {
		return nil // reported already
	}
	h.event(v.byName[name], v.node, fmt.Errorf("%s", msg))
	SetFailing(e, msg)
	e.Status.PolicyGeneration = v.generation[name]
	return h.updateStatus(ctx, w, e)
}

// compose is what this pass applies: each selected policy at its current generation,
// unless it is held or invalid; then at the generation it last applied on this node
// (the enactment keeps that desired state), so nothing in effect is pruned because a
// newer generation waits or fails; a policy never applied here is left out. current
// names the policies applied at their current generation.
func (h *Handler) compose(v *nodeView, plan Plan, held map[string]bool) (Plan, map[string]bool) {
	ok := map[string]bool{}
	for _, name := range plan.Applied {
		ok[name] = !held[name]
	}
	current := map[string]bool{}
	var pols []Policy
	for _, pol := range v.selected {
		if ok[pol.Name] {
			current[pol.Name] = true
			pols = append(pols, pol)
			continue
		}
		if e := v.existing[pol.Name]; e != nil && len(e.Status.DesiredState.Raw) > 0 {
			pol.DesiredState = e.Status.DesiredState.Raw
			pols = append(pols, pol)
		}
	}
	return MakePlan(pols), current
}

// failureBackoff is how long a policy whose apply failed waits before it is tried again
// at the same generation: 30 s, doubling, at most 10 minutes. A change that broke a probe
// is not applied again at once (each try costs the node its network for the probes'
// duration), and other policies are applied meanwhile.
func failureBackoff(attempts int) time.Duration {
	d := 30 * time.Second
	for i := 1; i < attempts && d < 10*time.Minute; i++ {
		d *= 2
	}
	return min(d, 10*time.Minute)
}

type failure struct {
	generation int64
	attempts   int
	retryAt    time.Time
	// byProbe: the change broke a probe (cost the node its network until rolled back);
	// otherwise it did not converge, maybe for want of what another policy brings.
	byProbe bool
	// policies: the selected policies and generations when it failed.
	policies string
	message  string
}

// backoff is how long the policy at this generation must still wait after failing. A
// change that did not converge is tried again as soon as the node's policies change
// (a VLAN policy created a moment before the policy with its bond); one that broke a
// probe waits its time whatever happens.
func (h *Handler) backoff(name string, generation int64, policies string) time.Duration {
	f, ok := h.failures[name]
	if !ok || f.generation != generation || (!f.byProbe && f.policies != policies) {
		return 0
	}
	return max(time.Until(f.retryAt), 0)
}

func (h *Handler) failed(name string, generation int64, err error, policies string) {
	if h.failures == nil {
		h.failures = map[string]failure{}
	}
	f := h.failures[name]
	if f.generation != generation {
		f = failure{generation: generation}
	}
	f.attempts++
	f.retryAt = time.Now().Add(failureBackoff(f.attempts))
	f.byProbe = errors.As(err, new(probeFailure))
	f.policies = policies
	f.message = err.Error()
	h.failures[name] = f
}

// probeFailure: the apply converged, then a probe failed and it was rolled back.
type probeFailure struct{ error }

func (p probeFailure) Unwrap() error { return p.error }

// policySet names the selected policies and their generations.
func policySet(v *nodeView) string {
	var b strings.Builder
	for _, p := range v.selected {
		fmt.Fprintf(&b, "%s/%d ", p.Name, p.Generation)
	}
	return b.String()
}

func (h *Handler) succeeded(name string) { delete(h.failures, name) }

// enactment returns the policy's enactment on this node, creating it (named
// <node>.<policy>, labelled, owned by the Node) if needed.
func (h *Handler) enactment(ctx context.Context, w *readyourwrites.Writes, v *nodeView, policy string) (*v1beta1.NodeNetworkConfigurationEnactment, error) {
	if e, ok := v.existing[policy]; ok {
		return e, nil
	}
	e, err := h.createEnactment(ctx, v, policy, shared.EnactmentKey(h.NodeName, policy))
	if apierrors.IsAlreadyExists(err) {
		// Ours, created by a pass the cache has not caught up with; or another node's:
		// <node>.<policy> is ambiguous when names hold dots (node worker with policy a.x,
		// node worker.a with policy x). The name alone decides nothing: the labels do.
		taken := &v1beta1.NodeNetworkConfigurationEnactment{}
		if gerr := h.APIReader.Get(ctx, types.NamespacedName{Name: shared.EnactmentKey(h.NodeName, policy)}, taken); gerr != nil {
			return nil, gerr
		}
		if taken.Labels[shared.NodeLabel] == h.NodeName && taken.Labels[shared.PolicyLabel] == policy {
			e, err = taken, nil
		} else {
			alt := shared.EnactmentKey(h.NodeName, policy) + "-" + randomSuffix()
			ctrl.LoggerFrom(ctx).Info("enactment name taken by another node's enactment; using another name",
				"node", h.NodeName, "policy", policy, "taken", taken.Name, "takenBy", taken.Labels[shared.NodeLabel], "name", alt)
			h.warn(v.byName[policy], v.node, "EnactmentNameTaken", fmt.Errorf("enactment name %s is taken by node %q (policy %q); this node's enactment is %s",
				taken.Name, taken.Labels[shared.NodeLabel], taken.Labels[shared.PolicyLabel], alt))
			e, err = h.createEnactment(ctx, v, policy, alt)
		}
	}
	if err != nil {
		return nil, err
	}
	w.Wrote(e)
	v.existing[policy] = e
	return e, nil
}

func (h *Handler) createEnactment(ctx context.Context, v *nodeView, policy, name string) (*v1beta1.NodeNetworkConfigurationEnactment, error) {
	e := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{shared.NodeLabel: h.NodeName, shared.PolicyLabel: policy},
	}}
	if err := controllerutil.SetOwnerReference(v.node, e, h.Client.Scheme()); err != nil {
		return nil, err
	}
	return e, h.Client.Create(ctx, e)
}

// randomSuffix makes a fallback enactment name another node cannot take in advance: 8
// characters of [a-z0-9], as the admission policy expects.
func randomSuffix() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

func (h *Handler) settleStale(ctx context.Context, w *readyourwrites.Writes, v *nodeView, applyErr error) error {
	for name, e := range v.existing {
		if _, ok := v.generation[name]; ok {
			continue
		}
		if applyErr == nil {
			if err := h.Client.Delete(ctx, e); client.IgnoreNotFound(err) != nil {
				return err
			}
			w.Deleted(e)
			continue
		}
		SetFailing(e, "removing this policy's changes from the node failed: "+applyErr.Error())
		if err := h.updateStatus(ctx, w, e); err != nil {
			return err
		}
	}
	return nil
}

// setPending marks e Pending with msg, writing only when that changes something.
func (h *Handler) setPending(ctx context.Context, w *readyourwrites.Writes, e *v1beta1.NodeNetworkConfigurationEnactment, generation int64, msg string) error {
	if TrueWith(e, shared.EnactmentPending, msg) && e.Status.PolicyGeneration == generation {
		return nil // nothing changed: no write, no timestamp moved
	}
	SetPending(e, msg)
	e.Status.PolicyGeneration = generation
	return h.updateStatus(ctx, w, e)
}

func (h *Handler) updateStatus(ctx context.Context, w *readyourwrites.Writes, e *v1beta1.NodeNetworkConfigurationEnactment) error {
	if err := h.Client.Status().Update(ctx, e); err != nil {
		return err
	}
	w.Wrote(e)
	return nil
}
