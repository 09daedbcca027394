package node

import (
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/reconciler/readyourwrites"
)

// write carries out a decision's updates: each enactment's status in one patch, only when
// it changes; an enactment whose policy no longer selects the node is deleted. Each
// change is logged and each Failing one told on the policy.
func (h *Handler) write(ctx context.Context, w *readyourwrites.Writes, v *nodeView, d Decision) error {
	log := ctrl.LoggerFrom(ctx).WithValues("node", h.NodeName)
	for _, name := range slices.Sorted(maps.Keys(d.Updates)) {
		u := d.Updates[name]
		u.Captured = v.captured(name)
		if u.Delete {
			e := v.existing[name]
			if err := h.Client.Delete(ctx, e); client.IgnoreNotFound(err) != nil {
				return err
			}
			w.Deleted(e)
			log.Info("enactment deleted: the policy no longer selects the node", "policy", name)
			continue
		}
		if e, ok := v.existing[name]; ok && !u.changes(e) {
			continue
		}
		if _, err := h.patchStatus(ctx, w, v, name, u.applyTo); err != nil {
			return err
		}
		log.Info("policy status", "policy", name, "generation", u.Generation, "status", u.Condition, "message", u.Message)
		if u.Event != "" && u.Condition == shared.EnactmentFailing {
			h.warn(v.byName[name], v.node, u.Event, fmt.Errorf("%s", u.Message))
		}
	}
	return nil
}

// patchStatus changes the status of the policy's enactment (created if need be) in one
// patch, and notes the write for the pass to await.
func (h *Handler) patchStatus(ctx context.Context, w *readyourwrites.Writes, v *nodeView, policy string,
	change func(*v1beta1.NodeNetworkConfigurationEnactment)) (*v1beta1.NodeNetworkConfigurationEnactment, error) {
	e, err := h.enactment(ctx, w, v, policy)
	if err != nil {
		return nil, err
	}
	before := e.DeepCopy()
	change(e)
	if err := h.Client.Status().Patch(ctx, e, client.MergeFrom(before)); err != nil {
		return nil, err
	}
	w.Wrote(e)
	return e, nil
}

// logDecision logs what a pass decided beyond the status it writes: which policies wait
// for a rollout slot and behind whom, and a refusal while the overlay is degraded. Said
// at the default level when it is news (the status changes), else at -v 1.
func (h *Handler) logDecision(ctx context.Context, s Snapshot, d Decision) {
	log := ctrl.LoggerFrom(ctx).WithValues("node", h.NodeName)
	news := func(name string) bool {
		u, ok := d.Updates[name]
		e := s.Enactments[name]
		return ok && (e == nil || u.changes(e))
	}
	for _, name := range slices.Sorted(maps.Keys(d.Waiting)) {
		l := log.V(1)
		if news(name) {
			l = log
		}
		l.Info("waiting for a rollout slot", "policy", name, "generation", s.generation(name), "behind", d.Waiting[name])
	}
	if s.Degraded != "" {
		l := log.V(1)
		for _, p := range s.Selected {
			if news(p.Name) {
				l = log
			}
		}
		l.Info("refusing every policy: the keyfile overlay is degraded", "reason", s.Degraded, "policies", len(s.Selected))
	}
}

// warn records a Warning on the policy, related to this node, its note in the form
// "node <node>: ..." (the admission policy admits no other type or form). Success is
// told once per policy by the cluster controller, not once per node.
func (h *Handler) warn(policy *nmstatev1.NodeNetworkConfigurationPolicy, node *corev1.Node, reason string, err error) {
	if h.Events == nil || policy == nil || err == nil {
		return
	}
	h.Events.Eventf(policy, node, corev1.EventTypeWarning, reason, "Apply", "node %s: %v", h.NodeName, err)
}

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
