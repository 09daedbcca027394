//go:build integration

package integration_test

import (
	"context"
	"fmt"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/node"
	"github.com/nmoverlay/nmoverlay/test/kit"
)

// enactmentStatuses returns "<node> Type/Reason: message" of the True condition of each of
// the policy's enactments, sorted.
func enactmentStatuses(policy string) func() []string {
	return func() []string {
		list := &v1beta1.NodeNetworkConfigurationEnactmentList{}
		if err := k8s.List(context.Background(), list, client.MatchingLabels{shared.PolicyLabel: policy}); err != nil {
			return []string{err.Error()}
		}
		var out []string
		for _, e := range list.Items {
			st := e.Labels[shared.NodeLabel] + " <none>"
			if c := shared.TrueCondition(e.Status.Conditions); c != nil {
				st = e.Labels[shared.NodeLabel] + " " + c.Type + "/" + c.Reason + ": " + c.Message
			}
			out = append(out, st)
		}
		slices.Sort(out)
		return out
	}
}

// policyCondition returns "Type=Reason: message" of the policy's True condition.
func policyCondition(name string) func() string {
	return func() string {
		p := &nmstatev1.NodeNetworkConfigurationPolicy{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: name}, p); err != nil {
			return err.Error()
		}
		for _, c := range p.Status.Conditions {
			if c.Status == metav1.ConditionTrue {
				return c.Type + "=" + c.Reason + ": " + c.Message
			}
		}
		return "<none>"
	}
}

var _ = Describe("the cluster controller", func() {
	ctx := context.Background()
	var pools int

	// report writes an enactment's status as a handler on that node would, once the
	// controller has created it (the controller writes it too: a conflict is tried again).
	report := func(nodeName, policy string, generation int64, set func(*v1beta1.NodeNetworkConfigurationEnactment, string)) {
		GinkgoHelper()
		Eventually(func() error {
			e := &v1beta1.NodeNetworkConfigurationEnactment{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: shared.EnactmentKey(nodeName, policy)}, e); err != nil {
				return err
			}
			set(e, "from "+nodeName)
			e.Status.PolicyGeneration = generation
			return k8s.Update(ctx, e)
		}, "10s").Should(Succeed())
	}

	// start runs the controller until the spec ends, and creates a pool of three Ready nodes
	// of the spec's own, c<n>-1 to c<n>-3 labelled pool=c<n>; it returns the pool's name.
	start := func() string {
		GinkgoHelper()
		pools++
		pool := fmt.Sprintf("c%d", pools)
		for i := 1; i <= 3; i++ {
			_, err := kit.ReadyNode(ctx, k8s, fmt.Sprintf("%s-%d", pool, i), map[string]string{"pool": pool})
			Expect(err).NotTo(HaveOccurred())
		}
		stop, err := kit.StartController(cfg, k8s.Scheme())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)
		return pool
	}

	// rolledOut creates the pool's policy and reports it Available on every node.
	rolledOut := func(pool string) string {
		GinkgoHelper()
		name := pool + "-br"
		Expect(k8s.Create(ctx, policy(name, map[string]string{"pool": pool}, `{"interfaces":[{"name":"br9","type":"linux-bridge"}]}`))).To(Succeed())
		DeferCleanup(func() { Expect(k8s.Delete(ctx, policy(name, nil, ""))).To(Succeed()) })
		for i := 1; i <= 3; i++ {
			report(fmt.Sprintf("%s-%d", pool, i), name, 1, node.SetAvailable)
		}
		Eventually(policyCondition(name), "10s").Should(Equal("Available=SuccessfullyConfigured: 3/3 nodes successfully configured"))
		return name
	}

	It("reports a policy that selects no node as ignored", func() {
		pool := start()
		name := pool + "-none"
		Expect(k8s.Create(ctx, policy(name, map[string]string{"pool": "nowhere"}, `{}`))).To(Succeed())
		DeferCleanup(func() { Expect(k8s.Delete(ctx, policy(name, nil, ""))).To(Succeed()) })
		Eventually(policyCondition(name), "10s").Should(Equal("Ignored=NoMatchingNode: Policy does not match any node"))
	})

	It("is progressing until every selected node reports, then available", func() {
		pool := start()
		name := pool + "-br"
		Expect(k8s.Create(ctx, policy(name, map[string]string{"pool": pool}, `{"interfaces":[{"name":"br9","type":"linux-bridge"}]}`))).To(Succeed())
		DeferCleanup(func() { Expect(k8s.Delete(ctx, policy(name, nil, ""))).To(Succeed()) })
		// maxUnavailable 50% of 3: two nodes granted, one pending; every node has an enactment.
		Eventually(policyCondition(name), "10s").Should(Equal("Progressing=ConfigurationProgressing: Policy is progressing 0/3 nodes finished, 1 pending"))
		Eventually(enactmentStatuses(name), "10s").Should(Equal([]string{
			pool + "-1 Progressing/ConfigurationProgressing: Applying desired state",
			pool + "-2 Progressing/ConfigurationProgressing: Applying desired state",
			pool + "-3 Pending/MaxUnavailableLimitReached: Waiting for progressing nodes to finish"}))
		report(pool+"-1", name, 1, node.SetAvailable)
		report(pool+"-2", name, 1, node.SetAvailable)
		Eventually(enactmentStatuses(name), "10s").Should(ContainElement(pool+"-3 Progressing/ConfigurationProgressing: Applying desired state"),
			"the freed slot goes to the pending node")
		Eventually(policyCondition(name), "10s").Should(Equal("Progressing=ConfigurationProgressing: Policy is progressing 2/3 nodes finished"))
		report(pool+"-3", name, 1, node.SetAvailable)
		Eventually(policyCondition(name), "10s").Should(Equal("Available=SuccessfullyConfigured: 3/3 nodes successfully configured"))
		Eventually(func() []string { return policyEvents(name) }, "10s").Should(ConsistOf("Normal SuccessfullyConfigured 3/3 nodes successfully configured"),
			"one event for the policy, not one per node")
	})

	It("counts only enactments of the current generation", func() {
		pool := start()
		name := rolledOut(pool)
		p := &nmstatev1.NodeNetworkConfigurationPolicy{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, p)).To(Succeed())
		p.Spec.DesiredState = shared.State{Raw: []byte(`{"interfaces":[{"name":"br9","type":"linux-bridge","mtu":9000}]}`)}
		Expect(k8s.Update(ctx, p)).To(Succeed())
		Eventually(policyCondition(name), "10s").Should(HavePrefix("Progressing=ConfigurationProgressing: Policy is progressing 0/3"))
		report(pool+"-1", name, 2, node.SetAvailable)
		report(pool+"-2", name, 2, node.SetAvailable)
		report(pool+"-3", name, 2, node.SetFailing)
		Eventually(policyCondition(name), "10s").Should(Equal("Degraded=FailedToConfigure: 1/3 nodes failed to configure"))
		Eventually(func() []string { return policyEvents(name) }, "10s").Should(ContainElement("Warning FailedToConfigure 1/3 nodes failed to configure"))
	})

	It("follows node label changes and writes nothing when nothing changed", func() {
		pool := start()
		name := rolledOut(pool)
		report(pool+"-3", name, 1, node.SetFailing)
		Eventually(policyCondition(name), "10s").Should(Equal("Degraded=FailedToConfigure: 1/3 nodes failed to configure"))
		n := &corev1.Node{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: pool + "-3"}, n)).To(Succeed())
		n.Labels["pool"] = "other"
		Expect(k8s.Update(ctx, n)).To(Succeed())
		Eventually(policyCondition(name), "10s").Should(Equal("Available=SuccessfullyConfigured: 2/2 nodes successfully configured"))

		p := &nmstatev1.NodeNetworkConfigurationPolicy{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, p)).To(Succeed())
		version := p.ResourceVersion
		since := meta.FindStatusCondition(p.Status.Conditions, shared.PolicyAvailable).LastTransitionTime
		report(pool+"-1", name, 1, node.SetAvailable) // an enactment write that changes nothing
		Consistently(func() string {
			got := &nmstatev1.NodeNetworkConfigurationPolicy{}
			Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, got)).To(Succeed())
			return got.ResourceVersion
		}, "1s").Should(Equal(version))
		Expect(since.IsZero()).To(BeFalse(), "the Available condition has a transition time")
	})
})
