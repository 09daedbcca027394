package node

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/readyourwrites"
	"github.com/nmoverlay/nmoverlay/internal/rebootgate"
)

// RebootGate has the handler lift its own node's reboot gate (spec.rebootGate: Taint), so
// that a controller that is down never leaves the node tainted: at once when every policy
// is Available in the node's boot, and Grace after the controller would have on a failure
// or the timeout (rebootgate.Lift). The handler never starts a gate.
type RebootGate struct {
	// Timeout is the controller's (rebootgate.DefaultTimeout when 0).
	Timeout time.Duration
	// Grace is how long the controller is given first (rebootgate.DefaultGrace when 0).
	Grace time.Duration
}

// gateConflictRetry: a lift whose patch met a newer Node (the controller lifting it too,
// the kubelet) is decided again this soon.
const gateConflictRetry = 200 * time.Millisecond

// liftGate lifts the node's gate if it is time, after the pass's writes (v holds the
// enactments as written), in one patch conditional on the Node's resource version (its
// taints are one list: a taint added since the pass read the Node is never dropped). It
// returns when to look again.
func (h *Handler) liftGate(ctx context.Context, w *readyourwrites.Writes, v *nodeView) (time.Duration, error) {
	g := h.RebootGate
	if g == nil {
		return 0, nil
	}
	view := rebootgate.View{Node: v.node, Enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{}, Now: time.Now(), Timeout: g.Timeout}
	for _, p := range v.selected {
		view.Selected = append(view.Selected, rebootgate.Policy{Name: p.Name, Generation: p.Generation})
		if e := v.existing[p.Name]; e != nil {
			view.Enactments[p.Name] = e
		}
	}
	grace := g.Grace
	if grace <= 0 {
		grace = rebootgate.DefaultGrace
	}
	d := rebootgate.Lift(view, grace)
	if !d.Changes() {
		return d.Recheck, nil
	}
	n := v.node.DeepCopy()
	d.ApplyTo(n)
	if err := h.Client.Patch(ctx, n, client.MergeFromWithOptions(v.node, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return gateConflictRetry, nil
		}
		return 0, err
	}
	w.Wrote(n)
	log := ctrl.LoggerFrom(ctx).WithValues("node", h.NodeName, "boot", d.Boot)
	switch d.Outcome {
	case rebootgate.Converged:
		log.Info("reboot gate lifted: every policy is Available in the node's new boot")
	case rebootgate.Failed, rebootgate.TimedOut:
		// The controller, when it runs, lifts it first and tells it on the Node; a failure
		// is told on its policy by write either way.
		log.Info("reboot gate lifted without the node's policies; the cluster controller did not lift it", "outcome", d.Outcome,
			"policy", d.Policy, "message", d.Message)
	case rebootgate.Cleared:
		log.Info("reboot gate: what was left of an earlier gate is removed", "removed", d.Remove, "untainted", d.Untaint)
	}
	return d.Recheck, nil
}
