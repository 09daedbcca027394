package node

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/readyourwrites"
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
		e, ok := v.existing[name]
		if !ok {
			// Not granted a slot yet (a refusal while the overlay is degraded, an invalid
			// policy): said once the controller creates the enactment.
			log.V(1).Info("no enactment yet to report on", "policy", name, "status", u.Condition, "message", u.Message)
			continue
		}
		if !u.changes(e) {
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

// patchStatus changes the status of the policy's enactment in one patch (a merge patch of
// what changed: enactments have no status subresource, and the admission policy lets the
// handler change nothing else), and notes the write for the pass to await.
func (h *Handler) patchStatus(ctx context.Context, w *readyourwrites.Writes, v *nodeView, policy string,
	change func(*v1beta1.NodeNetworkConfigurationEnactment)) (*v1beta1.NodeNetworkConfigurationEnactment, error) {
	e, err := v.enactment(policy)
	if err != nil {
		return nil, err
	}
	before := e.DeepCopy()
	change(e)
	if err := h.Client.Patch(ctx, e, client.MergeFrom(before)); err != nil {
		return nil, err
	}
	w.Wrote(e)
	return e, nil
}

// logDecision logs what a pass decided beyond the status it writes: which policies wait
// for a rollout slot, and a refusal while the overlay is degraded. Said at the default
// level when it is news (a generation's first wait in this process, a status that
// changes), else at -v 1.
func (h *Handler) logDecision(ctx context.Context, s Snapshot, d Decision) {
	log := ctrl.LoggerFrom(ctx).WithValues("node", h.NodeName)
	news := func(name string) bool {
		u, ok := d.Updates[name]
		e := s.Enactments[name]
		return ok && (e == nil || u.changes(e))
	}
	for _, name := range d.Waiting {
		e := s.Enactments[name]
		aborted := e != nil && e.Status.PolicyGeneration == s.generation(name) && IsTrue(e, shared.EnactmentAborted, "")
		said := fmt.Sprintf("%d/%t", s.generation(name), aborted)
		l := log.V(1)
		if h.waitLogged[name] != said {
			l = log
			if h.waitLogged == nil {
				h.waitLogged = map[string]string{}
			}
			h.waitLogged[name] = said
		}
		if aborted {
			l.Info("not applying: the rollout of this generation was aborted (it failed on another node)", "policy", name,
				"generation", s.generation(name))
			continue
		}
		l.Info("waiting for the cluster controller to grant a rollout slot", "policy", name, "generation", s.generation(name))
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

// enactment returns the policy's enactment on this node. The cluster controller creates
// it when it grants the node its first rollout slot for the policy; until then the node
// has nothing to report on it (the policy's status says who waits).
func (v *nodeView) enactment(policy string) (*v1beta1.NodeNetworkConfigurationEnactment, error) {
	if e, ok := v.existing[policy]; ok {
		return e, nil
	}
	return nil, fmt.Errorf("policy %s has no enactment on this node yet: the cluster controller creates it with the node's rollout slot", policy)
}
