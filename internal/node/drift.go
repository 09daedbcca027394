package node

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/nmoverlay/nmoverlay/api/shared"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
)

// DriftAnnotation on a policy opts it in to being re-applied when what it committed is
// changed outside nmoverlay (nmcli con down, ip addr del, a profile modified over D-Bus);
// without it (or the handler's --reapply-drift) drift is reported, not undone.
const DriftAnnotation = "nmoverlay.io/drift"

// DriftReapply is DriftAnnotation's value that opts in.
const DriftReapply = "reapply"

// drift is what the handler knows of out-of-band changes, per policy in effect; the
// NodeNetworkState reporter reads it from its own goroutine.
type drift struct {
	changed atomic.Bool // NetworkManager signalled a change since the last check
	mu      sync.Mutex
	byName  map[string]string // policy -> what differs
	// suspect: when a difference was first seen, per policy. It counts as drift only once
	// it has lasted driftConfirm: right after a rollback or a restart of NetworkManager
	// the interfaces are still activating, which is not drift.
	suspect map[string]time.Time
}

// driftConfirm is how long a difference must last before it is drift.
const driftConfirm = 2 * time.Second

// Drifted lists, per policy, what differs from what it committed ("policy: diffs"),
// sorted; for the NodeNetworkState.
func (h *Handler) Drifted() []string {
	h.drift.mu.Lock()
	defer h.drift.mu.Unlock()
	var out []string
	for name, msg := range h.drift.byName {
		out = append(out, name+": "+msg)
	}
	sort.Strings(out)
	return out
}

// driftedNow is a copy of the drift reported, for the pass's snapshot.
func (h *Handler) driftedNow() map[string]string {
	h.drift.mu.Lock()
	defer h.drift.mu.Unlock()
	return maps.Clone(h.drift.byName)
}

func (h *Handler) setDrifted(name, msg string) {
	h.drift.mu.Lock()
	if msg == "" {
		delete(h.drift.byName, name)
	} else {
		if h.drift.byName == nil {
			h.drift.byName = map[string]string{}
		}
		h.drift.byName[name] = msg
	}
	h.drift.mu.Unlock()
	h.driftChanged()
}

// clearDrift forgets all drift: a committed apply verified the whole state again.
func (h *Handler) clearDrift() {
	h.drift.mu.Lock()
	had := len(h.drift.byName) > 0
	h.drift.byName = nil
	h.drift.mu.Unlock()
	if had {
		h.driftChanged()
	}
}

func (h *Handler) driftChanged() {
	if h.DriftChanged != nil {
		h.DriftChanged()
	}
}

// checkDrift compares what each policy in effect committed with the node as it is now,
// after NetworkManager signalled a change, and carries out decideDrift's decision. A
// policy that opted in (or every policy, with ReapplyDrift) is applied again in this pass
// (reapply true); the others are recorded as drifted, and the pass reports them Failing
// with what differs (Decide), until the node matches again or the next apply repairs them.
// recheck, when not 0, is when to look again: a difference not yet confirmed.
func (h *Handler) checkDrift(ctx context.Context, v *nodeView) (reapply bool, recheck time.Duration, err error) {
	if h.Show == nil || !h.drift.changed.Swap(false) {
		return false, 0, nil
	}
	current, err := h.Show(ctx)
	if err != nil {
		h.drift.changed.Store(true)
		return false, 0, err
	}
	in := driftInput{Now: time.Now(), Diffs: map[string][]string{}, Reapply: map[string]bool{}, Suspect: h.drift.suspect, Reported: h.driftedNow()}
	for name, e := range v.existing {
		if !committedIn(e, v.boot) {
			continue
		}
		diffs, err := h.Backend.Drift(e.Status.DesiredState.Raw, current)
		if err != nil {
			continue // not checkable on this node (an interface identified by a MAC address no one device shows)
		}
		in.Diffs[name] = diffs
		pol := v.byName[name]
		in.Reapply[name] = h.ReapplyDrift || (pol != nil && pol.Annotations[DriftAnnotation] == DriftReapply)
	}
	d := decideDrift(in)
	h.drift.suspect = d.Suspect
	if d.Recheck > 0 {
		h.drift.changed.Store(true)
	}
	log := ctrl.LoggerFrom(ctx).WithValues("node", h.NodeName, "boot", v.boot)
	for _, name := range slices.Sorted(maps.Keys(d.Report)) {
		msg, pol := d.Report[name], v.byName[name]
		if msg == "" {
			log.Info("drift gone: the node matches the policy again", "policy", name)
			h.setDrifted(name, "") // the pass reports it Available again
			continue
		}
		log.Info("drift: reported", "policy", name, "drift", msg)
		driftTotal.WithLabelValues("reported").Inc()
		h.setDrifted(name, msg)
		h.warn(pol, v.node, "Drift", fmt.Errorf("%s", msg))
	}
	for _, name := range d.Reapply {
		msg := driftPrefix + strings.Join(in.Diffs[name], "; ")
		log.Info("drift: re-applying", "policy", name, "drift", msg)
		driftTotal.WithLabelValues("reapplied").Inc()
		h.warn(v.byName[name], v.node, "Drift", fmt.Errorf("%s; re-applying", msg))
	}
	if len(d.Reapply) > 0 {
		h.committed = "" // the pass applies even if the desired state did not change
	}
	return len(d.Reapply) > 0, d.Recheck, nil
}

// driftInput is what one drift check sees.
type driftInput struct {
	Now time.Time
	// Diffs: for each policy in effect whose commit can be checked on this node, what
	// differs now (empty: the node matches it).
	Diffs map[string][]string
	// Suspect: when a difference was first seen, per policy, from the checks before.
	Suspect map[string]time.Time
	// Reported: the drift reported now, policy -> message.
	Reported map[string]string
	// Reapply: the policies that opted in to being re-applied.
	Reapply map[string]bool
}

// driftDecision is what a drift check does.
type driftDecision struct {
	// Suspect replaces the suspects: the differences not gone, each with when it was first seen.
	Suspect map[string]time.Time
	// Report: the drift reports that change, policy -> message ("": the drift is gone).
	Report map[string]string
	// Reapply: the policies to apply again in this pass, sorted.
	Reapply []string
	// Recheck: when to look again (0: no need), for a difference not yet confirmed.
	Recheck time.Duration
}

// decideDrift decides a drift check. A difference counts as drift once it has lasted
// driftConfirm (right after a rollback or a restart of NetworkManager the interfaces are
// still activating, which is not drift); then a policy that opted in is re-applied and
// another is reported, once per message. A policy that matches again has its report
// cleared.
func decideDrift(in driftInput) driftDecision {
	d := driftDecision{Suspect: map[string]time.Time{}, Report: map[string]string{}}
	for _, name := range slices.Sorted(maps.Keys(in.Diffs)) {
		diffs := in.Diffs[name]
		if len(diffs) == 0 {
			if in.Reported[name] != "" {
				d.Report[name] = ""
			}
			continue
		}
		first, ok := in.Suspect[name]
		if !ok {
			first = in.Now
		}
		d.Suspect[name] = first
		if wait := driftConfirm - in.Now.Sub(first); wait > 0 {
			if d.Recheck == 0 || wait < d.Recheck {
				d.Recheck = wait
			}
			continue
		}
		if in.Reapply[name] {
			d.Reapply = append(d.Reapply, name)
			continue
		}
		if msg := driftPrefix + strings.Join(diffs, "; "); in.Reported[name] != msg {
			d.Report[name] = msg
		}
	}
	return d
}

// driftPrefix begins what differs on a drifted policy, and its enactment's message.
const driftPrefix = "changed outside nmoverlay: "

// committedIn says whether e's recorded desired state is committed on the node in boot:
// Available, or Failing only because it drifted since (still what nmoverlay committed).
func committedIn(e *v1beta1.NodeNetworkConfigurationEnactment, boot string) bool {
	if e.Status.BootID != boot || len(e.Status.DesiredState.Raw) == 0 {
		return false
	}
	if IsTrue(e, shared.EnactmentAvailable, "") {
		return true
	}
	c := meta.FindStatusCondition(e.Status.Conditions, shared.EnactmentFailing)
	return c != nil && c.Status == metav1.ConditionTrue && strings.HasPrefix(c.Message, driftPrefix)
}

// driftMessage is the enactment's Failing message for a drifted policy.
func driftMessage(msg string) string {
	return msg + " (annotate the policy " + DriftAnnotation + "=" + DriftReapply + " to have it re-applied; the next apply on this node repairs it too)"
}
