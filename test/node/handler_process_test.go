//go:build node

package node_test

import (
	"context"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
)

// The handler as it runs on a node: its own process (cmd/handler) inside the node's
// namespaces, on the node's NetworkManager, reaching the API server only across the fabric.
var _ = Describe("the handler process on a node, reaching the API server only through the fabric", Ordered, func() {
	var (
		n   *processNode
		k8s client.Client
		ctx = context.Background()
	)
	startHandler := func() { n.startHandler() }
	killHandler := func() { n.killHandler() }
	enactment := func(policy string) func() string { return n.enactment(policy) }
	create := func(name, desired string) { n.create(name, desired) }
	addrs := func() string {
		out, _ := n.Run(ctx, "ip", "-4", "addr", "show", "eth1")
		return out
	}

	BeforeAll(func() {
		n = newProcessNode("proc")
		k8s = n.k8s
	})
	AfterEach(func() { n.printOnFailure() })

	It("applies a policy; its profile lives only in the tmpfs layer", func() {
		create("proc-uplink", `{"interfaces":[{"name":"eth1","type":"ethernet","state":"up","ipv4":{"enabled":true,"address":[{"ip":"192.0.2.10","prefix-length":24}]}}],
			"routes":{"config":[{"destination":"0.0.0.0/0","next-hop-address":"192.0.2.254","next-hop-interface":"eth1","metric":100}]}}`)
		Eventually(enactment("proc-uplink"), "60s").Should(HavePrefix("Available boot-1"))
		Expect(addrs()).To(ContainSubstring("192.0.2.10/24"))
		upper, err := n.Run(ctx, "ls", n.layout.Upper())
		Expect(err).NotTo(HaveOccurred())
		Expect(upper).To(ContainSubstring(".nmconnection"), "the policy's profile is in the tmpfs layer")
		lower, _ := os.ReadDir(n.Lower())
		Expect(lower).To(HaveLen(1), "nothing added to the persistent dir")
	})

	It("rolls back a policy that cuts the node off the API server", func() {
		// The API server's address routed to a neighbour that does not exist.
		create("proc-cut", `{"routes":{"config":[{"destination":"192.0.2.254/32","next-hop-address":"192.0.2.99","next-hop-interface":"eth1","metric":1}]}}`)
		Eventually(enactment("proc-cut"), "90s").Should(SatisfyAll(HavePrefix("Failing"), MatchRegexp(`probe (api-server|default-gateway) failed`)))
		Expect(enactment("proc-uplink")()).To(HavePrefix("Available boot-1"), "the policy in effect stays so")
		out, _ := n.Run(ctx, "ip", "-4", "route")
		Expect(out).NotTo(ContainSubstring("192.0.2.99"), "the route is gone")
		Expect(k8s.Delete(ctx, &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "proc-cut"}})).To(Succeed())
		Eventually(enactment("proc-cut"), "30s").Should(Equal("<none>"))
	})

	It("re-applies every policy after the node reboots, in one pass, whatever their names' order", func() {
		// The address policy sorts before the bridge it needs.
		create("a-proc-addr", `{"interfaces":[{"name":"br-proc","ipv4":{"enabled":true,"address":[{"ip":"198.51.100.1","prefix-length":24}]}}]}`)
		create("z-proc-bridge", `{"interfaces":[{"name":"br-proc","type":"linux-bridge","state":"up","bridge":{"options":{"stp":{"enabled":false}}}}]}`)
		Eventually(enactment("a-proc-addr"), "60s").Should(HavePrefix("Available boot-1"))
		Eventually(enactment("z-proc-bridge"), "60s").Should(HavePrefix("Available boot-1"))
		killHandler()
		Expect(n.reboot(ctx)).To(Succeed())
		Eventually(addrs, "15s").Should(SatisfyAll(ContainSubstring("192.0.2.20/24"), Not(ContainSubstring("192.0.2.10"))),
			"after the reboot the node is on its persistent profile")
		start := time.Now()
		startHandler()
		for _, p := range []string{"proc-uplink", "a-proc-addr", "z-proc-bridge"} {
			Eventually(enactment(p), "60s").Should(HavePrefix("Available boot-2"))
		}
		GinkgoWriter.Println("re-converged", time.Since(start).Round(time.Millisecond), "after the handler started")
		Expect(addrs()).To(ContainSubstring("192.0.2.10/24"))
		out, _ := n.Run(ctx, "ip", "-4", "addr", "show", "br-proc")
		Expect(out).To(ContainSubstring("198.51.100.1/24"))
		Expect(n.handlerMetric(`nmoverlay_apply_duration_seconds_count{result="committed"}`)).To(Equal(1.0), "one transaction for the whole node")
		Expect(n.handlerMetric(`nmoverlay_apply_duration_seconds_count{result="failed"}`)).To(Equal(0.0))
		Expect(n.handlerMetric("nmoverlay_boot_reconvergence_seconds")).To(BeNumerically(">", 0))
	})
})
