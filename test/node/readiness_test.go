//go:build node

package node_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The handler's /readyz, as the kubelet's readiness probe asks it inside the node: ready
// once its caches have synced and NetworkManager answers on D-Bus; still ready while
// NetworkManager is gone for less than a restart takes; not ready once it has been gone
// longer; ready again when it is back. /healthz stays a ping throughout.
var _ = Describe("the handler's readiness", Ordered, func() {
	const health = "127.0.0.1:8088"
	var p *processNode
	BeforeAll(func() {
		p = newProcessNode("readiness", "--health-probe-bind-address", health, "--networkmanager-ready-grace", "3s")
	})
	AfterEach(func() { p.printOnFailure() })
	probe := func(path string) func() string {
		return func() string {
			status, body, err := p.handlerGet(health, path)
			if err != nil {
				return "error: " + err.Error()
			}
			return fmt.Sprintf("%d %s", status, body)
		}
	}

	It("follows NetworkManager, with a grace for a restart", func() {
		Eventually(probe("/readyz?verbose"), "30s", "250ms").Should(SatisfyAll(HavePrefix("200"),
			ContainSubstring("[+]caches ok"), ContainSubstring("[+]networkmanager ok")))

		p.StopNM()
		Consistently(probe("/readyz"), "2s", "250ms").Should(HavePrefix("200"), "within the grace a restart takes")
		Eventually(probe("/readyz?verbose"), "15s", "250ms").Should(SatisfyAll(HavePrefix("500"), ContainSubstring("[-]networkmanager failed")))
		Expect(probe("/healthz")()).To(HavePrefix("200"), "alive: a restart of the handler would not bring NetworkManager back")
		Eventually(p.handlerLog, "5s").Should(ContainSubstring("NetworkManager has not answered for"))

		Expect(p.StartNM(context.Background(), p.layout.NMEnvFile())).To(Succeed())
		Eventually(probe("/readyz"), "15s", "250ms").Should(HavePrefix("200"))
	})
})
