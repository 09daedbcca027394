package node

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nmoverlay/nmoverlay/api/shared"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/backend"
)

// The decision core, table by table: each case is a snapshot (and, for Settle, what the
// engine answered) and what the pass must do.

const (
	self    = "w2"
	boot    = "boot-2"
	oldBoot = "boot-1"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// dummyState is a desired state of dummy interfaces, up.
func dummyState(ifaces ...string) []byte {
	var parts []string
	for _, name := range ifaces {
		parts = append(parts, fmt.Sprintf(`{"name":%q,"type":"dummy","state":"up"}`, name))
	}
	return []byte(`{"interfaces":[` + strings.Join(parts, ",") + `]}`)
}

// pol is a policy for every node, one slot at a time.
func pol(name string, gen int64, ifaces ...string) Policy {
	one := intstr.FromInt32(1)
	return Policy{Name: name, Generation: gen, DesiredState: dummyState(ifaces...), MaxUnavailable: &one}
}

// enactment of policy on self: its one True condition, the generation it reports, and
// (for one applied before) the boot and the desired state it committed.
func enactment(policy string, gen int64, cond, msg, appliedIn string, applied []byte) *v1beta1.NodeNetworkConfigurationEnactment {
	e := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: shared.EnactmentKey(self, policy),
		Labels: map[string]string{shared.NodeLabel: self, shared.PolicyLabel: policy}}}
	setEnactment(e, cond, msg)
	e.Status.PolicyGeneration, e.Status.BootID, e.Status.DesiredState = gen, appliedIn, shared.State{Raw: applied}
	if cond == shared.EnactmentFailing {
		withGrant(e, gen) // a failure of the node's own, in its turn
	}
	return e
}

// unGranted is e without its grant: a status the node reported out of its turn, or one
// written by hand.
func unGranted(e *v1beta1.NodeNetworkConfigurationEnactment) *v1beta1.NodeNetworkConfigurationEnactment {
	delete(e.Annotations, shared.RolloutSlotAnnotation)
	return e
}

func available(policy string, gen int64, appliedIn string, ifaces ...string) *v1beta1.NodeNetworkConfigurationEnactment {
	return enactment(policy, gen, shared.EnactmentAvailable, "applied in boot "+appliedIn, appliedIn, dummyState(ifaces...))
}

// grantOf is the enactment the cluster controller creates when it grants the node a
// rollout slot for policy at gen: no status yet.
func grantOf(policy string, gen int64) *v1beta1.NodeNetworkConfigurationEnactment {
	return withGrant(&v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: shared.EnactmentKey(self, policy),
		Labels: map[string]string{shared.NodeLabel: self, shared.PolicyLabel: policy}}}, gen)
}

// withGrant adds a grant of gen to an enactment.
func withGrant(e *v1beta1.NodeNetworkConfigurationEnactment, gen int64) *v1beta1.NodeNetworkConfigurationEnactment {
	metav1.SetMetaDataAnnotation(&e.ObjectMeta, shared.RolloutSlotAnnotation, shared.FormatRolloutSlot(gen, t0))
	return e
}

func snap(policies []Policy, enactments ...*v1beta1.NodeNetworkConfigurationEnactment) Snapshot {
	s := Snapshot{Node: self, Boot: boot, Now: t0, Selected: policies,
		Enactments: map[string]*v1beta1.NodeNetworkConfigurationEnactment{}}
	for _, e := range enactments {
		s.Enactments[e.Labels[shared.PolicyLabel]] = e
	}
	return s
}

// want is what a pass must decide. Updates map a policy to "Condition: message" (the
// message as a prefix), "" for no update, "delete" for a deletion.
type want struct {
	apply   []string // the interfaces handed to the engine; nil: no transaction
	settle  bool
	updates map[string]string
	requeue time.Duration
	jitter  bool
	waiting []string
	failed  []string
	newBoot bool
}

func names(d Decision) []string {
	if !d.Apply {
		return nil
	}
	var out []string
	apply, _ := backend.NMStateOf(d.Composed.Apply)
	for _, it := range apply.Interfaces {
		out = append(out, it.Name)
	}
	return out
}

func check(t *testing.T, d Decision, w want) {
	t.Helper()
	if got := names(d); !slices.Equal(got, w.apply) {
		t.Errorf("applies %v, want %v", got, w.apply)
	}
	if d.Settle != w.settle {
		t.Errorf("Settle = %v, want %v", d.Settle, w.settle)
	}
	got := map[string]string{}
	for name, u := range d.Updates {
		got[name] = u.Condition + ": " + u.Message
		if u.Delete {
			got[name] = "delete"
		}
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		if wnt, ok := w.updates[name]; !ok || !strings.HasPrefix(got[name], wnt) {
			t.Errorf("update of %s = %q, want %q", name, got[name], wnt)
		}
	}
	for name, wnt := range w.updates {
		if _, ok := got[name]; !ok {
			t.Errorf("no update of %s, want %q", name, wnt)
		}
	}
	if d.Requeue != w.requeue || d.Jitter != w.jitter {
		t.Errorf("requeue %v (jitter %v), want %v (jitter %v)", d.Requeue, d.Jitter, w.requeue, w.jitter)
	}
	if !slices.Equal(d.Waiting, w.waiting) {
		t.Errorf("waiting %v, want %v", d.Waiting, w.waiting)
	}
	if f := slices.Sorted(maps.Keys(d.Failed)); !slices.Equal(f, w.failed) {
		t.Errorf("failed %v, want %v", f, w.failed)
	}
	if d.NewBoot != w.newBoot {
		t.Errorf("NewBoot = %v, want %v", d.NewBoot, w.newBoot)
	}
}

func TestDecide(t *testing.T) {
	a1, b1 := pol("a", 1, "d-a"), pol("b", 1, "d-b")
	a2 := pol("a", 2, "d-a2")

	for _, tc := range []struct {
		name string
		s    Snapshot
		want want
	}{
		{name: "a new policy waits for its rollout slot: no write, no request, nothing to look at again",
			s:    snap([]Policy{a1}),
			want: want{waiting: []string{"a"}, settle: true}},
		{name: "a slot granted (the controller created the enactment with it): applied",
			s:    snap([]Policy{a1}, grantOf("a", 1)),
			want: want{apply: []string{"d-a"}, settle: true}},
		{name: "a grant of the previous generation is none for the new one: the old one stays in effect meanwhile, not applied again",
			s:    snap([]Policy{a2}, withGrant(available("a", 1, boot, "d-a"), 1)),
			want: want{waiting: []string{"a"}, settle: true}},
		{name: "a restarted handler whose enactments were committed in this boot applies nothing, though a Failing message now reads otherwise",
			s: snap([]Policy{a1, {Name: "bad", Generation: 1, DesiredState: []byte(`{"interfaces":[{"name":"x","type":"no-such-type"}]}`)}},
				available("a", 1, boot, "d-a"), enactment("bad", 1, shared.EnactmentFailing, "worded by an earlier release", "", nil)),
			want: want{settle: true}},
		{name: "a restarted handler applies when a policy committed in this boot was deleted meanwhile: its state goes",
			s:    snap([]Policy{a1}, available("a", 1, boot, "d-a"), available("gone", 1, boot, "d-gone")),
			want: want{apply: []string{"d-a"}, settle: true}},
		{name: "the new generation granted: applied",
			s:    snap([]Policy{a2}, withGrant(available("a", 1, boot, "d-a"), 2)),
			want: want{apply: []string{"d-a2"}, settle: true}},
		{name: "of two new policies, the one granted is applied, the other waits",
			s:    snap([]Policy{a1, b1}, grantOf("b", 1)),
			want: want{waiting: []string{"a"}, apply: []string{"d-b"}, settle: true}},
		{name: "a generation reported already needs no grant to be applied again (boot, drift, backoff)",
			s:    snap([]Policy{a1}, enactment("a", 1, shared.EnactmentFailing, "did not converge", "", nil)),
			want: want{apply: []string{"d-a"}, settle: true}},
		{name: "a failure reported without a grant (set Failing by hand) is no turn taken: it waits for one",
			s:    snap([]Policy{a1}, unGranted(enactment("a", 1, shared.EnactmentFailing, "marked by hand", "", nil))),
			want: want{waiting: []string{"a"}, settle: true}},
		{name: "a refusal while the overlay was degraded is withdrawn once it is back: Pending, so the rollout can go on",
			s:    snap([]Policy{a1}, unGranted(enactment("a", 1, shared.EnactmentFailing, shared.MessageRefusedDegraded+"upper dir not tmpfs", "", nil))),
			want: want{waiting: []string{"a"}, settle: true, updates: map[string]string{"a": "Pending: " + shared.MessagePending}}},
		{name: "a generation aborted elsewhere waits; the generation applied before stays in effect",
			s: func() Snapshot {
				s := snap([]Policy{a2}, enactment("a", 2, shared.EnactmentAborted, "reconciliation ... has aborted", boot, dummyState("d-a")))
				s.Committed = commitKey(boot, Compose(backend.NMState{}, []Policy{a1}))
				return s
			}(),
			want: want{waiting: []string{"a"}, settle: true}},
		{name: "boot re-convergence re-applies without a slot",
			s:    snap([]Policy{a1, b1}, available("a", 1, oldBoot, "d-a"), available("b", 1, oldBoot, "d-b")),
			want: want{apply: []string{"d-a", "d-b"}, settle: true, newBoot: true}},
		{name: "up to date: nothing to do",
			s:    snap([]Policy{a1}, available("a", 1, boot, "d-a")),
			want: want{}},
		{name: "a capture that found nothing yet is reported once and looked at again later",
			s: snap([]Policy{{Name: "c", Generation: 1, Capture: map[string]string{"nic": `interfaces.name=="eth9"`},
				CaptureError: "spec.capture.nic: no interface has name == \"eth9\"", CaptureRetry: true}},
				enactment("c", 1, shared.EnactmentFailing, "spec.capture.nic: no interface has name == \"eth9\"", "", nil)),
			want: want{requeue: captureRetry, jitter: true}},
		{name: "a capture that does not parse is not looked at again",
			s: snap([]Policy{{Name: "c", Generation: 1, Capture: map[string]string{"nic": `interfaces.name="eth9"`},
				CaptureError: "spec.capture.nic: expected"}},
				enactment("c", 1, shared.EnactmentFailing, "spec.capture.nic: expected", "", nil)),
			want: want{}},
		{name: "up to date, and what this process committed: nothing to do",
			s: func() Snapshot {
				s := snap([]Policy{a1}, available("a", 1, boot, "d-a"))
				s.Committed = commitKey(boot, Compose(backend.NMState{}, []Policy{a1}))
				return s
			}(),
			want: want{}},
		{name: "etcd restored to before a policy was created: enactments up to date, the node still has it: applied without it",
			s: func() Snapshot {
				s := snap([]Policy{a1}, available("a", 1, boot, "d-a"))
				s.Committed = commitKey(boot, Compose(backend.NMState{}, []Policy{a1, b1}))
				return s
			}(),
			want: want{apply: []string{"d-a"}, settle: true}},
		{name: "etcd restored to before a policy was deleted: its enactment says Available, the node no longer has it: applied again",
			s: func() Snapshot {
				s := snap([]Policy{a1, b1}, available("a", 1, boot, "d-a"), available("b", 1, boot, "d-b"))
				s.Committed = commitKey(boot, Compose(backend.NMState{}, []Policy{a1}))
				return s
			}(),
			want: want{apply: []string{"d-a", "d-b"}, settle: true}},
		{name: "up to date but drift to undo: applied again",
			s:    func() Snapshot { s := snap([]Policy{a1}, available("a", 1, boot, "d-a")); s.Reapply = true; return s }(),
			want: want{apply: []string{"d-a"}, settle: true}},
		{name: "already committed in this process: no transaction, still settled",
			s: func() Snapshot {
				s := snap([]Policy{a1}, enactment("a", 1, shared.EnactmentFailing, driftMessage(driftPrefix+"x"), boot, dummyState("d-a")))
				s.Committed = commitKey(boot, Compose(backend.NMState{}, []Policy{a1}))
				return s
			}(),
			want: want{settle: true}},
		{name: "drift is reported Failing, and the policy stays in effect",
			s: func() Snapshot {
				s := snap([]Policy{a1}, available("a", 1, boot, "d-a"))
				s.Drifted = map[string]string{"a": driftPrefix + "d-a: down"}
				return s
			}(),
			want: want{updates: map[string]string{"a": "Failing: " + driftPrefix + "d-a: down (annotate"}, settle: true}},
		{name: "refused while the overlay is degraded",
			s:    func() Snapshot { s := snap([]Policy{a1, b1}); s.Degraded = "upper dir not tmpfs"; return s }(),
			want: want{updates: map[string]string{"a": "Failing: " + shared.MessageRefusedDegraded + "upper dir", "b": "Failing: " + shared.MessageRefusedDegraded + "upper dir"}, requeue: degradedRetry}},
		{name: "a probe failure holds the generation for its backoff whatever else changes, the last applied state stays",
			s: func() Snapshot {
				s := snap([]Policy{a2, b1}, enactment("a", 2, shared.EnactmentFailing, "probe gateway failed", boot, dummyState("d-a")),
					available("b", 1, boot, "d-b"))
				s.Failures = map[string]Failure{"a": {Generation: 2, ByProbe: true, Policies: "a/2 ", Message: "probe gateway failed", RetryAt: t0.Add(30 * time.Second)}}
				return s
			}(),
			want: want{updates: map[string]string{"a": "Failing: probe gateway failed"}, requeue: 30 * time.Second, apply: []string{"d-a", "d-b"}, settle: true}},
		{name: "a failure that did not converge is held while the node's policies are the same",
			s: func() Snapshot {
				s := snap([]Policy{a2}, enactment("a", 2, shared.EnactmentFailing, "did not converge", boot, dummyState("d-a")))
				s.Failures = map[string]Failure{"a": {Generation: 2, Policies: "a/2 ", Message: "did not converge", RetryAt: t0.Add(time.Minute)}}
				return s
			}(),
			want: want{updates: map[string]string{"a": "Failing: did not converge"}, requeue: time.Minute, apply: []string{"d-a"}, settle: true}},
		{name: "a failure that did not converge is tried again once the node's policies change",
			s: func() Snapshot {
				s := snap([]Policy{a2, b1}, enactment("a", 2, shared.EnactmentFailing, "did not converge", boot, dummyState("d-a")),
					available("b", 1, boot, "d-b"))
				s.Failures = map[string]Failure{"a": {Generation: 2, Policies: "a/2 ", Message: "did not converge", RetryAt: t0.Add(time.Minute)}}
				return s
			}(),
			want: want{apply: []string{"d-a2", "d-b"}, settle: true}},
		{name: "a held generation never applied here is left out",
			s: func() Snapshot {
				s := snap([]Policy{a1}, enactment("a", 1, shared.EnactmentFailing, "probe failed", "", nil))
				s.Failures = map[string]Failure{"a": {Generation: 1, ByProbe: true, Message: "probe failed", RetryAt: t0.Add(time.Minute)}}
				return s
			}(),
			want: want{updates: map[string]string{"a": "Failing: probe failed"}, requeue: time.Minute, apply: []string{}, settle: true}},
		{name: "an expired backoff: tried again",
			s: func() Snapshot {
				s := snap([]Policy{a1}, enactment("a", 1, shared.EnactmentFailing, "probe failed", "", nil))
				s.Failures = map[string]Failure{"a": {Generation: 1, ByProbe: true, Message: "probe failed", RetryAt: t0.Add(-time.Second)}}
				return s
			}(),
			want: want{apply: []string{"d-a"}, settle: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.s)
			if tc.want.apply != nil && len(tc.want.apply) == 0 {
				tc.want.apply = nil // the empty state differs from the committed "": applied, with no interface
				if !d.Apply {
					t.Errorf("no transaction, want one of the empty state")
				}
			}
			check(t, d, tc.want)
		})
	}
}

func TestSettle(t *testing.T) {
	a1, b1, c1 := pol("a", 1, "d-a"), pol("b", 1, "d-b"), pol("c", 1, "d-c")
	invalid := Policy{Name: "bad", Generation: 3, DesiredState: []byte(`{"interfaces":[{"name":"x","type":"dummy","state":"sideways"}]}`)}
	conflictX, conflictY := pol("x", 1, "d-same"), pol("y", 1, "d-same")
	conflictY.DesiredState = []byte(`{"interfaces":[{"name":"d-same","type":"dummy","state":"absent"}]}`)
	slotFor := func(p Policy) *v1beta1.NodeNetworkConfigurationEnactment { return grantOf(p.Name, p.Generation) }
	busy := &backend.BusyError{Reason: "waiting: another tool holds NetworkManager checkpoint /org/freedesktop/NetworkManager/Checkpoint/7 (no rollback timeout)"}

	for _, tc := range []struct {
		name     string
		s        Snapshot
		applyErr error
		want     want
	}{
		{name: "applied: Available with the boot and the desired state",
			s:    snap([]Policy{a1}, slotFor(a1)),
			want: want{apply: []string{"d-a"}, settle: true, updates: map[string]string{"a": "Available: applied in boot " + boot}}},
		{name: "an invalid policy fails alone, with its field path; the others apply",
			s: snap([]Policy{a1, invalid}, slotFor(a1)),
			want: want{apply: []string{"d-a"}, settle: true, updates: map[string]string{"a": "Available: ",
				"bad": "Failing: spec.desiredState: interfaces[0].state"}}},
		{name: "two conflicting policies fail together; the third applies",
			s: snap([]Policy{a1, conflictX, conflictY}, slotFor(a1)),
			want: want{apply: []string{"d-a"}, settle: true, updates: map[string]string{"a": "Available: ",
				"x": "Failing: spec.desiredState.", "y": "Failing: spec.desiredState."}}},
		{name: "a rollback fails every new policy when nothing points at one",
			s:        snap([]Policy{a1, b1}, slotFor(a1), slotFor(b1)),
			applyErr: errors.New("did not converge; rolled back"),
			want: want{apply: []string{"d-a", "d-b"}, settle: true, failed: []string{"a", "b"},
				updates: map[string]string{"a": "Failing: did not converge", "b": "Failing: did not converge"}}},
		{name: "an interface that would not activate fails its own policy; the innocent one is tried again at once",
			s:        snap([]Policy{a1, b1}, slotFor(a1), slotFor(b1)),
			applyErr: &backend.ApplyError{Reason: "d-b: waiting for an IP address", Interfaces: []string{"d-b"}},
			want: want{apply: []string{"d-a", "d-b"}, settle: true, failed: []string{"b"}, requeue: atOnce,
				updates: map[string]string{"b": "Failing: d-b: waiting for an IP address"}}},
		{name: "suspects after a retry that did not converge: the policy that failed before",
			s: func() Snapshot {
				s := snap([]Policy{a1, b1}, slotFor(a1), enactment("b", 1, shared.EnactmentFailing, "did not converge", "", nil))
				s.Failures = map[string]Failure{"b": {Generation: 1, Policies: "b/1 ", Message: "did not converge", RetryAt: t0.Add(-time.Second)}}
				return s
			}(),
			applyErr: &backend.ApplyError{Reason: "did not converge"},
			want: want{apply: []string{"d-a", "d-b"}, settle: true, failed: []string{"b"}, requeue: atOnce,
				updates: map[string]string{"b": "Failing: did not converge"}}},
		{name: "a policy the backend refused before any change fails alone, with its reason; the other is tried again at once",
			s:        snap([]Policy{a1, b1}, slotFor(a1), slotFor(b1)),
			applyErr: &backend.PoliciesRefused{Reasons: map[string]string{"b": "netplan: 90-nmoverlay-b.yaml:1:2: Error"}},
			want: want{apply: []string{"d-a", "d-b"}, settle: true, failed: []string{"b"}, requeue: atOnce,
				updates: map[string]string{"b": "Failing: netplan: 90-nmoverlay-b.yaml:1:2: Error"}}},
		{name: "a policy the backend's own check refused fails alone, like an invalid one",
			s: func() Snapshot {
				b := b1
				b.Refused = "spec.desiredState: netplan: 90-nmoverlay-b.yaml:1:2: Error"
				return snap([]Policy{a1, b}, slotFor(a1))
			}(),
			want: want{apply: []string{"d-a"}, settle: true, updates: map[string]string{"a": "Available: ",
				"b": "Failing: spec.desiredState: netplan: 90-nmoverlay-b.yaml"}}},
		{name: "a probe failure is recorded as one",
			s:        snap([]Policy{a1}, slotFor(a1)),
			applyErr: probeFailure{errors.New("probe gateway failed; rolled back")},
			want: want{apply: []string{"d-a"}, settle: true, failed: []string{"a"},
				updates: map[string]string{"a": "Failing: probe gateway failed"}}},
		{name: "another tool's checkpoint: Progressing, nobody failed, look again soon",
			s:        snap([]Policy{a1}, slotFor(a1)),
			applyErr: busy,
			want: want{apply: []string{"d-a"}, settle: true, requeue: busyRetry, jitter: true,
				updates: map[string]string{"a": "Progressing: " + busy.Error()}}},
		{name: "a restarted handler rewords a Failing message as it words it, with no transaction",
			s: snap([]Policy{a1, {Name: "bad", Generation: 1, DesiredState: []byte(`{"interfaces":[{"name":"x","type":"no-such-type"}]}`)}},
				available("a", 1, boot, "d-a"), enactment("bad", 1, shared.EnactmentFailing, "worded by an earlier release", "", nil)),
			want: want{settle: true, updates: map[string]string{"bad": "Failing: spec.desiredState"}}},
		{name: "a policy that no longer selects the node: its enactment goes once pruned",
			s:    snap([]Policy{a1}, available("a", 1, boot, "d-a"), available("gone", 4, boot, "d-g")),
			want: want{apply: []string{"d-a"}, settle: true, updates: map[string]string{"gone": "delete"}}},
		{name: "a policy that no longer selects the node: it stays and says why when the prune failed",
			s:        snap([]Policy{a1}, available("a", 1, boot, "d-a"), available("gone", 4, boot, "d-g")),
			applyErr: errors.New("NetworkManager said no; rolled back"),
			want: want{apply: []string{"d-a"}, settle: true,
				updates: map[string]string{"gone": "Failing: removing this policy's changes from the node failed: NetworkManager said no"}}},
		{name: "a policy in effect is not reported again with a new one",
			s:    snap([]Policy{a1, c1}, available("a", 1, boot, "d-a"), slotFor(c1)),
			want: want{apply: []string{"d-a", "d-c"}, settle: true, updates: map[string]string{"c": "Available: "}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.s)
			if !d.Settle {
				t.Fatalf("Decide did not reach the apply: %+v", d)
			}
			check(t, Settle(tc.s, d, tc.applyErr), tc.want)
		})
	}
}

func TestSettleAvailableRecordsWhatWasApplied(t *testing.T) {
	a1 := pol("a", 1, "d-a")
	s := snap([]Policy{a1}, grantOf("a", 1))
	d := Settle(s, Decide(s), nil)
	e := s.Enactments["a"].DeepCopy()
	d.Updates["a"].applyTo(e)
	if e.Status.BootID != boot || string(e.Status.DesiredState.Raw) != string(a1.DesiredState) || e.Status.PolicyGeneration != 1 {
		t.Errorf("Available records boot %q, generation %d, state %s", e.Status.BootID, e.Status.PolicyGeneration, e.Status.DesiredState.Raw)
	}
	if !slices.Equal(d.Succeeded, []string{"a"}) {
		t.Errorf("Succeeded = %v", d.Succeeded)
	}
	if d.Updates["a"].changes(e) {
		t.Error("an update written once still changes the enactment")
	}
}

func TestFailuresBackOffByGeneration(t *testing.T) {
	var f failures
	s := snap([]Policy{pol("a", 1, "d-a")})
	fail := Decision{Failed: map[string]Failure{"a": {Generation: 1, Message: "x"}}}
	var waits []time.Duration
	for range 6 {
		f.record(s, fail)
		waits = append(waits, f.byPolicy["a"].RetryAt.Sub(s.Now))
	}
	wantWaits := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 10 * time.Minute}
	if !slices.Equal(waits, wantWaits) {
		t.Errorf("backoff %v, want %v", waits, wantWaits)
	}
	f.record(s, Decision{Failed: map[string]Failure{"a": {Generation: 2, Message: "y"}}})
	if got := f.byPolicy["a"].RetryAt.Sub(s.Now); got != 30*time.Second {
		t.Errorf("a new generation waits %v, want the initial 30s", got)
	}
	f.record(s, Decision{Succeeded: []string{"a"}})
	if _, ok := f.byPolicy["a"]; ok {
		t.Error("an applied policy is still in the failure history")
	}
}
