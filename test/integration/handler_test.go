//go:build integration

package integration_test

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/node"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/kit"
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

// setDesiredState gives policy name a new desired state, again after a conflict: the
// controller writes the policy's status meanwhile.
func setDesiredState(name, desired string) {
	ctx := context.Background()
	p := &nmstatev1.NodeNetworkConfigurationPolicy{}
	Eventually(func() error {
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			return err
		}
		p.Spec.DesiredState = shared.State{Raw: []byte(desired)}
		return k8s.Update(ctx, p)
	}, "5s").Should(Succeed())
}

// world is one spec's own cluster part: simulated nodes (the real handler and reporter, a
// recording engine) whose names and labels no other spec uses, and the spec's policies,
// named after it. Specs set up their own world, so they run in any order.
type world struct {
	id    string
	nodes []*simnode.Node
	// sel selects every node of the world.
	sel map[string]string
}

var worlds int

// newWorld starts n Ready nodes named <id>-a, <id>-b, ... labelled world=<id> and
// kubernetes.io/hostname=<name>; labels add more to the node of that index. The nodes stop
// and the world's policies go when the spec ends.
func newWorld(n int, labels ...map[string]string) *world {
	GinkgoHelper()
	worlds++
	w := &world{id: fmt.Sprintf("w%d", worlds)}
	w.sel = map[string]string{"world": w.id}
	DeferCleanup(w.close)
	for i := range n {
		name := fmt.Sprintf("%s-%c", w.id, 'a'+i)
		l := map[string]string{"world": w.id, "kubernetes.io/hostname": name}
		if i < len(labels) {
			maps.Copy(l, labels[i])
		}
		_, err := kit.ReadyNode(context.Background(), k8s, name, l)
		Expect(err).NotTo(HaveOccurred())
		sn := simnode.New(name, cfg, k8s.Scheme())
		Expect(sn.Start()).To(Succeed())
		w.nodes = append(w.nodes, sn)
	}
	return w
}

func (w *world) close() {
	for _, n := range w.nodes {
		Expect(n.Stop()).To(Succeed())
	}
	list := &nmstatev1.NodeNetworkConfigurationPolicyList{}
	Expect(k8s.List(context.Background(), list)).To(Succeed())
	for i := range list.Items {
		if strings.HasPrefix(list.Items[i].Name, w.id+"-") {
			Expect(client.IgnoreNotFound(k8s.Delete(context.Background(), &list.Items[i]))).To(Succeed())
		}
	}
}

// node is the world's i-th node's name; on selects it alone.
func (w *world) node(i int) string { return w.nodes[i].Name }

func (w *world) on(i int) map[string]string {
	return map[string]string{"kubernetes.io/hostname": w.node(i)}
}

// policy creates the world's policy <id>-<name> and returns its name.
func (w *world) policy(name string, selector map[string]string, desired string) string {
	GinkgoHelper()
	p := policy(w.id+"-"+name, selector, desired)
	Expect(k8s.Create(context.Background(), p)).To(Succeed())
	return p.Name
}

func deletePolicy(name string) {
	GinkgoHelper()
	Expect(k8s.Delete(context.Background(), policy(name, nil, ""))).To(Succeed())
}

const (
	bridgeState = `{"interfaces":[{"name":"br1","type":"linux-bridge","bridge":{"port":[{"name":"eth1"}]}}]}`
	// cutState breaks the simulated nodes' gateway probe (simnode.Engine.GatewayProbe).
	cutState = `{"interfaces":[{"name":"cutgw0","type":"dummy"}]}`
	// brokenState never converges on the simulated nodes.
	brokenState = `{"interfaces":[{"name":"broken0","type":"dummy"}]}`
)

func available(msg string) OmegaMatcher {
	return HaveEnactmentCondition(shared.EnactmentAvailable, shared.ReasonSuccessfullyConfigured, msg)
}

func failing(msg string) OmegaMatcher {
	return HaveEnactmentCondition(shared.EnactmentFailing, shared.ReasonFailedToConfigure, msg)
}

var _ = Describe("the per-node handler", func() {
	ctx := context.Background()
	BeforeEach(func() {
		stop, err := kit.StartController(cfg, k8s.Scheme()) // it grants the nodes their rollout slots
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)
	})

	It("applies a policy on the nodes it selects and reports one enactment each", func() {
		w := newWorld(3, map[string]string{"role": "worker"}, map[string]string{"role": "worker"})
		br1 := w.policy("br1", map[string]string{"world": w.id, "role": "worker"}, bridgeState)
		for _, n := range w.nodes[:2] {
			Eventually(enactment(n.Name, br1), "10s").Should(available("boot-1"))
			applied, _ := n.Engine.Last()
			Expect(ifaceNames(applied)).To(ContainElement("br1"))
		}
		e := enactment(w.node(0), br1)()
		Expect(e.Labels).To(Equal(map[string]string{shared.NodeLabel: w.node(0), shared.PolicyLabel: br1}))
		Expect(e.OwnerReferences).To(ContainElement(HaveField("Kind", "Node")))
		Expect(e.Status.BootID).To(Equal("boot-1"))
		Consistently(enactment(w.node(2), br1), "1s").Should(BeNil(), "the third node is not selected")
	})

	It("fails an invalid policy alone, naming the field, and applies the others", func() {
		w := newWorld(1)
		br1 := w.policy("br1", w.sel, bridgeState)
		bad := w.policy("bad-vlan", w.sel, `{"interfaces":[{"name":"v1","type":"vlan","vlan":{"id":5000,"base-iface":"eth1"}}]}`)
		Eventually(enactment(w.node(0), bad), "10s").Should(failing("interfaces[0].vlan.id: 5000 is out of range 1..4094"))
		Eventually(enactment(w.node(0), br1), "10s").Should(available(""))
		applied, _ := w.nodes[0].Engine.Last()
		Expect(ifaceNames(applied)).To(SatisfyAll(ContainElement("br1"), Not(ContainElement("v1"))))
	})

	It("tells operators on the policy what failed on each node, and leaves success to the controller", func() {
		w := newWorld(1)
		br1 := w.policy("br1", w.sel, bridgeState)
		bad := w.policy("bad-vlan", w.sel, `{"interfaces":[{"name":"v1","type":"vlan","vlan":{"id":5000,"base-iface":"eth1"}}]}`)
		Eventually(enactment(w.node(0), br1), "10s").Should(available(""))
		Eventually(func() []string { return policyEvents(bad) }, "10s").Should(ContainElement(
			ContainSubstring("Warning FailedToConfigure node " + w.node(0) + ": spec.desiredState: interfaces[0].vlan.id: 5000 is out of range")))
		Consistently(func() []string { return policyEvents(br1) }, "1s").ShouldNot(ContainElement(ContainSubstring("node "+w.node(0))),
			"no event per node for a success: the controller tells it once per policy")
	})

	It("fails two conflicting policies, each naming the other", func() {
		w := newWorld(1)
		mtu9000 := w.policy("mtu-9000", w.sel, `{"interfaces":[{"name":"eth2","type":"ethernet","mtu":9000}]}`)
		mtu1500 := w.policy("mtu-1500", w.sel, `{"interfaces":[{"name":"eth2","type":"ethernet","mtu":1500}]}`)
		Eventually(enactment(w.node(0), mtu9000), "10s").Should(failing(`"` + mtu1500 + `"`))
		Eventually(enactment(w.node(0), mtu1500), "10s").Should(failing(`"` + mtu9000 + `"`))
		deletePolicy(mtu1500)
		Eventually(enactment(w.node(0), mtu9000), "10s").Should(available(""))
		Eventually(enactment(w.node(0), mtu1500), "10s").Should(BeNil(), "a deleted policy's enactment goes")
	})

	It("reports a state that did not converge as failing, with the engine's reason", func() {
		w := newWorld(1)
		br1 := w.policy("br1", w.sel, bridgeState)
		Eventually(enactment(w.node(0), br1), "10s").Should(available(""))
		broken := w.policy("broken", w.on(0), brokenState)
		Eventually(enactment(w.node(0), broken), "10s").Should(failing("broken0: does not exist"))
		deletePolicy(broken)
		Eventually(enactment(w.node(0), broken), "10s").Should(BeNil())
		Expect(enactment(w.node(0), br1)()).To(available(""))
	})

	It("rolls back a change that breaks a probe, naming the probe", func() {
		w := newWorld(1)
		n := w.nodes[0]
		br1 := w.policy("br1", w.sel, bridgeState)
		Eventually(enactment(n.Name, br1), "10s").Should(available(""))
		cut := w.policy("cut-gateway", w.on(0), cutState)
		Eventually(enactment(n.Name, cut), "10s").Should(failing("probe default-gateway failed: no echo reply from 192.0.2.1"))
		Expect(n.Engine.Rollbacks()).To(BeNumerically(">=", 1))
		Expect(enactment(n.Name, br1)()).To(available(""), "the policies in effect stay in effect")
		deletePolicy(cut)
		Eventually(enactment(n.Name, cut), "10s").Should(BeNil())
		for _, s := range n.Engine.Committed() {
			Expect(ifaceNames(s)).NotTo(ContainElement("cutgw0"), "a change that failed its probe is never committed")
		}
	})

	It("keeps a policy that failed out of later passes until its backoff ends", func() {
		w := newWorld(1)
		n := w.nodes[0]
		cut := w.policy("cut-again", w.sel, cutState)
		Eventually(enactment(n.Name, cut), "10s").Should(failing("probe default-gateway failed"))
		rollbacks := n.Engine.Rollbacks()
		after := w.policy("after-cut", w.sel, `{"interfaces":[{"name":"eth8","type":"ethernet","mtu":1300}]}`)
		Eventually(enactment(n.Name, after), "10s").Should(available(""), "a policy created after a failed one is not failed with it")
		Consistently(n.Engine.Rollbacks, "3s").Should(Equal(rollbacks), "the failed change is not tried again at once")
		applied, _ := n.Engine.Last()
		Expect(ifaceNames(applied)).To(SatisfyAll(ContainElement("eth8"), Not(ContainElement("cutgw0"))))
	})

	It("tries a policy that did not converge again when the node's policies change, not before", func() {
		w := newWorld(1)
		n := w.nodes[0]
		notYet := w.policy("not-yet", w.sel, brokenState)
		Eventually(enactment(n.Name, notYet), "10s").Should(failing("broken0"))
		applies := n.Engine.Applies()
		Consistently(n.Engine.Applies, "2s").Should(Equal(applies), "no retry at once")
		more := w.policy("brings-more", w.sel, `{"interfaces":[{"name":"eth10","type":"ethernet","mtu":1280}]}`)
		Eventually(enactment(n.Name, more), "10s").Should(available(""))
		Expect(n.Engine.Applies()).To(BeNumerically(">=", applies+2), "with the new policy, then without the one that still fails")
	})

	It("keeps the last applied generation in effect while a new one fails", func() {
		w := newWorld(1)
		n := w.nodes[0]
		keep := w.policy("gen-keep", w.sel, `{"interfaces":[{"name":"eth6","type":"ethernet","mtu":1400}]}`)
		Eventually(enactment(n.Name, keep), "10s").Should(available(""))
		Expect(string(enactment(n.Name, keep)().Status.DesiredState.Raw)).To(ContainSubstring(`"mtu":1400`), "the enactment records what it applied")
		setDesiredState(keep, `{"interfaces":[{"name":"eth6","type":"ethernet","mtu":1400},{"name":"cutgw0","type":"dummy"}]}`)
		Eventually(enactment(n.Name, keep), "10s").Should(failing("probe default-gateway failed"))
		// Another policy makes the node apply again: generation 1 of gen-keep stays.
		other := w.policy("gen-other", w.sel, `{"interfaces":[{"name":"eth4","type":"ethernet","mtu":1500}]}`)
		Eventually(enactment(n.Name, other), "10s").Should(available(""))
		applied, _ := n.Engine.Last()
		Expect(ifaceNames(applied)).To(SatisfyAll(ContainElement("eth6"), ContainElement("eth4"), Not(ContainElement("cutgw0"))),
			"eth6 is not pruned because its policy's new generation failed")
	})

	It("re-evaluates selection when a node's labels change", func() {
		w := newWorld(1)
		name := w.node(0)
		br1 := w.policy("br1", map[string]string{"world": w.id, "role": "worker"}, bridgeState)
		n := &corev1.Node{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
		n.Labels["role"] = "worker"
		Expect(k8s.Update(ctx, n)).To(Succeed())
		Eventually(enactment(name, br1), "10s").Should(available(""))

		Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
		delete(n.Labels, "role")
		Expect(k8s.Update(ctx, n)).To(Succeed())
		Eventually(enactment(name, br1), "10s").Should(BeNil())
		Eventually(func() []string { s, _ := w.nodes[0].Engine.Last(); return ifaceNames(s) }, "10s").ShouldNot(ContainElement("br1"),
			"the node goes back to its persistent configuration: the engine is given a state without br1")
	})

	It("re-applies every policy in one pass after a reboot", func() {
		w := newWorld(1)
		n := w.nodes[0]
		br1 := w.policy("br1", w.sel, bridgeState)
		mtu := w.policy("mtu-9000", w.sel, `{"interfaces":[{"name":"eth2","type":"ethernet","mtu":9000}]}`)
		for _, p := range []string{br1, mtu} {
			Eventually(enactment(n.Name, p), "10s").Should(available("boot-1"))
		}
		_, before := n.Engine.Last()
		Expect(n.Reboot("boot-2")).To(Succeed())
		for _, p := range []string{br1, mtu} {
			Eventually(enactment(n.Name, p), "10s").Should(available("boot-2"))
		}
		since := n.Engine.Committed()[before:]
		Expect(since).To(HaveLen(1), "one transaction for the whole node")
		Expect(ifaceNames(since[0])).To(ConsistOf("br1", "eth2"))
		Consistently(func() int { _, c := n.Engine.Last(); return c }, "1s").Should(Equal(before+1), "nothing more to do")
	})

	It("refuses every policy while the node's overlay is degraded", func() {
		w := newWorld(1)
		n := w.nodes[0]
		br1 := w.policy("br1", w.sel, bridgeState)
		Eventually(enactment(n.Name, br1), "10s").Should(available(""))
		n.SetDegraded("upper-on-tmpfs: /run/nmoverlay/upper is not on tmpfs")
		_, before := n.Engine.Last()
		up := w.policy("eth3-up", w.sel, `{"interfaces":[{"name":"eth3","type":"ethernet","state":"up"}]}`)
		Eventually(enactment(n.Name, up), "10s").Should(failing("overlay is degraded"))
		Eventually(enactment(n.Name, br1), "10s").Should(failing("upper-on-tmpfs"))
		_, after := n.Engine.Last()
		Expect(after).To(Equal(before), "nothing applied")
	})

	It("waits for a rollout slot held by a ready node, without a request, and gets it when that node is not ready", func() {
		w := newWorld(1)
		name := w.node(0)
		ghostName := w.id + "-ghost"
		ghost, err := kit.ReadyNode(ctx, k8s, ghostName, w.sel)
		Expect(err).NotTo(HaveOccurred())
		setReady := func(ready corev1.ConditionStatus) {
			Expect(k8s.Get(ctx, client.ObjectKey{Name: ghostName}, ghost)).To(Succeed())
			kit.SetReady(ghost, ready)
			Expect(k8s.Status().Update(ctx, ghost)).To(Succeed())
		}
		rollout := w.id + "-rollout"
		// The controller granted the ghost node the only slot of a generation at a time.
		grantGhost := func(generation int64, at time.Time) {
			key := shared.EnactmentKey(ghostName, rollout)
			e := &v1beta1.NodeNetworkConfigurationEnactment{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: key}, e); err != nil {
				e = &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: key,
					Labels: map[string]string{shared.NodeLabel: ghostName, shared.PolicyLabel: rollout}}}
				metav1.SetMetaDataAnnotation(&e.ObjectMeta, shared.RolloutSlotAnnotation, shared.FormatRolloutSlot(generation, at))
				Expect(k8s.Create(ctx, e)).To(Succeed())
				return
			}
			metav1.SetMetaDataAnnotation(&e.ObjectMeta, shared.RolloutSlotAnnotation, shared.FormatRolloutSlot(generation, at))
			Expect(k8s.Update(ctx, e)).To(Succeed())
		}
		grantGhost(1, time.Now())
		one := intstr.FromInt32(1)
		p := policy(rollout, w.sel, `{"interfaces":[{"name":"eth7","type":"ethernet","mtu":1400}]}`)
		p.Spec.MaxUnavailable = &one
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Eventually(policyCondition(rollout), "10s").Should(Equal("Progressing=ConfigurationProgressing: Policy is progressing 0/2 nodes finished, 1 pending"))
		Eventually(enactment(name, rollout), "10s").Should(HaveEnactmentCondition(shared.EnactmentPending, shared.ReasonMaxUnavailableLimitReached,
			shared.MessagePending), "every selected node has an enactment: Pending until its grant")
		// The node's start is over (its NodeNetworkState written) and the pass the
		// enactment's creation woke is past (the handler gathers grants for 2 s).
		Eventually(func() []metav1.Condition {
			nns := &v1beta1.NodeNetworkState{}
			_ = k8s.Get(ctx, client.ObjectKey{Name: name}, nns)
			return nns.Status.Conditions
		}, "10s").ShouldNot(BeEmpty())
		time.Sleep(3 * time.Second)
		requests := w.nodes[0].Requests()
		Consistently(enactment(name, rollout), "3s").Should(HaveEnactmentCondition(shared.EnactmentPending, shared.ReasonMaxUnavailableLimitReached, ""))
		Expect(w.nodes[0].Requests()).To(Equal(requests), "the waiting node made a request")
		applied, _ := w.nodes[0].Engine.Last()
		Expect(ifaceNames(applied)).NotTo(ContainElement("eth7"), "nothing applied while waiting")

		setReady(corev1.ConditionFalse) // the node holding the slot rebooted: its grant no longer counts
		Eventually(enactment(name, rollout), "10s").Should(available(""))

		// Generation 2: the ghost's grant is Ready but timed out (a handler that died mid-apply).
		setReady(corev1.ConditionTrue)
		grantGhost(2, time.Now().Add(-10*time.Minute))
		setDesiredState(rollout, `{"interfaces":[{"name":"eth7","type":"ethernet","mtu":1500}]}`)
		Eventually(func() int64 {
			e := enactment(name, rollout)()
			if e == nil || !node.IsTrue(e, shared.EnactmentAvailable, "") {
				return 0
			}
			return e.Status.PolicyGeneration
		}, "10s").Should(Equal(int64(2)))
	})

	It("takes another name when its enactment's name is held by another node's (names with dots collide), and says so", func() {
		// Node worker.a with policy x and node worker with policy a.x both name theirs
		// worker.a.x: here <node>.<id>-p is already node "<node>.<id>-q"'s (its policy "p").
		w := newWorld(1)
		name := w.node(0)
		pol := w.id + "-p"
		theirs := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: shared.EnactmentKey(name, pol),
			Labels: map[string]string{shared.NodeLabel: name + "." + w.id, shared.PolicyLabel: "p"}}}
		Expect(k8s.Create(ctx, theirs)).To(Succeed())
		DeferCleanup(func() { Expect(k8s.Delete(ctx, theirs)).To(Succeed()) })
		w.policy("p", w.sel, `{"interfaces":[{"name":"eth5","type":"ethernet","mtu":1400}]}`)
		var mine v1beta1.NodeNetworkConfigurationEnactment
		Eventually(func() string {
			list := &v1beta1.NodeNetworkConfigurationEnactmentList{}
			Expect(k8s.List(ctx, list, client.MatchingLabels{shared.NodeLabel: name, shared.PolicyLabel: pol})).To(Succeed())
			if len(list.Items) != 1 {
				return fmt.Sprintf("%d enactments", len(list.Items))
			}
			mine = list.Items[0]
			return mine.Name
		}, "10s").Should(MatchRegexp(`^` + regexp.QuoteMeta(shared.EnactmentKey(name, pol)) + `-[a-z0-9]{8}$`))
		Eventually(func() *v1beta1.NodeNetworkConfigurationEnactment {
			e := &v1beta1.NodeNetworkConfigurationEnactment{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&mine), e)).To(Succeed())
			return e
		}, "10s").Should(available(""))
		Eventually(func() []string { return policyEvents(pol) }, "10s").Should(ContainElement(
			ContainSubstring(fmt.Sprintf(`Warning EnactmentNameTaken node %s: enactment name %s is taken by node %q (policy "p"); this node's enactment is %s`,
				name, theirs.Name, name+"."+w.id, mine.Name))), "the controller, which creates enactments, says so")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(theirs), theirs)).To(Succeed())
		Expect(theirs.Status.Conditions).To(BeEmpty(), "the other node's enactment was written")
	})

	It("keeps working when an enactment is deleted by hand", func() {
		w := newWorld(1)
		br1 := w.policy("br1", w.sel, bridgeState)
		Eventually(enactment(w.node(0), br1), "10s").Should(available(""))
		e := enactment(w.node(0), br1)()
		Expect(k8s.Delete(ctx, e)).To(Succeed())
		Eventually(func() types.UID {
			if got := enactment(w.node(0), br1)(); got != nil {
				return got.UID
			}
			return ""
		}, "10s").ShouldNot(Or(BeEmpty(), Equal(e.UID)), "a new enactment")
		Eventually(enactment(w.node(0), br1), "10s").Should(available(""))
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
	BeforeEach(func() {
		stop, err := kit.StartController(cfg, k8s.Scheme()) // it grants the nodes their rollout slots
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)
	})
	It("count applies by result, rollbacks by reason, and NodeNetworkState writes", func() {
		// Ginkgo runs the handler specs in this process too, in any order; whatever ran
		// before, a fresh node makes each of these move.
		ctx := context.Background()
		_, err := kit.ReadyNode(ctx, k8s, "metrics-node", map[string]string{"metrics": "yes"})
		Expect(err).NotTo(HaveOccurred())
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
