//go:build integration

package integration_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/reconciler/node"
	"github.com/nmoverlay/nmoverlay/reconciler/state"
	"github.com/nmoverlay/nmoverlay/test/simnode"
)

func ifaceNames(s state.State) []string {
	var n []string
	for _, it := range s.Interfaces {
		n = append(n, it.Name)
	}
	return n
}

func enactment(nodeName, policy string) func() *v1beta1.NodeNetworkConfigurationEnactment {
	return func() *v1beta1.NodeNetworkConfigurationEnactment {
		e := &v1beta1.NodeNetworkConfigurationEnactment{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: shared.EnactmentKey(nodeName, policy)}, e); err != nil {
			return nil
		}
		return e
	}
}

// HaveEnactmentCondition matches an enactment whose condition is True with that reason
// and a message containing msg: the handler's own condition setters, as a matcher.
func HaveEnactmentCondition(condType, reason, msg string) OmegaMatcher {
	return WithTransform(func(e *v1beta1.NodeNetworkConfigurationEnactment) string {
		if e == nil {
			return "<no enactment>"
		}
		for _, c := range e.Status.Conditions {
			if c.Type == condType && c.Status == metav1.ConditionTrue {
				return c.Reason + ": " + c.Message
			}
		}
		return fmt.Sprintf("%v", e.Status.Conditions)
	}, SatisfyAll(HavePrefix(reason+": "), ContainSubstring(msg)))
}

// policyEvents lists the events about a policy as "type reason note".
func policyEvents(policy string) []string {
	list := &eventsv1.EventList{}
	Expect(k8s.List(context.Background(), list)).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "NodeNetworkConfigurationPolicy" && e.Regarding.Name == policy {
			out = append(out, e.Type+" "+e.Reason+" "+e.Note)
		}
	}
	return out
}

func policy(name string, selector map[string]string, desired string) *nmstatev1.NodeNetworkConfigurationPolicy {
	p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.Spec.NodeSelector = selector
	p.Spec.DesiredState = shared.State{Raw: []byte(desired)}
	return p
}

var _ = Describe("the per-node handler", Ordered, func() {
	ctx := context.Background()
	worker := map[string]string{"role": "worker"}
	var nodes []*simnode.Node

	BeforeAll(func() {
		DeferCleanup(func() {
			for _, n := range nodes {
				Expect(n.Stop()).To(Succeed())
			}
		})
		for i, name := range []string{"node-a", "node-b", "node-c"} {
			labels := map[string]string{"kubernetes.io/hostname": name}
			if i < 2 {
				labels["role"] = "worker"
			}
			Expect(k8s.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})).To(Succeed())
			n := simnode.New(name, cfg, k8s.Scheme())
			Expect(n.Start()).To(Succeed())
			nodes = append(nodes, n)
		}
	})

	It("applies a policy on the nodes it selects and reports one enactment each", func() {
		Expect(k8s.Create(ctx, policy("br1", worker, `{"interfaces":[{"name":"br1","type":"linux-bridge","bridge":{"port":[{"name":"eth1"}]}}]}`))).To(Succeed())
		for _, n := range nodes[:2] {
			Eventually(enactment(n.Name, "br1"), "10s").Should(HaveEnactmentCondition(shared.EnactmentAvailable, shared.ReasonSuccessfullyConfigured, "boot-1"))
			applied, _ := n.Engine.Last()
			Expect(ifaceNames(applied)).To(ContainElement("br1"))
		}
		e := enactment("node-a", "br1")()
		Expect(e.Labels).To(Equal(map[string]string{shared.NodeLabel: "node-a", shared.PolicyLabel: "br1"}))
		Expect(e.OwnerReferences).To(ContainElement(HaveField("Kind", "Node")))
		Expect(e.Status.BootID).To(Equal("boot-1"))
		Consistently(enactment("node-c", "br1"), "1s").Should(BeNil(), "node-c is not selected")
	})

	It("fails an invalid policy alone, naming the field, and applies the others", func() {
		Expect(k8s.Create(ctx, policy("bad-vlan", worker, `{"interfaces":[{"name":"v1","type":"vlan","vlan":{"id":5000,"base-iface":"eth1"}}]}`))).To(Succeed())
		Eventually(enactment("node-a", "bad-vlan"), "10s").Should(HaveEnactmentCondition(shared.EnactmentFailing, shared.ReasonFailedToConfigure,
			"interfaces[0].vlan.id: 5000 is out of range 1..4094"))
		applied, _ := nodes[0].Engine.Last()
		Expect(ifaceNames(applied)).NotTo(ContainElement("v1"))
		Expect(enactment("node-a", "br1")()).To(HaveEnactmentCondition(shared.EnactmentAvailable, shared.ReasonSuccessfullyConfigured, ""))
	})

	It("tells operators on the policy what failed on each node, and leaves success to the controller", func() {
		Eventually(func() []string { return policyEvents("bad-vlan") }, "10s").Should(ContainElement(
			ContainSubstring("Warning FailedToConfigure node node-a: spec.desiredState: interfaces[0].vlan.id: 5000 is out of range")))
		Consistently(func() []string { return policyEvents("br1") }, "1s").Should(BeEmpty(),
			"no event per node for a success: the controller tells it once per policy")
	})

	It("fails two conflicting policies, each naming the other", func() {
		Expect(k8s.Create(ctx, policy("mtu-9000", worker, `{"interfaces":[{"name":"eth2","type":"ethernet","mtu":9000}]}`))).To(Succeed())
		Expect(k8s.Create(ctx, policy("mtu-1500", worker, `{"interfaces":[{"name":"eth2","type":"ethernet","mtu":1500}]}`))).To(Succeed())
		Eventually(enactment("node-b", "mtu-9000"), "10s").Should(HaveEnactmentCondition(shared.EnactmentFailing, shared.ReasonFailedToConfigure, `"mtu-1500"`))
		Eventually(enactment("node-b", "mtu-1500"), "10s").Should(HaveEnactmentCondition(shared.EnactmentFailing, shared.ReasonFailedToConfigure, `"mtu-9000"`))
		Expect(k8s.Delete(ctx, policy("mtu-1500", nil, ""))).To(Succeed())
		Eventually(enactment("node-b", "mtu-9000"), "10s").Should(HaveEnactmentCondition(shared.EnactmentAvailable, shared.ReasonSuccessfullyConfigured, ""))
		Eventually(enactment("node-b", "mtu-1500"), "10s").Should(BeNil(), "a deleted policy's enactment goes")
	})

	It("reports a state that did not converge as failing, with the engine's reason", func() {
		Expect(k8s.Create(ctx, policy("broken", map[string]string{"kubernetes.io/hostname": "node-a"}, `{"interfaces":[{"name":"broken0","type":"dummy"}]}`))).To(Succeed())
		Eventually(enactment("node-a", "broken"), "10s").Should(HaveEnactmentCondition(shared.EnactmentFailing, shared.ReasonFailedToConfigure, "broken0: does not exist"))
		Expect(k8s.Delete(ctx, policy("broken", nil, ""))).To(Succeed())
		Eventually(enactment("node-a", "br1"), "10s").Should(HaveEnactmentCondition(shared.EnactmentAvailable, shared.ReasonSuccessfullyConfigured, ""))
	})

	It("rolls back a change that breaks a probe, naming the probe", func() {
		Expect(k8s.Create(ctx, policy("cut-gateway", map[string]string{"kubernetes.io/hostname": "node-a"}, `{"interfaces":[{"name":"cutgw0","type":"dummy"}]}`))).To(Succeed())
		Eventually(enactment("node-a", "cut-gateway"), "10s").Should(HaveEnactmentCondition(shared.EnactmentFailing, shared.ReasonFailedToConfigure,
			"probe default-gateway failed: no echo reply from 192.0.2.1"))
		Eventually(nodes[0].Engine.Rollbacks).Should(BeNumerically(">=", 1))
		Expect(enactment("node-a", "br1")()).To(HaveEnactmentCondition(shared.EnactmentAvailable, shared.ReasonSuccessfullyConfigured, ""),
			"the policies in effect stay in effect")
		Expect(k8s.Delete(ctx, policy("cut-gateway", nil, ""))).To(Succeed())
		Eventually(enactment("node-a", "cut-gateway"), "10s").Should(BeNil())
		for _, s := range nodes[0].Engine.Committed() {
			Expect(ifaceNames(s)).NotTo(ContainElement("cutgw0"), "a change that failed its probe is never committed")
		}
	})

	It("keeps a policy that failed out of later passes until its backoff ends", func() {
		nodeA := map[string]string{"kubernetes.io/hostname": "node-a"}
		rollbacks := nodes[0].Engine.Rollbacks()
		Expect(k8s.Create(ctx, policy("cut-again", nodeA, `{"interfaces":[{"name":"cutgw0","type":"dummy"}]}`))).To(Succeed())
		Eventually(enactment("node-a", "cut-again"), "10s").Should(HaveEnactmentCondition(shared.EnactmentFailing, shared.ReasonFailedToConfigure, "probe default-gateway failed"))
		Expect(k8s.Create(ctx, policy("after-cut", nodeA, `{"interfaces":[{"name":"eth8","type":"ethernet","mtu":1300}]}`))).To(Succeed())
		Eventually(enactment("node-a", "after-cut"), "10s").Should(HaveEnactmentCondition(shared.EnactmentAvailable, shared.ReasonSuccessfullyConfigured, ""),
			"a policy created after a failed one is not failed with it")
		Consistently(nodes[0].Engine.Rollbacks, "3s").Should(Equal(rollbacks+1), "the failed change is not tried again at once")
		applied, _ := nodes[0].Engine.Last()
		Expect(ifaceNames(applied)).To(SatisfyAll(ContainElement("eth8"), Not(ContainElement("cutgw0"))))
		for _, p := range []string{"cut-again", "after-cut"} {
			Expect(k8s.Delete(ctx, policy(p, nil, ""))).To(Succeed())
			Eventually(enactment("node-a", p), "10s").Should(BeNil())
		}
	})

	It("tries a policy that did not converge again when the node's policies change, not before", func() {
		nodeA := map[string]string{"kubernetes.io/hostname": "node-a"}
		Expect(k8s.Create(ctx, policy("not-yet", nodeA, `{"interfaces":[{"name":"broken0","type":"dummy"}]}`))).To(Succeed())
		Eventually(enactment("node-a", "not-yet"), "10s").Should(HaveEnactmentCondition(shared.EnactmentFailing, shared.ReasonFailedToConfigure, "broken0"))
		applies := nodes[0].Engine.Applies()
		Consistently(nodes[0].Engine.Applies, "2s").Should(Equal(applies), "no retry at once")
		Expect(k8s.Create(ctx, policy("brings-more", nodeA, `{"interfaces":[{"name":"eth10","type":"ethernet","mtu":1280}]}`))).To(Succeed())
		Eventually(enactment("node-a", "brings-more"), "10s").Should(HaveEnactmentCondition(shared.EnactmentAvailable, shared.ReasonSuccessfullyConfigured, ""))
		Expect(nodes[0].Engine.Applies()).To(BeNumerically(">=", applies+2), "with the new policy, then without the one that still fails")
		for _, p := range []string{"not-yet", "brings-more"} {
			Expect(k8s.Delete(ctx, policy(p, nil, ""))).To(Succeed())
			Eventually(enactment("node-a", p), "10s").Should(BeNil())
		}
	})

	It("keeps the last applied generation in effect while a new one fails", func() {
		nodeB := map[string]string{"kubernetes.io/hostname": "node-b"}
		p := policy("gen-keep", nodeB, `{"interfaces":[{"name":"eth6","type":"ethernet","mtu":1400}]}`)
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Eventually(enactment("node-b", "gen-keep"), "10s").Should(HaveEnactmentCondition(shared.EnactmentAvailable, shared.ReasonSuccessfullyConfigured, ""))
		Expect(string(enactment("node-b", "gen-keep")().Status.DesiredState.Raw)).To(ContainSubstring(`"mtu":1400`), "the enactment records what it applied")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
		p.Spec.DesiredState = shared.State{Raw: []byte(`{"interfaces":[{"name":"eth6","type":"ethernet","mtu":1400},{"name":"cutgw0","type":"dummy"}]}`)}
		Expect(k8s.Update(ctx, p)).To(Succeed())
		Eventually(enactment("node-b", "gen-keep"), "10s").Should(HaveEnactmentCondition(shared.EnactmentFailing, shared.ReasonFailedToConfigure, "probe default-gateway failed"))
		// Another policy makes the node apply again: generation 1 of gen-keep stays.
		Expect(k8s.Create(ctx, policy("gen-other", nodeB, `{"interfaces":[{"name":"eth4","type":"ethernet","mtu":1500}]}`))).To(Succeed())
		Eventually(enactment("node-b", "gen-other"), "10s").Should(HaveEnactmentCondition(shared.EnactmentAvailable, shared.ReasonSuccessfullyConfigured, ""))
		applied, _ := nodes[1].Engine.Last()
		Expect(ifaceNames(applied)).To(SatisfyAll(ContainElement("eth6"), ContainElement("eth4"), Not(ContainElement("cutgw0"))),
			"eth6 is not pruned because its policy's new generation failed")
		for _, name := range []string{"gen-keep", "gen-other"} {
			Expect(k8s.Delete(ctx, policy(name, nil, ""))).To(Succeed())
			Eventually(enactment("node-b", name), "10s").Should(BeNil())
		}
	})

	It("re-evaluates selection when a node's labels change", func() {
		n := &corev1.Node{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "node-c"}, n)).To(Succeed())
		n.Labels["role"] = "worker"
		Expect(k8s.Update(ctx, n)).To(Succeed())
		Eventually(enactment("node-c", "br1"), "10s").Should(HaveEnactmentCondition(shared.EnactmentAvailable, shared.ReasonSuccessfullyConfigured, ""))

		Expect(k8s.Get(ctx, client.ObjectKey{Name: "node-c"}, n)).To(Succeed())
		delete(n.Labels, "role")
		Expect(k8s.Update(ctx, n)).To(Succeed())
		Eventually(enactment("node-c", "br1"), "10s").Should(BeNil())
		Eventually(func() []string { s, _ := nodes[2].Engine.Last(); return ifaceNames(s) }, "10s").ShouldNot(ContainElement("br1"),
			"the node goes back to its persistent configuration: the engine is given a state without br1")
	})

	It("re-applies every policy in one pass after a reboot", func() {
		_, before := nodes[0].Engine.Last()
		Expect(nodes[0].Reboot("boot-2")).To(Succeed())
		Eventually(enactment("node-a", "br1"), "10s").Should(HaveEnactmentCondition(shared.EnactmentAvailable, shared.ReasonSuccessfullyConfigured, "boot-2"))
		Eventually(enactment("node-a", "mtu-9000"), "10s").Should(HaveEnactmentCondition(shared.EnactmentAvailable, shared.ReasonSuccessfullyConfigured, "boot-2"))
		since := nodes[0].Engine.Committed()[before:]
		Expect(since).To(HaveLen(1), "one transaction for the whole node")
		Expect(ifaceNames(since[0])).To(ConsistOf("br1", "eth2"))
		Consistently(func() int { _, n := nodes[0].Engine.Last(); return n }, "1s").Should(Equal(before+1), "nothing more to do")
	})

	It("refuses every policy while the node's overlay is degraded", func() {
		nodes[1].SetDegraded("upper-on-tmpfs: /run/nmoverlay/upper is not on tmpfs")
		_, before := nodes[1].Engine.Last()
		Expect(k8s.Create(ctx, policy("eth3-up", worker, `{"interfaces":[{"name":"eth3","type":"ethernet","state":"up"}]}`))).To(Succeed())
		Eventually(enactment("node-b", "eth3-up"), "10s").Should(HaveEnactmentCondition(shared.EnactmentFailing, shared.ReasonFailedToConfigure, "overlay is degraded"))
		Expect(enactment("node-b", "br1")()).To(HaveEnactmentCondition(shared.EnactmentFailing, shared.ReasonFailedToConfigure, "upper-on-tmpfs"))
		_, after := nodes[1].Engine.Last()
		Expect(after).To(Equal(before), "nothing applied")
	})

	It("waits for a rollout slot held by a ready node, and takes it when that node is not ready", func() {
		ghost := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ghost", Labels: map[string]string{"rollout": "yes"}}}
		Expect(k8s.Create(ctx, ghost)).To(Succeed())
		setReady := func(ready corev1.ConditionStatus) {
			Expect(k8s.Get(ctx, client.ObjectKey{Name: "ghost"}, ghost)).To(Succeed())
			ghost.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
			Expect(k8s.Status().Update(ctx, ghost)).To(Succeed())
		}
		setReady(corev1.ConditionTrue)
		// The ghost node claimed the only slot of generation 1 a moment ago.
		claim := func(generation int64, since metav1.Time) {
			e := &v1beta1.NodeNetworkConfigurationEnactment{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: "ghost.rollout"}, e); err != nil {
				e = &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: "ghost.rollout",
					Labels: map[string]string{shared.NodeLabel: "ghost", shared.PolicyLabel: "rollout"}}}
				Expect(k8s.Create(ctx, e)).To(Succeed())
			}
			e.Status.PolicyGeneration = generation
			e.Status.Conditions = []metav1.Condition{{Type: shared.EnactmentProgressing, Status: metav1.ConditionTrue,
				Reason: shared.ReasonConfigurationProgressing, LastTransitionTime: since}}
			Expect(k8s.Status().Update(ctx, e)).To(Succeed())
		}
		claim(1, metav1.Now())
		one := intstr.FromInt32(1)
		p := policy("rollout", map[string]string{"rollout": "yes"}, `{"interfaces":[{"name":"eth7","type":"ethernet","mtu":1400}]}`)
		p.Spec.MaxUnavailable = &one
		n := &corev1.Node{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "node-a"}, n)).To(Succeed())
		n.Labels["rollout"] = "yes"
		Expect(k8s.Update(ctx, n)).To(Succeed())
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Eventually(enactment("node-a", "rollout"), "10s").Should(HaveEnactmentCondition(shared.EnactmentPending, shared.ReasonMaxUnavailableLimitReached, "waiting for a rollout slot: rollout: 1 of 2 nodes may apply it at once"))
		Consistently(enactment("node-a", "rollout"), "3s").Should(HaveEnactmentCondition(shared.EnactmentPending, shared.ReasonMaxUnavailableLimitReached, ""))
		applied, _ := nodes[0].Engine.Last()
		Expect(ifaceNames(applied)).NotTo(ContainElement("eth7"), "nothing applied while waiting")

		setReady(corev1.ConditionFalse) // the node holding the slot rebooted: its claim no longer counts
		Eventually(enactment("node-a", "rollout"), "10s").Should(HaveEnactmentCondition(shared.EnactmentAvailable, shared.ReasonSuccessfullyConfigured, ""))

		// Generation 2: the ghost's claim is ready but stale (a handler that died mid-apply).
		setReady(corev1.ConditionTrue)
		claim(2, metav1.NewTime(time.Now().Add(-10*time.Minute)))
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "rollout"}, p)).To(Succeed())
		p.Spec.DesiredState = shared.State{Raw: []byte(`{"interfaces":[{"name":"eth7","type":"ethernet","mtu":1500}]}`)}
		Expect(k8s.Update(ctx, p)).To(Succeed())
		Eventually(func() int64 {
			e := enactment("node-a", "rollout")()
			if e == nil || !node.IsTrue(e, shared.EnactmentAvailable, "") {
				return 0
			}
			return e.Status.PolicyGeneration
		}, "10s").Should(Equal(int64(2)))
	})

	It("takes another name when its enactment's name is held by another node's (names with dots collide), and says so", func() {
		// Node worker.a with policy x and node worker with policy a.x both name theirs
		// worker.a.x: here node-c.p is already node "node-c.q"'s (its policy "p" reads "q.p").
		theirs := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: shared.EnactmentKey("node-c", "p"),
			Labels: map[string]string{shared.NodeLabel: "node-c.q", shared.PolicyLabel: "q.p"}}}
		Expect(k8s.Create(ctx, theirs)).To(Succeed())
		Expect(k8s.Create(ctx, policy("p", map[string]string{"kubernetes.io/hostname": "node-c"}, `{"interfaces":[{"name":"eth5","type":"ethernet","mtu":1400}]}`))).To(Succeed())
		var mine v1beta1.NodeNetworkConfigurationEnactment
		Eventually(func() string {
			list := &v1beta1.NodeNetworkConfigurationEnactmentList{}
			Expect(k8s.List(ctx, list, client.MatchingLabels{shared.NodeLabel: "node-c", shared.PolicyLabel: "p"})).To(Succeed())
			if len(list.Items) != 1 {
				return fmt.Sprintf("%d enactments", len(list.Items))
			}
			mine = list.Items[0]
			return mine.Name
		}, "10s").Should(MatchRegexp(`^node-c\.p-[a-z0-9]{8}$`))
		Eventually(func() *v1beta1.NodeNetworkConfigurationEnactment {
			e := &v1beta1.NodeNetworkConfigurationEnactment{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&mine), e)).To(Succeed())
			return e
		}, "10s").Should(HaveEnactmentCondition(shared.EnactmentAvailable, shared.ReasonSuccessfullyConfigured, ""))
		Eventually(func() []string { return policyEvents("p") }, "10s").Should(ContainElement(
			ContainSubstring(`Warning EnactmentNameTaken node node-c: enactment name node-c.p is taken by node "node-c.q" (policy "q.p"); this node's enactment is ` + mine.Name)))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(theirs), theirs)).To(Succeed())
		Expect(theirs.Status.Conditions).To(BeEmpty(), "the other node's enactment was written")
		Expect(k8s.Delete(ctx, policy("p", nil, `{}`))).To(Succeed())
		Expect(k8s.Delete(ctx, theirs)).To(Succeed())
	})

	It("keeps working when an enactment is deleted by hand", func() {
		e := enactment("node-a", "br1")()
		Expect(k8s.Delete(ctx, e)).To(Succeed())
		Eventually(func() bool {
			got := enactment("node-a", "br1")()
			return got != nil && got.UID != e.UID
		}, "10s").Should(BeTrue())
		Eventually(enactment("node-a", "br1"), "10s").Should(HaveEnactmentCondition(shared.EnactmentAvailable, shared.ReasonSuccessfullyConfigured, ""))
	})
})

// metricValue sums the samples of a metric whose labels include labels, from the
// registry the handlers of this process serve.
func metricValue(name string, labels map[string]string) float64 {
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	sample:
		for _, m := range f.GetMetric() {
			for k, v := range labels {
				found := false
				for _, l := range m.GetLabel() {
					found = found || (l.GetName() == k && l.GetValue() == v)
				}
				if !found {
					continue sample
				}
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

var _ = Describe("the handler's metrics", func() {
	It("count applies by result, rollbacks by reason, and NodeNetworkState writes", func() {
		// Ginkgo runs the handler specs in this process too, in any order; whatever ran
		// before, a fresh node makes each of these move.
		ctx := context.Background()
		Expect(k8s.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "metrics-node", Labels: map[string]string{"metrics": "yes"}}})).To(Succeed())
		n := simnode.New("metrics-node", cfg, k8s.Scheme())
		Expect(n.Start()).To(Succeed())
		DeferCleanup(n.Stop)
		committed := metricValue("nmoverlay_apply_duration_seconds", map[string]string{"result": "committed"})
		probeRollbacks := metricValue("nmoverlay_rollbacks_total", map[string]string{"reason": "probe"})
		writes := metricValue("nmoverlay_nodenetworkstate_writes_total", nil)
		sel := map[string]string{"metrics": "yes"}
		Expect(k8s.Create(ctx, policy("metrics-ok", sel, `{"interfaces":[{"name":"eth9","type":"ethernet","mtu":1450}]}`))).To(Succeed())
		Eventually(enactment("metrics-node", "metrics-ok"), "10s").Should(HaveEnactmentCondition(shared.EnactmentAvailable, shared.ReasonSuccessfullyConfigured, ""))
		Expect(metricValue("nmoverlay_apply_duration_seconds", map[string]string{"result": "committed"})).To(BeNumerically(">", committed))
		Eventually(func() float64 { return metricValue("nmoverlay_nodenetworkstate_writes_total", nil) }, "10s").Should(BeNumerically(">", writes))
		Expect(k8s.Create(ctx, policy("metrics-cut", sel, `{"interfaces":[{"name":"cutgw0","type":"dummy"}]}`))).To(Succeed())
		Eventually(enactment("metrics-node", "metrics-cut"), "10s").Should(HaveEnactmentCondition(shared.EnactmentFailing, shared.ReasonFailedToConfigure, "probe default-gateway failed"))
		Expect(metricValue("nmoverlay_rollbacks_total", map[string]string{"reason": "probe"})).To(BeNumerically(">", probeRollbacks))
		for _, p := range []string{"metrics-ok", "metrics-cut"} {
			Expect(k8s.Delete(ctx, policy(p, nil, ""))).To(Succeed())
		}
	})
})
