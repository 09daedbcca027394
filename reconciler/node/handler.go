package node

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
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

	started time.Time // for the boot re-convergence metric
}

// pendingRetry is how often a node waiting for a rollout slot asks again.
const pendingRetry = 2 * time.Second

// degradedRetry is how often a node refusing policies checks its overlay again.
const degradedRetry = 30 * time.Second

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
	return ctrl.NewControllerManagedBy(mgr).
		Named("node-handler").
		For(&corev1.Node{}, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&nmstatev1.NodeNetworkConfigurationPolicy{}, toNode, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Its own writes do not wake it; a deleted enactment (by hand, or a policy gone) does.
		Watches(&v1beta1.NodeNetworkConfigurationEnactment{}, toNode, builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(event.CreateEvent) bool { return false },
			UpdateFunc:  func(event.UpdateEvent) bool { return false },
			DeleteFunc:  func(event.DeleteEvent) bool { return true },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		Complete(h)
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

func (h *Handler) reconcile(ctx context.Context, w *readyourwrites.Writes) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := h.Client.Get(ctx, types.NamespacedName{Name: h.NodeName}, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	policies := &nmstatev1.NodeNetworkConfigurationPolicyList{}
	if err := h.Client.List(ctx, policies); err != nil {
		return reconcile.Result{}, err
	}
	enactments := &v1beta1.NodeNetworkConfigurationEnactmentList{}
	if err := h.Client.List(ctx, enactments, client.MatchingLabels{shared.NodeLabel: h.NodeName}); err != nil {
		return reconcile.Result{}, err
	}
	boot, err := h.BootID()
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("reading the boot ID: %w", err)
	}
	degraded, err := h.Degraded()
	if err != nil {
		return reconcile.Result{}, err
	}
	if degraded != "" {
		overlayDegraded.Set(1)
	} else {
		overlayDegraded.Set(0)
	}

	var selected []Policy
	generation := map[string]int64{}
	byName := map[string]*nmstatev1.NodeNetworkConfigurationPolicy{}
	for i, p := range policies.Items {
		byName[p.Name] = &policies.Items[i]
		pol := Policy{Name: p.Name, Generation: p.Generation, NodeSelector: p.Spec.NodeSelector,
			Capture: p.Spec.Capture, DesiredState: p.Spec.DesiredState.Raw}
		if pol.Selects(node.Labels) {
			selected = append(selected, pol)
			generation[p.Name] = p.Generation
		}
	}
	sort.Slice(selected, func(i, j int) bool { return selected[i].Name < selected[j].Name })
	existing := map[string]*v1beta1.NodeNetworkConfigurationEnactment{}
	for i := range enactments.Items {
		e := &enactments.Items[i]
		existing[e.Labels[shared.PolicyLabel]] = e
	}
	plan := MakePlan(selected)

	if h.upToDate(plan, generation, existing, boot, degraded) {
		return reconcile.Result{}, nil
	}

	if degraded != "" {
		for _, pol := range selected {
			e, err := h.enactment(ctx, w, node, pol.Name, existing)
			if err != nil {
				return reconcile.Result{}, err
			}
			msg := "refused: the node's keyfile overlay is degraded, so changes would become persistent: " + degraded
			if c := meta.FindStatusCondition(e.Status.Conditions, shared.EnactmentFailing); c != nil && c.Status == metav1.ConditionTrue &&
				c.Message == msg && e.Status.PolicyGeneration == pol.Generation {
				continue // refused already, for the same reason
			}
			h.event(byName[pol.Name], node, fmt.Errorf("%s", msg))
			SetFailing(e, msg)
			e.Status.PolicyGeneration = pol.Generation
			if err := h.updateStatus(ctx, w, e); err != nil {
				return reconcile.Result{}, err
			}
		}
		// Nothing signals a repaired overlay (nm-overlay reset): look again.
		return reconcile.Result{RequeueAfter: degradedRetry}, nil
	}

	// A new generation of a policy takes a rollout slot first; re-applying after a boot
	// does not (the policy was rolled out already).
	var rollout []string
	// inEffect: already applied in this boot at this generation; a failed transaction
	// (rolled back) leaves these in place, so they stay Available.
	inEffect := map[string]bool{}
	newBoot := false // a policy applied before is re-applied because the node rebooted
	for _, name := range plan.Applied {
		e, ok := existing[name]
		inEffect[name] = ok && e.Status.PolicyGeneration == generation[name] && e.Status.BootID == boot &&
			IsTrue(e, shared.EnactmentAvailable, "")
		newBoot = newBoot || (ok && e.Status.BootID != "" && e.Status.BootID != boot)
		settled := ok && e.Status.PolicyGeneration == generation[name] &&
			(IsTrue(e, shared.EnactmentAvailable, "") || IsTrue(e, shared.EnactmentFailing, ""))
		if !settled { // this generation was never applied here (new, or still waiting)
			rollout = append(rollout, name)
		}
	}
	waiting, queued, err := h.claimSlots(ctx, w, node, rollout, byName, existing)
	if err != nil {
		return reconcile.Result{}, err
	}
	var requeue time.Duration
	if len(waiting)+len(queued) > 0 {
		requeue = pendingRetry
		held := map[string]string{}
		holdAll := false
		for _, m := range []map[string]string{waiting, queued} {
			for name, why := range m {
				held[name] = why
				// Converged in this boot (at an older generation): that generation is in
				// effect, and applying without the policy would remove it.
				holdAll = holdAll || existing[name].Status.BootID == boot
			}
		}
		if holdAll {
			// Nothing is applied until every new generation has a slot, and the claims are
			// given back: two nodes never hold a slot each while waiting for the other's.
			var blocked []string
			for name := range held {
				blocked = append(blocked, name)
			}
			sort.Strings(blocked)
			for _, name := range rollout {
				if _, ok := held[name]; !ok {
					held[name] = "held back until " + strings.Join(blocked, ", ") + " get one"
				}
			}
		}
		for name, why := range held {
			if _, inQueue := queued[name]; inQueue && !holdAll {
				continue // the claim stands as this node's place in the queue
			}
			if err := h.setPending(ctx, w, existing[name], generation[name], "waiting for a rollout slot: "+why); err != nil {
				return reconcile.Result{}, err
			}
		}
		if holdAll {
			return reconcile.Result{RequeueAfter: requeue}, nil
		}
		// Nothing of the held policies is in effect on this node: apply the others now.
		var rest []Policy
		for _, pol := range selected {
			if _, ok := held[pol.Name]; !ok {
				rest = append(rest, pol)
			}
		}
		plan = MakePlan(rest)
	}

	// Re-applying after a boot or after a failure writes no Progressing: only a claim
	// does, so a node re-converging after a reboot never holds another node's slot.
	applyErr := h.apply(ctx, plan.Apply)
	if applyErr == nil && newBoot {
		bootReconvergence.Set(time.Since(h.started).Seconds())
	}
	// Enactments of policies that no longer select this node go once the engine has
	// pruned what they applied; if that failed, they stay and say why.
	if err := h.settleStale(ctx, w, existing, generation, applyErr); err != nil {
		return reconcile.Result{}, err
	}
	for _, name := range plan.Applied {
		if inEffect[name] {
			continue // applied before in this boot; rolled back to, or applied again, it still is
		}
		e := existing[name]
		h.event(byName[name], node, applyErr)
		if applyErr != nil {
			SetFailing(e, applyErr.Error())
		} else {
			SetAvailable(e, "applied in boot "+boot)
			e.Status.BootID = boot
		}
		if err := h.updateStatus(ctx, w, e); err != nil {
			return reconcile.Result{}, err
		}
	}
	for _, pol := range selected {
		msg, failed := plan.Failed[pol.Name]
		if !failed {
			continue
		}
		e, err := h.enactment(ctx, w, node, pol.Name, existing)
		if err != nil {
			return reconcile.Result{}, err
		}
		if c := meta.FindStatusCondition(e.Status.Conditions, shared.EnactmentFailing); c != nil && c.Status == metav1.ConditionTrue &&
			c.Message == msg && e.Status.PolicyGeneration == pol.Generation {
			continue // reported already
		}
		h.event(byName[pol.Name], node, fmt.Errorf("%s", msg))
		SetFailing(e, msg)
		e.Status.PolicyGeneration = pol.Generation
		if err := h.updateStatus(ctx, w, e); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{RequeueAfter: requeue}, applyErr
}

// event tells operators on the policy that it failed on this node. Success is told once
// per policy by the cluster controller, not once per node.
func (h *Handler) event(policy *nmstatev1.NodeNetworkConfigurationPolicy, node *corev1.Node, err error) {
	if h.Events == nil || policy == nil || err == nil {
		return
	}
	h.Events.Eventf(policy, node, corev1.EventTypeWarning, shared.ReasonFailedToConfigure, "Apply", "node %s: %v", h.NodeName, err)
}

// apply applies desired, probes the node and commits, or rolls back when a probe that
// passed before the apply fails after it.
func (h *Handler) apply(ctx context.Context, desired state.State) error {
	start := time.Now()
	result := "failed"
	defer func() { applyDuration.WithLabelValues(result).Observe(time.Since(start).Seconds()) }()
	healthy := h.Probes.Baseline(ctx)
	tx, err := h.Engine.Apply(ctx, desired)
	if err != nil {
		rollbacks.WithLabelValues("engine").Inc() // the engine rolls back what did not converge
		return err
	}
	if err := h.Probes.Verify(ctx, healthy); err != nil {
		rollbacks.WithLabelValues("probe").Inc()
		if rbErr := tx.Rollback(ctx); rbErr != nil {
			return fmt.Errorf("%w; ROLLBACK FAILED: %v", err, rbErr)
		}
		result = "rolled_back"
		return fmt.Errorf("%w; rolled back", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	result = "committed"
	return nil
}

// upToDate: every selected policy's enactment reports the current generation, Available
// in this boot (or Failing with the same reason), and no enactment is left for a policy
// that does not select the node.
func (h *Handler) upToDate(plan Plan, generation map[string]int64, existing map[string]*v1beta1.NodeNetworkConfigurationEnactment, boot, degraded string) bool {
	if degraded != "" {
		return false
	}
	for name := range existing {
		if _, ok := generation[name]; !ok {
			return false
		}
	}
	for _, name := range plan.Applied {
		e, ok := existing[name]
		if !ok || e.Status.PolicyGeneration != generation[name] || e.Status.BootID != boot ||
			!IsTrue(e, shared.EnactmentAvailable, "") {
			return false
		}
	}
	for name, msg := range plan.Failed {
		e, ok := existing[name]
		if !ok || e.Status.PolicyGeneration != generation[name] || !IsTrue(e, shared.EnactmentFailing, "") {
			return false
		}
		if c := meta.FindStatusCondition(e.Status.Conditions, shared.EnactmentFailing); c == nil || c.Message != msg {
			return false
		}
	}
	return true
}

// enactment returns the policy's enactment on this node, creating it (named
// <node>.<policy>, labelled, owned by the Node) if needed.
func (h *Handler) enactment(ctx context.Context, w *readyourwrites.Writes, node *corev1.Node, policy string, existing map[string]*v1beta1.NodeNetworkConfigurationEnactment) (*v1beta1.NodeNetworkConfigurationEnactment, error) {
	if e, ok := existing[policy]; ok {
		return e, nil
	}
	e := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{
		Name:   h.NodeName + "." + policy,
		Labels: map[string]string{shared.NodeLabel: h.NodeName, shared.PolicyLabel: policy},
	}}
	if err := controllerutil.SetOwnerReference(node, e, h.Client.Scheme()); err != nil {
		return nil, err
	}
	if err := h.Client.Create(ctx, e); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	w.Wrote(e)
	existing[policy] = e
	return e, nil
}

func (h *Handler) settleStale(ctx context.Context, w *readyourwrites.Writes, existing map[string]*v1beta1.NodeNetworkConfigurationEnactment, generation map[string]int64, applyErr error) error {
	for name, e := range existing {
		if _, ok := generation[name]; ok {
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
	if c := meta.FindStatusCondition(e.Status.Conditions, shared.EnactmentPending); c != nil && c.Status == metav1.ConditionTrue &&
		c.Message == msg && e.Status.PolicyGeneration == generation {
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

// claimSlots claims a rollout slot for each new generation in rollout and returns why
// the node must wait, if it must. A slot is a Progressing enactment of the policy's
// current generation: no counter is kept anywhere, so nothing can leak. A claim is made
// only when a slot looks free, so a waiting node does not flap. Two nodes may claim the
// last slot at once, so the claims are read again and ranked by time: a node that lost
// keeps its claim as its place in the queue, and goes when the claims ahead are done,
// without writing again. waiting says why unclaimed policies wait, queued why claimed
// ones do.
func (h *Handler) claimSlots(ctx context.Context, w *readyourwrites.Writes, node *corev1.Node, rollout []string,
	byName map[string]*nmstatev1.NodeNetworkConfigurationPolicy, existing map[string]*v1beta1.NodeNetworkConfigurationEnactment) (waiting, queued map[string]string, err error) {
	if len(rollout) == 0 {
		return nil, nil, nil
	}
	waiting, queued = map[string]string{}, map[string]string{}
	// One claim time for the pass: a node's claims rank the same in every policy's queue.
	now := metav1.Now()
	var before *rolloutView
	var claimed []*v1beta1.NodeNetworkConfigurationEnactment
	for _, name := range rollout {
		var e *v1beta1.NodeNetworkConfigurationEnactment
		e, err = h.enactment(ctx, w, node, name, existing)
		if err != nil {
			return nil, nil, err
		}
		if IsTrue(e, shared.EnactmentProgressing, "") && e.Status.PolicyGeneration == byName[name].Generation {
			claimed = append(claimed, e) // claimed in an earlier pass
			continue
		}
		if before == nil {
			if before, err = h.readRollout(ctx, rollout); err != nil {
				return nil, nil, err
			}
		}
		if full, why := before.slotsFull(byName[name], h.NodeName, nil, h.slotTimeout()); full {
			waiting[name] = why
			continue
		}
		SetProgressing(e, "rollout slot claimed by "+h.NodeName)
		meta.FindStatusCondition(e.Status.Conditions, shared.EnactmentProgressing).LastTransitionTime = now
		e.Status.PolicyGeneration = byName[name].Generation
		if err := h.updateStatus(ctx, w, e); err != nil {
			return nil, nil, err
		}
		claimed = append(claimed, e)
	}
	if len(claimed) == 0 {
		return waiting, nil, nil
	}
	after, err := h.readRollout(ctx, rollout)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range claimed {
		if full, why := after.slotsFull(byName[e.Labels[shared.PolicyLabel]], h.NodeName, e, h.slotTimeout()); full {
			queued[e.Labels[shared.PolicyLabel]] = why
		}
	}
	return waiting, queued, nil
}

func (h *Handler) slotTimeout() time.Duration {
	if h.SlotTimeout <= 0 {
		return 5 * time.Minute
	}
	return h.SlotTimeout
}

// rolloutView is the cluster as slot decisions see it, read uncached (the decision must
// see the latest claims) in two requests however many policies roll out at once.
type rolloutView struct {
	nodes  []corev1.Node
	ready  map[string]bool
	claims map[string][]v1beta1.NodeNetworkConfigurationEnactment // by policy
}

func (h *Handler) readRollout(ctx context.Context, policies []string) (*rolloutView, error) {
	nodes := &corev1.NodeList{}
	if err := h.APIReader.List(ctx, nodes); err != nil {
		return nil, err
	}
	v := &rolloutView{nodes: nodes.Items, ready: map[string]bool{}, claims: map[string][]v1beta1.NodeNetworkConfigurationEnactment{}}
	for _, n := range nodes.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				v.ready[n.Name] = true
			}
		}
	}
	inRollout, err := labels.NewRequirement(shared.PolicyLabel, selection.In, policies)
	if err != nil {
		return nil, err
	}
	claims := &v1beta1.NodeNetworkConfigurationEnactmentList{}
	if err := h.APIReader.List(ctx, claims, client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*inRollout)}); err != nil {
		return nil, err
	}
	for _, e := range claims.Items {
		v.claims[e.Labels[shared.PolicyLabel]] = append(v.claims[e.Labels[shared.PolicyLabel]], e)
	}
	return v, nil
}

// slotsFull decides whether self must wait to apply a new generation of policy. Another
// node's claim counts only while that node is Ready and the claim is younger than
// timeout (a rebooting node or a dead handler frees its slot). With own (self's claim,
// just written), claims are ranked by time, then node name, and the first maxUnavailable
// go; without it, the question is whether any slot is free at all.
func (v *rolloutView) slotsFull(policy *nmstatev1.NodeNetworkConfigurationPolicy, self string, own *v1beta1.NodeNetworkConfigurationEnactment, timeout time.Duration) (bool, string) {
	matching := 0
	sel := Policy{NodeSelector: policy.Spec.NodeSelector}
	for _, n := range v.nodes {
		if sel.Selects(n.Labels) {
			matching++
		}
	}
	max := maxUnavailable(policy.Spec.MaxUnavailable, matching)
	type slot struct {
		node  string
		since time.Time
	}
	var slots []slot
	for _, e := range v.claims[policy.Name] {
		nodeName := e.Labels[shared.NodeLabel]
		c := meta.FindStatusCondition(e.Status.Conditions, shared.EnactmentProgressing)
		if nodeName == self || e.Status.PolicyGeneration != policy.Generation || c == nil ||
			c.Status != metav1.ConditionTrue || !v.ready[nodeName] || time.Since(c.LastTransitionTime.Time) > timeout {
			continue
		}
		slots = append(slots, slot{nodeName, c.LastTransitionTime.Time})
	}
	// No count of the slots held: it changes with every claim, and a Pending enactment is
	// rewritten only when its message changes.
	why := fmt.Sprintf("%s: %d of %d nodes may apply it at once", policy.Name, max, matching)
	if own == nil {
		return len(slots) >= max, why
	}
	mine := slot{self, meta.FindStatusCondition(own.Status.Conditions, shared.EnactmentProgressing).LastTransitionTime.Time}
	ahead := 0
	for _, s := range slots {
		if s.since.Before(mine.since) || (s.since.Equal(mine.since) && s.node < mine.node) {
			ahead++
		}
	}
	return ahead >= max, why
}

// maxUnavailable resolves the policy's maxUnavailable (default "50%", rounded up, at least 1).
func maxUnavailable(v *intstr.IntOrString, matching int) int {
	val := intstr.FromString("50%")
	if v != nil {
		val = *v
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&val, matching, true)
	if err != nil || n < 1 {
		return 1
	}
	return n
}
