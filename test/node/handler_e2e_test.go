//go:build node

package node_test

import (
	"context"
	"encoding/json"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/internal/overlay"
	"github.com/nmoverlay/nmoverlay/test/kit"
)

// The handler against a real NetworkManager on an overlay node and a real API server: a
// policy lands in the tmpfs layer, a policy that breaks the gateway is rolled back, a
// reboot re-converges, a deleted policy's change is gone.
var _ = Describe("the handler on a real node", Ordered, func() {
	var (
		n    *overlayNode
		env  *envtest.Environment
		k8s  client.Client
		ctx  = context.Background()
		stop func() error
	)
	startHandler := func() {
		var err error
		stop, err = n.startHandler(env.Config, k8s, "e2e")
		Expect(err).NotTo(HaveOccurred())
	}
	stopHandler := func() { Expect(stop()).To(Succeed()) }
	enactment := func(policy string) func() string { return enactmentSummary(k8s, "e2e", policy) }
	addrs := func() string {
		out, _ := n.Run(ctx, "ip", "-4", "addr", "show", "eth1")
		return out
	}
	create := func(name, desired string) {
		p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
		p.Spec.DesiredState = shared.State{Raw: []byte(desired)}
		Expect(k8s.Create(ctx, p)).To(Succeed())
	}

	BeforeAll(func() {
		a, err := kit.StartAPI()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(a.Stop)
		stopController, err := a.StartController() // it grants the node its rollout slots
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stopController)
		env, k8s = a.Env, a.Client
		_, err = kit.ReadyNode(ctx, k8s, "e2e", nil)
		Expect(err).NotTo(HaveOccurred())
		n, err = newOverlayNode("e2e", helper, nil)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(n.close)
		Expect(n.start(ctx)).To(Succeed())
		startHandler()
		DeferCleanup(func() { stopHandler() })
	})
	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Println(n.NMLog())
		}
	})

	It("applies a policy; its profile lives only in the tmpfs layer", func() {
		create("uplink", `{"interfaces":[{"name":"eth1","type":"ethernet","state":"up","ipv4":{"enabled":true,"address":[{"ip":"192.0.2.10","prefix-length":24}]}}],
			"routes":{"config":[{"destination":"0.0.0.0/0","next-hop-address":"192.0.2.254","next-hop-interface":"eth1","metric":100}]}}`)
		Eventually(enactment("uplink"), "30s").Should(HavePrefix("Available boot-1"))
		Expect(addrs()).To(ContainSubstring("192.0.2.10/24"))
		entries, _ := os.ReadDir(n.Lower())
		Expect(entries).To(HaveLen(1), "nothing added to the persistent dir")
		Expect(addrs()).NotTo(ContainSubstring("192.0.2.20/"), "the policy's profile took the interface")
		out, err := n.Run(ctx, helper, "status", "-o", "json")
		Expect(err).NotTo(HaveOccurred())
		var changes []overlay.ProfileChange
		Expect(json.Unmarshal([]byte(out), &changes)).To(Succeed())
		Expect(changes).To(ContainElement(SatisfyAll(HaveField("Interface", "eth1"), HaveField("Change", overlay.Added))))
	})

	It("rolls back a policy that takes the default gateway away", func() {
		create("bad-gateway", `{"routes":{"config":[{"destination":"0.0.0.0/0","next-hop-address":"192.0.2.99","next-hop-interface":"eth1","metric":10}]}}`)
		Eventually(enactment("bad-gateway"), "60s").Should(SatisfyAll(HavePrefix("Failing"), ContainSubstring("probe default-gateway failed")))
		Expect(enactment("uplink")()).To(HavePrefix("Available boot-1"), "a policy already in effect stays so")
		Eventually(func() string { out, _ := n.Run(ctx, "ip", "-4", "route"); return out }, "15s").Should(
			SatisfyAll(ContainSubstring("default via 192.0.2.254"), Not(ContainSubstring("192.0.2.99"))))
		Expect(k8s.Delete(ctx, &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "bad-gateway"}})).To(Succeed())
		Eventually(enactment("uplink"), "30s").Should(HavePrefix("Available"))
	})

	It("re-converges after a reboot", func() {
		stopHandler()
		Expect(n.reboot(ctx)).To(Succeed())
		Expect(addrs()).NotTo(ContainSubstring("192.0.2.10"), "the tmpfs layer is gone after the reboot")
		Eventually(addrs, "15s").Should(ContainSubstring("192.0.2.20/24"), "the persistent profile is back")
		startHandler()
		Eventually(enactment("uplink"), "30s").Should(HavePrefix("Available boot-2"))
		Expect(addrs()).To(ContainSubstring("192.0.2.10/24"))
	})

	It("removes a deleted policy's change: the node is back on its persistent configuration", func() {
		Expect(k8s.Delete(ctx, &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "uplink"}})).To(Succeed())
		Eventually(enactment("uplink"), "30s").Should(Equal("<none>"))
		Eventually(addrs, "15s").Should(SatisfyAll(ContainSubstring("192.0.2.20/24"), Not(ContainSubstring("192.0.2.10"))),
			"eth1 is back on its persistent profile")
		out, err := n.Run(ctx, helper, "status")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).NotTo(ContainSubstring("eth1"))
	})
})
