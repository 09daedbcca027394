package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/nmoverlay/nmoverlay/api/shared"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/backend"
)

// This file is the handler's decision core: pure functions from what a pass read (a
// Snapshot) to what it does (a Decision). handler.go is the I/O around them: it reads,
// calls Decide, applies, calls Settle, and writes each enactment's status once.

// Snapshot is everything one pass decides on, read before it writes anything.
type Snapshot struct {
	Node string
	Boot string
	// Degraded is why the node's keyfile overlay is not in use, or "".
	Degraded string
	Now      time.Time
	// Selected are the policies selecting the node, sorted by name.
	Selected []Policy
	// Enactments are this node's enactments, by policy.
	Enactments map[string]*v1beta1.NodeNetworkConfigurationEnactment
	// Failures are the applies that failed in this process, by policy.
	Failures map[string]Failure
	// Drifted is, per policy in effect, what was changed outside nmoverlay and is reported
	// (not re-applied).
	Drifted map[string]string
	// Reapply: drift is to be undone, so the pass applies even if nothing changed.
	Reapply bool
	// Committed is the key (commitKey) of the state last committed in this process.
	Committed string
	// backend.Schema is the backend's schema; nil is nmstate's (backend.NMState).
	Schema backend.Schema
}

func (s Snapshot) schema() backend.Schema {
	if s.Schema == nil {
		return backend.NMState{}
	}
	return s.Schema
}

// Failure is an apply that failed, kept in memory: a restarted handler tries once at once.
type Failure struct {
	Generation int64
	// RetryAt ends the backoff (client-go's flowcontrol.Backoff, keyed by policy and
	// generation).
	RetryAt time.Time
	// ByProbe: the change broke a probe (cost the node its network until rolled back);
	// otherwise it did not converge, maybe for want of what another policy brings.
	ByProbe bool
	// Policies: the selected policies and generations when it failed (policySet).
	Policies string
	Message  string
}

// Update is the status one enactment is to have after the pass.
type Update struct {
	// Condition is the one True condition type; its message is Message.
	Condition  string
	Message    string
	Generation int64
	// Boot and DesiredState: what an Available policy committed, and in which boot.
	Boot         string
	DesiredState []byte
	// Event is the reason of a Warning event on the policy when the update is written.
	Event string
	// Delete: the policy no longer selects the node; its enactment goes.
	Delete bool
	// Captured: the results of the policy's captures on this node, kept on its enactment.
	Captured map[string]v1beta1.CapturedState
}

// Decision is what a pass does.
type Decision struct {
	// Composed is the state the pass stands for; Apply says to hand it to the backend: it
	// differs from the last committed one.
	Composed Composition
	Apply    bool
	// AsWritten is the selected policies composed as written; Current names those composed at their
	// current generation; InEffect those applied in this boot at this generation.
	AsWritten Composition
	Current   map[string]bool
	InEffect  map[string]bool
	// Settle: the pass reached the point where the result of the apply (or of no apply:
	// nothing to change) is reported; false when it only refuses.
	Settle bool
	// NewBoot: some enactment was applied in an earlier boot; this pass re-converges.
	NewBoot bool
	Updates map[string]Update
	// Waiting names the policies whose new generation waits for a rollout slot, sorted.
	Waiting []string
	// Failed and Succeeded are the apply's outcome per policy, for the failure history.
	Failed    map[string]Failure
	Succeeded []string
	// Requeue is when to look again (0: on the next event); Jitter spreads it.
	Requeue time.Duration
	Jitter  bool
}

// Timings of the passes that come back by themselves.
const (
	// degradedRetry: a node refusing policies checks its overlay again.
	degradedRetry = 30 * time.Second
	// busyRetry: a node waiting for another tool's checkpoint looks again.
	busyRetry = 2 * time.Second
	// restoreRetry: a node that could not restore its last committed state tries again
	// (NetworkManager may be restarting).
	restoreRetry = 2 * time.Second
	// captureRetry: a policy whose captures found nothing on the node is evaluated again
	// (an LLDP neighbour not heard yet, an uplink not up yet).
	captureRetry = 30 * time.Second
	// at once: another pass right after this one (innocents to retry).
	atOnce = time.Millisecond
)

// Decide decides a pass from its snapshot: refuse while the overlay is degraded; nothing
// when every enactment is up to date; else hold the new generations that wait for a
// rollout slot or a backoff, and compose the state to apply.
func Decide(s Snapshot) Decision {
	d := Decision{Updates: map[string]Update{}}
	if s.Degraded != "" {
		for _, p := range s.Selected {
			d.fail(s, p.Name, shared.MessageRefusedDegraded+s.Degraded)
		}
		d.Requeue = degradedRetry // the marker's removal wakes the handler; this is the fallback
		return d
	}
	d.AsWritten = Compose(s.schema(), s.Selected)
	for _, p := range s.Selected {
		if p.CaptureRetry {
			d.requeue(captureRetry, true) // a capture that found nothing yet may find it later
		}
	}
	d.reportDrift(s)
	if !s.Reapply && upToDate(s, d.AsWritten) && !committedOtherwise(s, d.AsWritten) {
		return d
	}
	var rollout []string
	d.InEffect, rollout, d.NewBoot = classify(s, d.AsWritten)
	held := map[string]bool{}
	for _, name := range rollout {
		if !granted(s.Enactments[name], s.generation(name)) {
			// No request and no write while it waits: the grant is an event on the
			// enactment, which the handler watches.
			held[name] = true
			d.Waiting = append(d.Waiting, name)
			if e := s.Enactments[name]; e != nil && e.Status.PolicyGeneration == s.generation(name) &&
				shared.RefusedWhileDegraded(e.Status.Conditions) {
				// Its refusal while the overlay was degraded is withdrawn: it stopped the
				// rollout, which would otherwise never grant the node the slot it waits for.
				d.set(name, Update{Condition: shared.EnactmentPending, Message: shared.MessagePending, Generation: s.generation(name)})
			}
		}
	}
	for _, name := range d.AsWritten.Applied {
		if wait := untilRetry(s, name); wait > 0 && !d.InEffect[name] {
			d.fail(s, name, s.Failures[name].Message) // said already, unless its write failed
			held[name] = true
			d.requeue(wait, false)
		}
	}
	d.Composed, d.Current = compose(s, d.AsWritten, held)
	if key := commitKey(s.Boot, d.Composed); key != committedKey(s) {
		// The backend is idempotent, but a pass that changes nothing (a retry that leaves
		// a failed policy out, a restarted handler finding its state in effect) need not
		// cost a transaction, a checkpoint and the probes.
		d.Apply = true
	}
	d.Settle = true
	return d
}

// Settle decides what the pass reports once the backend answered (applyErr; nil also when
// nothing was applied): Available or Failing for each policy applied anew, Failing for the
// invalid and conflicting ones, the enactments of policies gone, and when to look again.
func Settle(s Snapshot, d Decision, applyErr error) Decision {
	var busy *backend.BusyError
	if errors.As(applyErr, &busy) {
		// Another tool's transaction: nothing was changed and nobody failed. Say so on
		// what waits (a claimed slot stays claimed: Progressing) and look again soon.
		for _, name := range d.Composed.Applied {
			if d.Current[name] && !d.InEffect[name] {
				d.set(name, Update{Condition: shared.EnactmentProgressing, Message: busy.Error(), Generation: s.generation(name)})
			}
		}
		d.requeue(busyRetry, true)
		return d
	}
	// Enactments of policies that no longer select this node go once the backend has
	// pruned what they applied; if that failed, they stay and say why.
	for name := range s.Enactments {
		if s.selects(name) {
			continue
		}
		if applyErr == nil {
			d.set(name, Update{Delete: true})
		} else {
			d.set(name, Update{Condition: shared.EnactmentFailing, Generation: s.Enactments[name].Status.PolicyGeneration,
				Message: "removing this policy's changes from the node failed: " + applyErr.Error()})
		}
	}
	d.reportApplied(s, applyErr)
	// Invalid and conflicting policies: as written (AsWritten), or against the generations that
	// stayed in effect (Composed).
	for _, name := range slices.Sorted(maps.Keys(d.AsWritten.Failed)) {
		d.fail(s, name, d.AsWritten.Failed[name])
	}
	for _, name := range slices.Sorted(maps.Keys(d.Composed.Failed)) {
		if d.Current[name] {
			d.fail(s, name, d.Composed.Failed[name])
		}
	}
	return d
}

// reportApplied reports each policy applied at a new generation, or anew in this boot.
// After a failure, the policies it is blamed on (suspectsOf) fail; the others are innocent
// until tried without them, at once.
func (d *Decision) reportApplied(s Snapshot, applyErr error) {
	isNew := func(name string) bool { return d.Current[name] && !d.InEffect[name] }
	suspects := suspectsOf(applyErr, d.Composed, isNew, func(name string) bool {
		f, ok := s.Failures[name]
		return ok && f.Generation == s.generation(name)
	})
	for _, name := range d.Composed.Applied {
		if !isNew(name) || s.Drifted[name] != "" {
			continue // in effect already, or drifted since: nothing new to say
		}
		if len(suspects) > 0 && !suspects[name] {
			d.requeue(atOnce, false)
			continue
		}
		gen := s.generation(name)
		if applyErr != nil {
			if d.Failed == nil {
				d.Failed = map[string]Failure{}
			}
			msg := applyErr.Error()
			if refused := (*backend.PoliciesRefused)(nil); errors.As(applyErr, &refused) && refused.Reasons[name] != "" {
				msg = refused.Reasons[name]
			}
			d.Failed[name] = Failure{Generation: gen, ByProbe: errors.As(applyErr, new(probeFailure)),
				Policies: s.policySet(), Message: msg}
			d.set(name, Update{Condition: shared.EnactmentFailing, Message: msg, Generation: gen,
				Event: shared.ReasonFailedToConfigure})
			continue
		}
		d.Succeeded = append(d.Succeeded, name)
		raw := s.policy(name).DesiredState
		d.set(name, Update{Condition: shared.EnactmentAvailable, Message: "applied in boot " + s.Boot, Generation: gen,
			Boot: s.Boot, DesiredState: raw})
	}
}

// reportDrift marks each policy whose committed state was changed outside nmoverlay
// Failing with what differs (once).
func (d *Decision) reportDrift(s Snapshot) {
	for _, name := range slices.Sorted(maps.Keys(s.Drifted)) {
		e := s.Enactments[name]
		if e == nil || !committedIn(e, s.Boot) {
			continue
		}
		d.set(name, Update{Condition: shared.EnactmentFailing, Message: driftMessage(s.Drifted[name]),
			Generation: e.Status.PolicyGeneration})
	}
}

// classify sorts the applied policies: in effect (applied in this boot at this
// generation), to roll out (a new generation, which takes a slot first; re-applying after
// a boot or a failure does not: it was rolled out), and whether any was applied in an
// earlier boot.
func classify(s Snapshot, written Composition) (inEffect map[string]bool, rollout []string, newBoot bool) {
	inEffect = map[string]bool{}
	for _, name := range written.Applied {
		e, ok := s.Enactments[name]
		gen := s.generation(name)
		inEffect[name] = ok && e.Status.PolicyGeneration == gen && e.Status.BootID == s.Boot && IsTrue(e, shared.EnactmentAvailable, "")
		// A failure is retried without a new slot only when the node had its slot for the
		// generation: one reported without (a refusal before any change, an enactment set
		// Failing by hand) never lets a node apply out of its turn.
		settled := ok && e.Status.PolicyGeneration == gen &&
			(IsTrue(e, shared.EnactmentAvailable, "") || IsTrue(e, shared.EnactmentFailing, "") && granted(e, gen))
		if !settled {
			rollout = append(rollout, name)
		}
		newBoot = newBoot || (ok && e.Status.BootID != "" && e.Status.BootID != s.Boot)
	}
	return inEffect, rollout, newBoot
}

// granted: the cluster controller granted a rollout slot for this generation on the
// node's enactment (shared.RolloutSlotAnnotation). The controller decides who may go
// (maxUnavailable, readiness, timed-out grants); the node only waits for its turn.
func granted(e *v1beta1.NodeNetworkConfigurationEnactment, generation int64) bool {
	if e == nil {
		return false
	}
	gen, _, ok := shared.RolloutSlot(e.Annotations)
	return ok && gen == generation
}

// upToDate: every selected policy's enactment reports the current generation, Available
// in this boot (or Failing with the same reason), and no enactment is left for a policy
// that does not select the node.
func upToDate(s Snapshot, written Composition) bool {
	for name := range s.Enactments {
		if !s.selects(name) {
			return false
		}
	}
	for _, name := range written.Applied {
		e, ok := s.Enactments[name]
		if !ok || e.Status.PolicyGeneration != s.generation(name) || e.Status.BootID != s.Boot {
			return false
		}
		if d := s.Drifted[name]; d != "" {
			if !TrueWith(e, shared.EnactmentFailing, driftMessage(d)) {
				return false
			}
			continue
		}
		if !IsTrue(e, shared.EnactmentAvailable, "") {
			return false
		}
	}
	for name, msg := range written.Failed {
		e, ok := s.Enactments[name]
		if !ok || e.Status.PolicyGeneration != s.generation(name) || !TrueWith(e, shared.EnactmentFailing, msg) {
			return false
		}
	}
	return true
}

// committedOtherwise says whether this process committed, in this boot, something else than
// what the policies now compose: the enactments alone do not prove the node's state, since
// an etcd restored from a backup brings back enactments of a state the node left since (a
// policy deleted after the snapshot comes back Available) and drops those of one it still
// has (a policy created after it). Unknown after a restart of the handler ("").
func committedOtherwise(s Snapshot, written Composition) bool {
	if s.Committed == "" {
		return false
	}
	composed, _ := compose(s, written, nil)
	return commitKey(s.Boot, composed) != s.Committed
}

// committedKey is the key of the state committed on the node in this boot: this
// process's own record, or in a process that has committed nothing yet (a restarted or
// upgraded handler) what the enactments committed in this boot say they applied. Not when
// drift is to be undone: then the node differs from what they say.
func committedKey(s Snapshot) string {
	if s.Committed != "" || s.Reapply {
		return s.Committed
	}
	committed, ok := committedInBoot(s.schema(), s.Enactments, s.Boot)
	if !ok {
		return "" // nothing applied in this boot: the persistent profiles alone
	}
	return commitKey(s.Boot, committed)
}

// committedInBoot composes what the enactments committed in boot say they applied (their
// status.desiredState); false when none was.
func committedInBoot(schema backend.Schema, enactments map[string]*v1beta1.NodeNetworkConfigurationEnactment, boot string) (Composition, bool) {
	var pols []Policy
	for _, name := range slices.Sorted(maps.Keys(enactments)) {
		if e := enactments[name]; committedIn(e, boot) {
			pols = append(pols, Policy{Name: name, DesiredState: e.Status.DesiredState.Raw})
		}
	}
	return Compose(schema, pols), len(pols) > 0
}

// compose is what this pass applies: each selected policy at its current generation,
// unless it is held or invalid; then at the generation it last applied on this node (the
// enactment keeps that desired state), so nothing in effect is pruned because a newer
// generation waits or fails; a policy never applied here is left out. current names the
// policies applied at their current generation.
func compose(s Snapshot, written Composition, held map[string]bool) (Composition, map[string]bool) {
	ok := map[string]bool{}
	for _, name := range written.Applied {
		ok[name] = !held[name]
	}
	current := map[string]bool{}
	var pols []Policy
	for _, pol := range s.Selected {
		if ok[pol.Name] {
			current[pol.Name] = true
			pols = append(pols, pol)
			continue
		}
		if e := s.Enactments[pol.Name]; e != nil && len(e.Status.DesiredState.Raw) > 0 {
			pol.DesiredState = e.Status.DesiredState.Raw
			pols = append(pols, pol)
		}
	}
	return Compose(s.schema(), pols), current
}

// commitKey identifies a committed state within a boot.
func commitKey(boot string, p Composition) string {
	digest, err := json.Marshal(p.Apply)
	if err != nil { // a parsed state always marshals; never equal to a real key
		return boot + "/unmarshalable: " + err.Error()
	}
	return boot + "/" + string(digest)
}

// untilRetry is how long the policy at its current generation must still wait after
// failing. A change that did not converge is tried again as soon as the node's policies
// change (a VLAN policy created a moment before the policy with its bond); one that broke a
// probe waits its time whatever happens.
func untilRetry(s Snapshot, name string) time.Duration {
	f, ok := s.Failures[name]
	if !ok || f.Generation != s.generation(name) || (!f.ByProbe && f.Policies != s.policySet()) {
		return 0
	}
	return max(f.RetryAt.Sub(s.Now), 0)
}

// fail marks the policy Failing with msg, with a Warning event when that is news.
func (d *Decision) fail(s Snapshot, name, msg string) {
	d.set(name, Update{Condition: shared.EnactmentFailing, Message: msg, Generation: s.generation(name),
		Event: shared.ReasonFailedToConfigure})
}

// set records the enactment's status after the pass: one update per enactment, the last
// decided wins (a policy held in its backoff, then reported again after the apply).
func (d *Decision) set(name string, u Update) {
	if d.Updates == nil {
		d.Updates = map[string]Update{}
	}
	d.Updates[name] = u
}

// requeue keeps the soonest time to look again; jitter marks a time to spread.
func (d *Decision) requeue(after time.Duration, jitter bool) {
	if after <= 0 {
		return
	}
	if d.Requeue == 0 || after < d.Requeue {
		d.Requeue, d.Jitter = after, jitter
	}
}

// applyTo writes u into e's status. A Failing or waiting policy keeps the boot and desired
// state it last committed: what stays in effect meanwhile (compose).
func (u Update) applyTo(e *v1beta1.NodeNetworkConfigurationEnactment) {
	setEnactment(e, u.Condition, u.Message)
	e.Status.PolicyGeneration = u.Generation
	if u.Captured != nil {
		e.Status.CapturedStates = u.Captured
	}
	if u.Condition == shared.EnactmentAvailable {
		e.Status.BootID, e.Status.DesiredState = u.Boot, shared.State{Raw: u.DesiredState}
	}
}

// changes reports whether writing u changes e's status: a write that changes nothing is
// not made (no request, no timestamp moved, no event).
func (u Update) changes(e *v1beta1.NodeNetworkConfigurationEnactment) bool {
	if u.Delete {
		return true
	}
	after := e.DeepCopy()
	u.applyTo(after)
	return !equality.Semantic.DeepEqual(after.Status, e.Status)
}

// policy is the selected policy of that name (its zero value when none is).
func (s Snapshot) policy(name string) Policy {
	if i := slices.IndexFunc(s.Selected, func(p Policy) bool { return p.Name == name }); i >= 0 {
		return s.Selected[i]
	}
	return Policy{Name: name}
}

func (s Snapshot) selects(name string) bool {
	return slices.ContainsFunc(s.Selected, func(p Policy) bool { return p.Name == name })
}

func (s Snapshot) generation(name string) int64 { return s.policy(name).Generation }

// policySet names the selected policies and their generations.
func (s Snapshot) policySet() string {
	var b strings.Builder
	for _, p := range s.Selected {
		fmt.Fprintf(&b, "%s/%d ", p.Name, p.Generation)
	}
	return b.String()
}

// versions names the policies with their generations ("name/generation"), for the log.
func (s Snapshot) versions(names []string) []string {
	out := make([]string, len(names))
	for i, name := range names {
		out[i] = fmt.Sprintf("%s/%d", name, s.generation(name))
	}
	return out
}
