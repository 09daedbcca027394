package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/nmoverlay/nmoverlay/internal/backend"
	"github.com/nmoverlay/nmoverlay/internal/probe"
)

// apply applies desired, probes the node and commits, or rolls back when a probe that
// passed before the apply fails after it. When NetworkManager cannot roll back (it
// restarted and lost the checkpoint) or cannot commit, the last committed state is
// applied again at once, so the node never stays on a change nobody committed.
func (h *Handler) apply(ctx context.Context, v *nodeView, policies []string, desired backend.Desired) (err error) {
	if h.Transactions != nil {
		defer h.Transactions.Begin()()
	}
	start := time.Now()
	result := "failed"
	log := ctrl.LoggerFrom(ctx).WithValues("node", h.NodeName, "boot", v.boot, "policies", policies)
	// Where the time went: the probes before the change, the change itself (activation,
	// DHCP leases included), the probes after it, and the commit.
	var phases []any
	phase := func(name string, since time.Time) time.Time {
		now := time.Now()
		phases = append(phases, name, now.Sub(since).Round(time.Millisecond).String())
		return now
	}
	defer func() {
		took := time.Since(start)
		applyDuration.WithLabelValues(result).Observe(took.Seconds())
		if err == nil {
			log.Info("applied", append([]any{"duration", took.Round(time.Millisecond).String()}, phases...)...)
		} else {
			log.Info("not applied", append([]any{"reason", err.Error(), "duration", took.Round(time.Millisecond).String()}, phases...)...)
		}
	}()
	log.V(1).Info("applying", "backend", h.Backend.Name())
	healthy := h.baseline(ctx)
	at := phase("probesBefore", start)
	tx, err := h.Backend.Apply(ctx, desired)
	at = phase("change", at)
	if err != nil {
		if backend.NothingChanged(err) {
			return err
		}
		rollbacks.WithLabelValues("engine").Inc() // the backend rolled back what did not converge (the label keeps its name: dashboards use it)
		h.keepProbes(healthy)
		var applyErr *backend.ApplyError
		if errors.As(err, &applyErr) && applyErr.RollbackErr != nil {
			return h.restored(ctx, v, err)
		}
		return err
	}
	err = h.Probes.Verify(ctx, healthy)
	at = phase("probesAfter", at)
	if err != nil {
		rollbacks.WithLabelValues("probe").Inc()
		h.keepProbes(healthy)
		if rbErr := tx.Rollback(ctx); rbErr != nil {
			return probeFailure{h.restored(ctx, v, fmt.Errorf("%w; ROLLBACK FAILED: %v", err, rbErr))}
		}
		result = "rolled_back"
		return probeFailure{fmt.Errorf("%w; rolled back", err)}
	}
	err = tx.Commit(ctx)
	phase("commit", at)
	if err != nil {
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
	healthy := h.Probes.BaselineKnowing(ctx, func(name string) bool { return h.failedBaseline[name] })
	in := map[string]bool{}
	for _, p := range healthy {
		in[p.Name()] = true
	}
	h.failedBaseline = map[string]bool{}
	for _, p := range h.Probes.Probes {
		h.failedBaseline[p.Name()] = !in[p.Name()]
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
	tx, err := h.Backend.Apply(ctx, last)
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("restored the last committed state", "node", h.NodeName, "after", h.unrestored)
	h.unrestored = ""
	h.last.boot, h.last.state = v.boot, last
	h.committed = commitKey(v.boot, Composition{Apply: last})
	return nil
}

// lastCommitted is the state last committed on the node in this boot: this process's own
// record, or, after a restart, what the enactments Available in this boot applied
// (status.desiredState); in a new boot, nothing (the persistent profiles).
func (h *Handler) lastCommitted(v *nodeView) backend.Desired {
	if h.last.boot == v.boot {
		return h.last.state
	}
	committed, _ := committedInBoot(h.Backend, v.existing, v.boot)
	return committed.Apply
}

// probeFailure: the apply converged, then a probe failed and it was rolled back.
type probeFailure struct{ error }

func (p probeFailure) Unwrap() error { return p.error }
