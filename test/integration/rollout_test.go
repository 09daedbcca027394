//go:build integration

package integration_test

import (
	"context"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/test/kit"
)

// The rollout of a generation: real handlers on simulated nodes, and the controller.
var _ = Describe("the rollout", func() {
	ctx := context.Background()
	BeforeEach(func() {
		stop, err := kit.StartController(cfg, k8s.Scheme())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)
	})

	It("stops at the first failure: the nodes not yet granted are Aborted, and a new generation starts clean", func() {
		w := newWorld(4)
		one := intstr.FromInt32(1)
		p := policy(w.id+"-cut", w.sel, cutState)
		p.Spec.MaxUnavailable = &one
		Expect(k8s.Create(ctx, p)).To(Succeed())

		// The first node by name is granted the one slot, breaks its gateway probe, rolls back.
		Eventually(enactment(w.node(0), p.Name), "20s").Should(failing("probe default-gateway failed"))
		for _, n := range w.nodes[1:] {
			Eventually(enactment(n.Name, p.Name), "10s").Should(HaveEnactmentCondition(shared.EnactmentAborted, shared.ReasonConfigurationAborted,
				`reconciliation of enactment "`+n.Name+"."+p.Name+`" has aborted: the policy failed on node `+w.node(0)))
		}
		Eventually(policyCondition(p.Name), "10s").Should(Equal("Degraded=FailedToConfigure: 1/4 nodes failed to configure, 3 nodes aborted configuration"))
		Consistently(func() []string {
			var tried []string
			for _, n := range w.nodes {
				if n.Engine.Tried("cutgw0") {
					tried = append(tried, n.Name)
				}
			}
			return tried
		}, "3s").Should(Equal([]string{w.node(0)}), "applied on exactly one node")
		for _, n := range w.nodes[1:] {
			Expect(enactment(n.Name, p.Name)()).NotTo(HaveField("Annotations", HaveKey(shared.RolloutSlotAnnotation)), "no slot granted")
		}

		// The administrator fixes the policy: generation 2 rolls out from the start.
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
		p.Spec.DesiredState = shared.State{Raw: []byte(`{"interfaces":[{"name":"eth7","type":"ethernet","mtu":1400}]}`)}
		Expect(k8s.Update(ctx, p)).To(Succeed())
		for _, n := range w.nodes {
			Eventually(enactment(n.Name, p.Name), "30s").Should(SatisfyAll(available(""), HaveField("Status.PolicyGeneration", int64(2))))
		}
		Eventually(policyCondition(p.Name), "10s").Should(Equal("Available=SuccessfullyConfigured: 4/4 nodes successfully configured"))
	})

	It("judges enactments as they are: one set Failing by hand stops the rollout", func() {
		w := newWorld(2)
		// A Ready node without a handler, first by name: it is granted the one slot and
		// holds it (a handler mid-apply), so the others wait.
		_, err := kit.ReadyNode(ctx, k8s, w.id+"-0", w.sel)
		Expect(err).NotTo(HaveOccurred())
		one := intstr.FromInt32(1)
		p := policy(w.id+"-mtu", w.sel, `{"interfaces":[{"name":"eth7","type":"ethernet","mtu":1400}]}`)
		p.Spec.MaxUnavailable = &one
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Eventually(enactment(w.id+"-0", p.Name), "10s").Should(HaveEnactmentCondition(shared.EnactmentProgressing, shared.ReasonConfigurationProgressing, shared.MessageApplying))
		Eventually(enactment(w.node(1), p.Name), "10s").Should(HaveEnactmentCondition(shared.EnactmentPending, shared.ReasonMaxUnavailableLimitReached, shared.MessagePending))
		// An administrator marks the second node Failing before its turn.
		Eventually(func() error {
			e := enactment(w.node(1), p.Name)()
			shared.SetEnactment(&e.Status.Conditions, shared.EnactmentFailing, "marked by hand")
			return k8s.Update(ctx, e)
		}, "10s").Should(Succeed())
		Eventually(enactment(w.node(0), p.Name), "10s").Should(HaveEnactmentCondition(shared.EnactmentAborted, shared.ReasonConfigurationAborted,
			"failed on node "+w.node(1)))
		Eventually(policyCondition(p.Name), "10s").Should(Equal("Degraded=FailedToConfigure: 1/3 nodes failed to configure, 1 nodes aborted configuration"))

		// The ghost's grant is still its to use: a node applying is never aborted.
		Expect(enactment(w.id+"-0", p.Name)()).To(HaveEnactmentCondition(shared.EnactmentProgressing, shared.ReasonConfigurationProgressing, ""))
		Consistently(func() bool { return w.nodes[0].Engine.Tried("eth7") || w.nodes[1].Engine.Tried("eth7") }, "3s").Should(BeFalse(), "nothing applied")
	})

	It("gives every selected node an enactment, Pending until its grant", func() {
		w := newWorld(3)
		one := intstr.FromInt32(1)
		p := policy(w.id+"-mtu", w.sel, `{"interfaces":[{"name":"eth7","type":"ethernet","mtu":1400}]}`)
		p.Spec.MaxUnavailable = &one
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Eventually(enactmentStatuses(p.Name), "10s").Should(HaveLen(3))
		// Each waits, then applies, one at a time: never two Progressing at once.
		Eventually(func() []string {
			statuses := enactmentStatuses(p.Name)()
			progressing := slices.IndexFunc(statuses, func(s string) bool { return strings.Contains(s, "Progressing/") })
			if progressing >= 0 && slices.ContainsFunc(statuses[progressing+1:], func(s string) bool { return strings.Contains(s, "Progressing/") }) {
				Fail("two nodes progressing with maxUnavailable 1: " + strings.Join(statuses, "; "))
			}
			return statuses
		}, "30s", "50ms").Should(Equal([]string{
			w.node(0) + " Available/SuccessfullyConfigured: applied in boot boot-1",
			w.node(1) + " Available/SuccessfullyConfigured: applied in boot boot-1",
			w.node(2) + " Available/SuccessfullyConfigured: applied in boot boot-1"}))
		got := &nmstatev1.NodeNetworkConfigurationPolicy{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
		Expect(got.Status.Conditions).To(HaveLen(4))
	})
})
