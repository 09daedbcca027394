// Package rebootgate is the reboot gate's decision (spec.rebootGate: Taint in the NMState):
// after a node reboots, its tmpfs layer is empty until its handler applies every policy
// again, so the node is tainted nmoverlay.io/reconverging:NoSchedule until then. Pure
// functions from a Node, the policies selecting it and its enactments to what changes on
// the Node; the cluster controller (which starts and lifts gates), the handler (which only
// lifts its own node's, should the controller be down) and the operator (which clears them
// when the gate is off, and reports the ones that ended badly) carry them out.
//
// The gate's whole state is on the Node, written in one patch with its taint, so that a
// restarted controller keeps the same deadline and any of the three can act on it:
//   - SinceAnnotation, "<RFC 3339 time>/<boot ID>", while the gate of that boot is on;
//   - FailedAnnotation, "<boot ID>/<message>", once the gate of that boot ended without the
//     policies Available (a failure or the timeout): the operator reports it as the
//     NMState's Degraded until the node's policies are all Available in its boot.
package rebootgate

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nmoverlay/nmoverlay/api/shared"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
)

// The gate's taint and annotations: the only things of a Node nmoverlay writes.
const (
	TaintKey         = "nmoverlay.io/reconverging"
	SinceAnnotation  = "nmoverlay.io/reconverging-since"
	FailedAnnotation = "nmoverlay.io/reconverging-failed"
)

// DefaultTimeout is how long a gate holds a node whose policies are not all Available in
// its new boot: a handler that is gone (not scheduled, crash-looping) must not keep the
// node unschedulable for good.
const DefaultTimeout = 5 * time.Minute

// DefaultGrace is how long the handler leaves a gate's end to the controller, which tells
// it with an event: the handler lifts its node's gate that long after the controller would
// have (it lifts a converged node's at once: nothing to tell).
const DefaultGrace = time.Minute

// clockSkew: a failure's time is the handler's clock, the gate's start the controller's; a
// failure dated up to this much before the start is taken as one of the new boot (the
// handler runs only once the kubelet has reported the new boot ID, which starts the gate).
const clockSkew = time.Minute

// Taint is the gate's taint.
func Taint() corev1.Taint {
	return corev1.Taint{Key: TaintKey, Effect: corev1.TaintEffectNoSchedule}
}

// Toleration tolerates the gate's taint (the handler's own pods, the controller's).
func Toleration() corev1.Toleration {
	return corev1.Toleration{Key: TaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
}

// Tolerated reports whether tolerations tolerate the gate's taint.
func Tolerated(tolerations []corev1.Toleration) bool {
	// The scheduler's matching (Toleration.ToleratesTaint) for a taint with no value.
	return slices.ContainsFunc(tolerations, func(tol corev1.Toleration) bool {
		return (tol.Key == "" && tol.Operator == corev1.TolerationOpExists || tol.Key == TaintKey) &&
			(tol.Effect == "" || tol.Effect == corev1.TaintEffectNoSchedule) &&
			(tol.Operator == corev1.TolerationOpExists || (tol.Operator == "" || tol.Operator == corev1.TolerationOpEqual) && tol.Value == "")
	})
}

// Policy is a policy selecting the node, at its current generation.
type Policy struct {
	Name       string
	Generation int64
}

// View is what a decision reads.
type View struct {
	Node *corev1.Node
	// Selected are the policies selecting the node.
	Selected []Policy
	// Enactments are the node's, by policy.
	Enactments map[string]*v1beta1.NodeNetworkConfigurationEnactment
	Now        time.Time
	// Timeout is how long a gate may hold the node (DefaultTimeout when 0).
	Timeout time.Duration
	// Started is the boot of the node's last gate the deciding controller started (it
	// remembers): a gate lifted with the policies back leaves nothing on the Node, and the
	// enactments in a cache can lag behind the Node lifted by the handler, which would
	// look like the reboot again.
	Started string
}

// Outcome is what a decision does to the gate.
type Outcome string

const (
	// Started: the node is tainted until its policies are back.
	Started Outcome = "Started"
	// Converged: every selected policy is Available in the node's boot; the taint goes.
	Converged Outcome = "Converged"
	// Failed: a policy failed in the node's boot; the taint goes, the failure is recorded.
	Failed Outcome = "Failed"
	// TimedOut: the timeout passed first; the taint goes, the policies waited for are
	// recorded.
	TimedOut Outcome = "TimedOut"
	// Cleared: what was left of a gate (of an older boot, or of a gate turned off) goes.
	Cleared Outcome = "Cleared"
)

// Decision is what changes on the Node; the zero Decision changes nothing.
type Decision struct {
	Outcome Outcome
	// Taint adds the gate's taint, Untaint removes it.
	Taint, Untaint bool
	// Annotations to set, and to remove.
	Set    map[string]string
	Remove []string
	// Boot is the node's boot ID the decision is about.
	Boot string
	// Policy is the policy that failed (Failed); Message says what happened (Failed,
	// TimedOut), as FailedAnnotation records it.
	Policy, Message string
	// Waiting names the policies not yet Available in the boot, sorted.
	Waiting []string
	// Recheck is when to decide again while a gate holds (its deadline); 0: on the next
	// change.
	Recheck time.Duration
}

// Changes reports whether the decision changes the Node.
func (d Decision) Changes() bool {
	return d.Taint || d.Untaint || len(d.Set) > 0 || len(d.Remove) > 0
}

// ApplyTo makes the decision's changes on n (a copy the caller patches). Only the gate's
// taint and annotations are touched.
func (d Decision) ApplyTo(n *corev1.Node) {
	if d.Untaint {
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == TaintKey })
	}
	if d.Taint && !tainted(n) {
		n.Spec.Taints = append(n.Spec.Taints, Taint())
	}
	for k, v := range d.Set {
		metav1.SetMetaDataAnnotation(&n.ObjectMeta, k, v)
	}
	for _, k := range d.Remove {
		delete(n.Annotations, k)
	}
}

// FormatSince is SinceAnnotation's value for a gate of boot started at.
func FormatSince(at time.Time, boot string) string {
	return at.UTC().Format(time.RFC3339) + "/" + boot
}

// ParseSince reads SinceAnnotation's value; ok is false when it does not parse.
func ParseSince(v string) (at time.Time, boot string, ok bool) {
	ts, boot, found := strings.Cut(v, "/")
	if !found {
		return time.Time{}, "", false
	}
	at, err := time.Parse(time.RFC3339, ts)
	return at, boot, err == nil
}

// FormatFailed is FailedAnnotation's value.
func FormatFailed(boot, message string) string { return boot + "/" + message }

// ParseFailed reads FailedAnnotation's value; ok is false when it does not parse.
func ParseFailed(v string) (boot, message string, ok bool) {
	return strings.Cut(v, "/")
}

// Decide is the controller's decision for one node with the gate on:
//   - no boot ID reported yet: nothing;
//   - a gate of the node's boot holds: lifted once every selected policy is Available at
//     its generation in the boot (Converged), once one failed in the boot (Failed: Failing
//     since the gate began), or at the timeout (TimedOut); else looked at again at the
//     deadline. A taint removed by someone else meanwhile is not put back;
//   - else, when the node's enactments were applied in an older boot and its policies are
//     not all Available in this one, and no gate of this boot was started or ended
//     already: Started;
//   - else what is left of a gate goes (Cleared): the taint, a start of another boot, a
//     failure of another boot or one the node has recovered from.
//
// A node no policy selects is never gated, nor a node whose handler never applied a policy
// (a new node: nothing of it was lost).
func Decide(v View) Decision {
	boot := v.Node.Status.NodeInfo.BootID
	if boot == "" {
		return Decision{}
	}
	a := assess(v, boot)
	since, sinceBoot, gating := ParseSince(v.Node.Annotations[SinceAnnotation])
	if gating && sinceBoot == boot {
		return lift(v, a, since, 0)
	}
	failedBoot, _, hasFailed := ParseFailed(v.Node.Annotations[FailedAnnotation])
	if a.rebooted && !a.converged() && !(hasFailed && failedBoot == boot) && v.Started != boot {
		d := Decision{Outcome: Started, Boot: boot, Taint: !tainted(v.Node), Waiting: a.waiting,
			Set: map[string]string{SinceAnnotation: FormatSince(v.Now, boot)}, Recheck: timeout(v)}
		if hasFailed {
			d.Remove = []string{FailedAnnotation} // another boot's: this one starts afresh
		}
		return d
	}
	return clear(v.Node, a.converged(), boot)
}

// Lift is the handler's part of the gate, on its own node: it never starts one, and lifts
// one as Decide would, grace later (the controller, when it runs, lifts it first and tells
// it with an event), but at once when every policy is Available. A gate of an older boot
// (the node rebooted again with no controller to start a new one) keeps its deadline; a
// taint whose start is not recorded goes at once: the handler must not be the one that
// leaves a node tainted for good.
func Lift(v View, grace time.Duration) Decision {
	boot := v.Node.Status.NodeInfo.BootID
	a := assess(v, boot)
	if since, _, gating := ParseSince(v.Node.Annotations[SinceAnnotation]); gating {
		return lift(v, a, since, grace)
	}
	d := clear(v.Node, boot != "" && a.converged(), boot)
	if d.Untaint && !a.converged() {
		d.Outcome, d.Waiting = TimedOut, a.waiting
		d.Message = "the gate's start in boot " + boot + " is not recorded"
		d.Set = map[string]string{FailedAnnotation: FormatFailed(boot, d.Message)}
		d.Remove = slices.DeleteFunc(d.Remove, func(k string) bool { return k == FailedAnnotation })
	}
	return d
}

// Clear removes whatever the gate left on n: the operator's decision while the gate is
// off, or once the NMState is gone (no controller nor handler is left to lift it).
func Clear(n *corev1.Node) Decision {
	return clear(n, true, n.Status.NodeInfo.BootID)
}

// clear removes the taint, SinceAnnotation, and FailedAnnotation unless it records a
// failure of boot the node has not recovered from.
func clear(n *corev1.Node, converged bool, boot string) Decision {
	d := Decision{Boot: boot, Untaint: tainted(n)}
	if _, ok := n.Annotations[SinceAnnotation]; ok {
		d.Remove = append(d.Remove, SinceAnnotation)
	}
	if v, ok := n.Annotations[FailedAnnotation]; ok {
		if failedBoot, _, _ := ParseFailed(v); converged || failedBoot != boot {
			d.Remove = append(d.Remove, FailedAnnotation)
		}
	}
	if d.Changes() {
		d.Outcome = Cleared
	}
	return d
}

// lift decides a gate of the node's boot begun at since; grace delays its failure and its
// timeout (not its convergence).
func lift(v View, a assessment, since time.Time, grace time.Duration) Decision {
	boot := v.Node.Status.NodeInfo.BootID
	d := Decision{Boot: boot, Waiting: a.waiting}
	end := func(o Outcome) Decision {
		d.Outcome, d.Untaint = o, tainted(v.Node)
		d.Remove = []string{SinceAnnotation}
		if o == Converged {
			if _, ok := v.Node.Annotations[FailedAnnotation]; ok {
				d.Remove = append(d.Remove, FailedAnnotation)
			}
		} else {
			d.Set = map[string]string{FailedAnnotation: FormatFailed(boot, d.Message)}
		}
		return d
	}
	if a.converged() {
		return end(Converged)
	}
	var failedAt time.Time
	for _, f := range a.failed {
		if !f.at.Before(since.Add(-clockSkew)) {
			if failedAt.IsZero() {
				failedAt = f.at
				d.Policy, d.Message = f.policy, fmt.Sprintf("policy %s failed in boot %s: %s", f.policy, boot, f.message)
			} else {
				d.Message += "; policy " + f.policy + " failed too"
			}
		}
	}
	if !failedAt.IsZero() {
		if wait := failedAt.Add(grace).Sub(v.Now); wait > 0 {
			d.Recheck = wait
		} else {
			return end(Failed)
		}
	}
	deadline := since.Add(timeout(v) + grace)
	if !v.Now.Before(deadline) {
		d.Policy = ""
		d.Message = fmt.Sprintf("not Available in boot %s after %s: %s", boot, timeout(v), strings.Join(a.waiting, ", "))
		return end(TimedOut)
	}
	if left := deadline.Sub(v.Now); d.Recheck == 0 || left < d.Recheck {
		d.Recheck = left
	}
	d.Policy, d.Message = "", ""
	return d
}

// assessment is where the node's policies stand in its boot.
type assessment struct {
	// rebooted: some selected policy's enactment was applied in an older boot.
	rebooted bool
	// waiting: the selected policies not Available at their generation in the boot.
	waiting []string
	// failed: those of them Failing at their generation, by name.
	failed []failure
}

type failure struct {
	policy, message string
	at              time.Time
}

func (a assessment) converged() bool { return len(a.waiting) == 0 }

func assess(v View, boot string) assessment {
	var a assessment
	for _, p := range v.Selected {
		e := v.Enactments[p.Name]
		if e == nil {
			a.waiting = append(a.waiting, p.Name)
			continue
		}
		st := e.Status
		if st.BootID != "" && st.BootID != boot {
			a.rebooted = true
		}
		current := st.PolicyGeneration == p.Generation
		if current && st.BootID == boot && boot != "" && shared.IsTrue(st.Conditions, shared.EnactmentAvailable, "") {
			continue
		}
		a.waiting = append(a.waiting, p.Name)
		if c := meta.FindStatusCondition(st.Conditions, shared.EnactmentFailing); current && c != nil && c.Status == metav1.ConditionTrue {
			a.failed = append(a.failed, failure{policy: p.Name, message: c.Message, at: c.LastTransitionTime.Time})
		}
	}
	slices.Sort(a.waiting)
	slices.SortFunc(a.failed, func(x, y failure) int { return strings.Compare(x.policy, y.policy) })
	return a
}

func timeout(v View) time.Duration {
	if v.Timeout <= 0 {
		return DefaultTimeout
	}
	return v.Timeout
}

func tainted(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == TaintKey })
}

// Tainted reports whether n carries the gate's taint.
func Tainted(n *corev1.Node) bool { return tainted(n) }

// Changed reports whether a Node's update matters to its gate beyond its labels: a new
// boot ID, the taint added or removed, the gate's annotations.
func Changed(old, nu *corev1.Node) bool {
	return old.Status.NodeInfo.BootID != nu.Status.NodeInfo.BootID || tainted(old) != tainted(nu) ||
		old.Annotations[SinceAnnotation] != nu.Annotations[SinceAnnotation] ||
		old.Annotations[FailedAnnotation] != nu.Annotations[FailedAnnotation]
}

// Present reports whether anything of a gate is on n: its taint or its annotations.
func Present(n *corev1.Node) bool {
	_, since := n.Annotations[SinceAnnotation]
	_, failed := n.Annotations[FailedAnnotation]
	return since || failed || tainted(n)
}
