package rebootgate

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nmoverlay/nmoverlay/api/shared"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
)

const (
	boot    = "boot-2"
	oldBoot = "boot-1"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// node is a Node in boot b with the given taints and annotations.
func node(b string, taints []corev1.Taint, annotations map[string]string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w1", Annotations: annotations}}
	n.Spec.Taints = taints
	n.Status.NodeInfo.BootID = b
	return n
}

var (
	other = corev1.Taint{Key: "example.com/maintenance", Value: "x", Effect: corev1.TaintEffectNoExecute}
	gated = []corev1.Taint{other, Taint()}
)

// since is a gate of b begun at.
func since(at time.Time, b string) map[string]string {
	return map[string]string{SinceAnnotation: FormatSince(at, b)}
}

// en is the node's enactment of policy at gen: cond True since at, applied in appliedIn.
func en(gen int64, cond, appliedIn string, at time.Time) *v1beta1.NodeNetworkConfigurationEnactment {
	e := &v1beta1.NodeNetworkConfigurationEnactment{}
	shared.SetEnactment(&e.Status.Conditions, cond, "message of "+cond)
	for i := range e.Status.Conditions {
		e.Status.Conditions[i].LastTransitionTime = metav1.NewTime(at)
	}
	e.Status.PolicyGeneration, e.Status.BootID = gen, appliedIn
	return e
}

var two = []Policy{{Name: "bond", Generation: 2}, {Name: "vlan", Generation: 1}}

func TestDecide(t *testing.T) {
	now := t0.Add(time.Minute)
	for _, tc := range []struct {
		name       string
		node       *corev1.Node
		selected   []Policy
		enactments map[string]*v1beta1.NodeNetworkConfigurationEnactment
		started    string
		want       Decision
	}{
		{name: "rebooted: its enactments of an older boot; tainted, the start recorded",
			node: node(boot, []corev1.Taint{other}, nil), selected: two,
			enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{
				"bond": en(2, shared.EnactmentAvailable, oldBoot, t0), "vlan": en(1, shared.EnactmentAvailable, oldBoot, t0)},
			want: Decision{Outcome: Started, Taint: true, Set: since(now, boot), Boot: boot, Waiting: []string{"bond", "vlan"}, Recheck: DefaultTimeout}},
		{name: "rebooted, one policy back already: still started",
			node: node(boot, nil, nil), selected: two,
			enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{
				"bond": en(2, shared.EnactmentAvailable, boot, t0), "vlan": en(1, shared.EnactmentAvailable, oldBoot, t0)},
			want: Decision{Outcome: Started, Taint: true, Set: since(now, boot), Boot: boot, Waiting: []string{"vlan"}, Recheck: DefaultTimeout}},
		{name: "rebooted again while gated: a new start, the taint kept",
			node: node(boot, gated, since(t0, oldBoot)), selected: two,
			enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{
				"bond": en(2, shared.EnactmentAvailable, oldBoot, t0), "vlan": en(1, shared.EnactmentAvailable, oldBoot, t0)},
			want: Decision{Outcome: Started, Set: since(now, boot), Boot: boot, Waiting: []string{"bond", "vlan"}, Recheck: DefaultTimeout}},
		{name: "rebooted after a gate that failed: the old failure goes",
			node: node(boot, nil, map[string]string{FailedAnnotation: FormatFailed(oldBoot, "policy bond failed")}), selected: two,
			enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{
				"bond": en(2, shared.EnactmentAvailable, oldBoot, t0), "vlan": en(1, shared.EnactmentAvailable, oldBoot, t0)},
			want: Decision{Outcome: Started, Taint: true, Set: since(now, boot), Remove: []string{FailedAnnotation}, Boot: boot,
				Waiting: []string{"bond", "vlan"}, Recheck: DefaultTimeout}},
		{name: "a gate of this boot ended already (failed or timed out): not started again",
			node: node(boot, nil, map[string]string{FailedAnnotation: FormatFailed(boot, "timed out")}), selected: two,
			enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{
				"bond": en(2, shared.EnactmentAvailable, oldBoot, t0), "vlan": en(1, shared.EnactmentAvailable, oldBoot, t0)},
			want: Decision{Boot: boot}},
		{name: "a gate of this boot started and lifted already, the enactments not yet seen in it: not started again",
			node: node(boot, nil, nil), selected: two, started: boot,
			enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{
				"bond": en(2, shared.EnactmentAvailable, oldBoot, t0), "vlan": en(1, shared.EnactmentAvailable, oldBoot, t0)},
			want: Decision{Boot: boot}},
		{name: "a gate of an older boot started: this boot's starts",
			node: node(boot, nil, nil), selected: two, started: oldBoot,
			enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{
				"bond": en(2, shared.EnactmentAvailable, oldBoot, t0), "vlan": en(1, shared.EnactmentAvailable, oldBoot, t0)},
			want: Decision{Outcome: Started, Taint: true, Set: since(now, boot), Boot: boot, Waiting: []string{"bond", "vlan"}, Recheck: DefaultTimeout}},
		{name: "a new node: no enactment applied in any boot; not gated",
			node: node(boot, nil, nil), selected: two,
			enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{"bond": en(2, shared.EnactmentPending, "", t0)},
			want:       Decision{Boot: boot}},
		{name: "no policy selects it: never gated",
			node: node(boot, nil, nil), want: Decision{Boot: boot}},
		{name: "no boot ID reported yet: nothing",
			node: node("", gated, since(t0, boot)), selected: two},
		{name: "gated, waiting: looked at again at the deadline",
			node: node(boot, gated, since(t0, boot)), selected: two,
			enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{
				"bond": en(2, shared.EnactmentAvailable, boot, now), "vlan": en(1, shared.EnactmentAvailable, oldBoot, t0)},
			want: Decision{Boot: boot, Waiting: []string{"vlan"}, Recheck: DefaultTimeout - time.Minute}},
		{name: "gated, a new generation not applied yet: still waited for",
			node: node(boot, gated, since(t0, boot)), selected: two,
			enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{
				"bond": en(1, shared.EnactmentAvailable, boot, now), "vlan": en(1, shared.EnactmentAvailable, boot, t0)},
			want: Decision{Boot: boot, Waiting: []string{"bond"}, Recheck: DefaultTimeout - time.Minute}},
		{name: "gated, every policy Available in this boot: lifted, nothing else touched",
			node: node(boot, gated, since(t0, boot)), selected: two,
			enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{
				"bond": en(2, shared.EnactmentAvailable, boot, now), "vlan": en(1, shared.EnactmentAvailable, boot, now)},
			want: Decision{Outcome: Converged, Untaint: true, Remove: []string{SinceAnnotation}, Boot: boot}},
		{name: "gated, the policy no longer selects it: lifted",
			node: node(boot, gated, since(t0, boot)),
			want: Decision{Outcome: Converged, Untaint: true, Remove: []string{SinceAnnotation}, Boot: boot}},
		{name: "gated, a policy failed in this boot: lifted, the failure recorded naming it",
			node: node(boot, gated, since(t0, boot)), selected: two,
			enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{
				"bond": en(2, shared.EnactmentFailing, oldBoot, now), "vlan": en(1, shared.EnactmentAvailable, boot, now)},
			want: Decision{Outcome: Failed, Untaint: true, Remove: []string{SinceAnnotation}, Boot: boot, Policy: "bond",
				Message: "policy bond failed in boot boot-2: message of Failing", Waiting: []string{"bond"},
				Set: map[string]string{FailedAnnotation: FormatFailed(boot, "policy bond failed in boot boot-2: message of Failing")}}},
		{name: "gated, a policy failing since before the gate: waited for until the timeout",
			node: node(boot, gated, since(t0, boot)), selected: two,
			enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{
				"bond": en(2, shared.EnactmentFailing, oldBoot, t0.Add(-time.Hour)), "vlan": en(1, shared.EnactmentAvailable, boot, now)},
			want: Decision{Boot: boot, Waiting: []string{"bond"}, Recheck: DefaultTimeout - time.Minute}},
		{name: "gated, a failure of an older generation: waited for",
			node: node(boot, gated, since(t0, boot)), selected: two,
			enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{
				"bond": en(1, shared.EnactmentFailing, oldBoot, now), "vlan": en(1, shared.EnactmentAvailable, boot, now)},
			want: Decision{Boot: boot, Waiting: []string{"bond"}, Recheck: DefaultTimeout - time.Minute}},
		{name: "gated, the timeout passed: lifted, the policies waited for recorded",
			node: node(boot, gated, since(now.Add(-DefaultTimeout), boot)), selected: two,
			enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{"vlan": en(1, shared.EnactmentAvailable, oldBoot, t0)},
			want: Decision{Outcome: TimedOut, Untaint: true, Remove: []string{SinceAnnotation}, Boot: boot, Waiting: []string{"bond", "vlan"},
				Message: "not Available in boot boot-2 after 5m0s: bond, vlan",
				Set:     map[string]string{FailedAnnotation: FormatFailed(boot, "not Available in boot boot-2 after 5m0s: bond, vlan")}}},
		{name: "gated, the taint removed by someone else: not put back; the gate still ends",
			node: node(boot, []corev1.Taint{other}, since(t0, boot)), selected: two,
			enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{
				"bond": en(2, shared.EnactmentAvailable, boot, now), "vlan": en(1, shared.EnactmentAvailable, boot, now)},
			want: Decision{Outcome: Converged, Remove: []string{SinceAnnotation}, Boot: boot}},
		{name: "not gated, policies back after a failed gate: the failure goes",
			node: node(boot, nil, map[string]string{FailedAnnotation: FormatFailed(boot, "timed out")}), selected: two,
			enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{
				"bond": en(2, shared.EnactmentAvailable, boot, now), "vlan": en(1, shared.EnactmentAvailable, boot, now)},
			want: Decision{Outcome: Cleared, Remove: []string{FailedAnnotation}, Boot: boot}},
		{name: "a taint left without a gate: removed",
			node: node(boot, gated, nil), selected: two,
			enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{
				"bond": en(2, shared.EnactmentAvailable, boot, now), "vlan": en(1, shared.EnactmentAvailable, boot, now)},
			want: Decision{Outcome: Cleared, Untaint: true, Boot: boot}},
		{name: "up to date, nothing of a gate: nothing",
			node: node(boot, []corev1.Taint{other}, map[string]string{"example.com/x": "y"}), selected: two,
			enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{
				"bond": en(2, shared.EnactmentAvailable, boot, now), "vlan": en(1, shared.EnactmentAvailable, boot, now)},
			want: Decision{Boot: boot}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(View{Node: tc.node, Selected: tc.selected, Enactments: tc.enactments, Now: now, Started: tc.started})
			expect(t, got, tc.want)
		})
	}
}

func TestLift(t *testing.T) {
	now := t0.Add(time.Minute)
	const grace = 30 * time.Second
	both := func(cond string, at time.Time) map[string]*v1beta1.NodeNetworkConfigurationEnactment {
		return map[string]*v1beta1.NodeNetworkConfigurationEnactment{"bond": en(2, cond, boot, at), "vlan": en(1, shared.EnactmentAvailable, boot, now)}
	}
	for _, tc := range []struct {
		name       string
		node       *corev1.Node
		enactments map[string]*v1beta1.NodeNetworkConfigurationEnactment
		want       Decision
	}{
		{name: "rebooted, not gated: the handler never starts a gate",
			node: node(boot, nil, nil),
			enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{
				"bond": en(2, shared.EnactmentAvailable, oldBoot, t0), "vlan": en(1, shared.EnactmentAvailable, oldBoot, t0)},
			want: Decision{Boot: boot}},
		{name: "gated, every policy Available: lifted at once",
			node: node(boot, gated, since(t0, boot)), enactments: both(shared.EnactmentAvailable, now),
			want: Decision{Outcome: Converged, Untaint: true, Remove: []string{SinceAnnotation}, Boot: boot}},
		{name: "gated, a failure within the grace: left to the controller until then",
			node: node(boot, gated, since(t0, boot)), enactments: both(shared.EnactmentFailing, now.Add(-10*time.Second)),
			want: Decision{Boot: boot, Waiting: []string{"bond"}, Recheck: 20 * time.Second}},
		{name: "gated, a failure past the grace: lifted",
			node: node(boot, gated, since(t0, boot)), enactments: both(shared.EnactmentFailing, now.Add(-grace)),
			want: Decision{Outcome: Failed, Untaint: true, Remove: []string{SinceAnnotation}, Boot: boot, Policy: "bond", Waiting: []string{"bond"},
				Message: "policy bond failed in boot boot-2: message of Failing",
				Set:     map[string]string{FailedAnnotation: FormatFailed(boot, "policy bond failed in boot boot-2: message of Failing")}}},
		{name: "gated, the timeout passed within the grace: left to the controller until then",
			node: node(boot, gated, since(now.Add(-DefaultTimeout), boot)), enactments: both(shared.EnactmentPending, t0),
			want: Decision{Boot: boot, Waiting: []string{"bond"}, Recheck: grace}},
		{name: "gated, the timeout and the grace passed: lifted",
			node: node(boot, gated, since(now.Add(-DefaultTimeout-grace), boot)), enactments: both(shared.EnactmentPending, t0),
			want: Decision{Outcome: TimedOut, Untaint: true, Remove: []string{SinceAnnotation}, Boot: boot, Waiting: []string{"bond"},
				Message: "not Available in boot boot-2 after 5m0s: bond",
				Set:     map[string]string{FailedAnnotation: FormatFailed(boot, "not Available in boot boot-2 after 5m0s: bond")}}},
		{name: "a gate of an older boot, the node rebooted again with no controller: its deadline holds",
			node: node(boot, gated, since(t0, oldBoot)), enactments: both(shared.EnactmentPending, t0),
			want: Decision{Boot: boot, Waiting: []string{"bond"}, Recheck: DefaultTimeout + grace - time.Minute}},
		{name: "tainted with no start recorded, not converged: lifted at once",
			node: node(boot, gated, map[string]string{FailedAnnotation: FormatFailed(oldBoot, "x")}), enactments: both(shared.EnactmentPending, t0),
			want: Decision{Outcome: TimedOut, Untaint: true, Remove: nil, Boot: boot, Waiting: []string{"bond"},
				Message: "the gate's start in boot boot-2 is not recorded",
				Set:     map[string]string{FailedAnnotation: FormatFailed(boot, "the gate's start in boot boot-2 is not recorded")}}},
		{name: "a failed gate, every policy Available since: the failure goes",
			node: node(boot, nil, map[string]string{FailedAnnotation: FormatFailed(boot, "x")}), enactments: both(shared.EnactmentAvailable, now),
			want: Decision{Outcome: Cleared, Remove: []string{FailedAnnotation}, Boot: boot}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Lift(View{Node: tc.node, Selected: two, Enactments: tc.enactments, Now: now}, grace)
			expect(t, got, tc.want)
		})
	}
}

// TestApplyTo: only the gate's taint and annotations change; every other taint and
// annotation stays, in order.
func TestApplyTo(t *testing.T) {
	n := node(boot, []corev1.Taint{other}, map[string]string{"example.com/x": "y", FailedAnnotation: "old/x"})
	Decision{Taint: true, Set: since(t0, boot), Remove: []string{FailedAnnotation}}.ApplyTo(n)
	if !slices.Equal(n.Spec.Taints, gated) {
		t.Errorf("taints %v, want %v", n.Spec.Taints, gated)
	}
	if len(n.Annotations) != 2 || n.Annotations["example.com/x"] != "y" || n.Annotations[SinceAnnotation] != FormatSince(t0, boot) {
		t.Errorf("annotations %v", n.Annotations)
	}
	Decision{Taint: true}.ApplyTo(n)
	if len(n.Spec.Taints) != 2 {
		t.Errorf("tainted twice: %v", n.Spec.Taints)
	}
	Clear(n).ApplyTo(n)
	if !slices.Equal(n.Spec.Taints, []corev1.Taint{other}) || len(n.Annotations) != 1 {
		t.Errorf("after Clear: taints %v, annotations %v", n.Spec.Taints, n.Annotations)
	}
	if d := Clear(n); d.Changes() {
		t.Errorf("Clear of a node without a gate: %+v", d)
	}
}

func TestAnnotationsRoundTrip(t *testing.T) {
	at, b, ok := ParseSince(FormatSince(t0.In(time.FixedZone("x", 3600)), "3e6f/1"))
	if !ok || !at.Equal(t0) || b != "3e6f/1" {
		t.Errorf("ParseSince: %v %q %v", at, b, ok)
	}
	if _, _, ok := ParseSince("yesterday/boot"); ok {
		t.Error("a time that does not parse is no start")
	}
	b, msg, ok := ParseFailed(FormatFailed("boot-2", "policy a/b failed"))
	if !ok || b != "boot-2" || msg != "policy a/b failed" {
		t.Errorf("ParseFailed: %q %q %v", b, msg, ok)
	}
}

func TestTolerated(t *testing.T) {
	for _, tc := range []struct {
		tolerations []corev1.Toleration
		want        bool
	}{
		{nil, false},
		{[]corev1.Toleration{{Operator: corev1.TolerationOpExists}}, true},
		{[]corev1.Toleration{Toleration()}, true},
		{[]corev1.Toleration{{Key: TaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}, false},
		{[]corev1.Toleration{{Key: "other", Operator: corev1.TolerationOpExists}}, false},
		{[]corev1.Toleration{{Key: TaintKey, Operator: corev1.TolerationOpEqual}}, true},
		{[]corev1.Toleration{{Key: TaintKey, Value: "x"}}, false},
		{[]corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}, true},
	} {
		if got := Tolerated(tc.tolerations); got != tc.want {
			t.Errorf("Tolerated(%v) = %v, want %v", tc.tolerations, got, tc.want)
		}
	}
}

func expect(t *testing.T, got, want Decision) {
	t.Helper()
	if got.Outcome != want.Outcome || got.Taint != want.Taint || got.Untaint != want.Untaint || got.Boot != want.Boot ||
		got.Policy != want.Policy || got.Message != want.Message || got.Recheck != want.Recheck ||
		!slices.Equal(got.Waiting, want.Waiting) || !slices.Equal(got.Remove, want.Remove) || len(got.Set) != len(want.Set) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	for k, v := range want.Set {
		if got.Set[k] != v {
			t.Fatalf("set %s=%q, want %q", k, got.Set[k], v)
		}
	}
	if want.Outcome == "" && got.Changes() {
		t.Fatalf("changes the node: %+v", got)
	}
}
