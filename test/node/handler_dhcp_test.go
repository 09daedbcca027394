//go:build node

package node_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/nmoverlay/nmoverlay/test/nmhost"
)

// DHCP on the fabric: Debian's dnsmasq serves eth2's link; eth3's link has no server. The
// handler, as its own process, applies two DHCP policies created together: the one that
// gets a lease is Available (its routes at the metric it asks for), the other fails alone,
// its interface named.
var _ = Describe("the handler with DHCP", Ordered, func() {
	var n *processNode

	BeforeAll(func() {
		dnsmasq := sbinTool("dnsmasq")
		n = newProcessNodeWith("dhcp", func(node *nmhost.Node, fabricNS string) error {
			if err := cableToFabric(node, fabricNS, map[string]string{"dh2": "eth2", "dh3": "eth3"}); err != nil {
				return err
			}
			if out, err := exec.Command("ip", "-n", fabricNS, "addr", "add", "198.51.100.1/24", "dev", "dh2").CombinedOutput(); err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		}, "--activation-timeout", "15s")
		serveDHCP(dnsmasq, n.fabric, "dh2")
	})
	AfterEach(func() { n.printOnFailure() })

	It("a DHCP interface without a lease fails alone, named; the other policy is Available", func() {
		n.create("served", `{"interfaces":[{"name":"eth2","type":"ethernet","state":"up","ipv4":{"enabled":true,"dhcp":true,"auto-gateway":false,"auto-route-metric":48,"auto-route-table-id":200}}]}`)
		n.create("unserved", `{"interfaces":[{"name":"eth3","type":"ethernet","state":"up","ipv4":{"enabled":true,"dhcp":true}}]}`)
		Eventually(n.enactment("unserved"), "60s").Should(SatisfyAll(HavePrefix("Failing"), ContainSubstring("eth3 (waiting for an IP address")))
		Eventually(n.enactment("served"), "60s").Should(HavePrefix("Available"))
		Expect(n.enactment("unserved")()).NotTo(ContainSubstring("eth2"))
		out, err := n.Run(context.Background(), "ip", "-4", "addr", "show", "eth2")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(SatisfyAll(ContainSubstring("198.51.100.1"), ContainSubstring("dynamic")), "eth2 holds its lease")
		out, err = n.Run(context.Background(), "ip", "-4", "route", "show", "table", "200", "dev", "eth2")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(SatisfyAll(MatchRegexp(`198\.51\.100\.0/24 .*metric 48`), Not(ContainSubstring("default"))),
			"the lease's route in auto-route-table-id's table at auto-route-metric, and no default route (auto-gateway: false)")
		out, err = n.Run(context.Background(), "ip", "-4", "route", "show", "table", "main", "dev", "eth2")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).NotTo(ContainSubstring("metric 48"), "not in the main table")
	})
})

// serveDHCP runs Debian's dnsmasq (at path dnsmasq) in the fabric, serving 198.51.100.100-199
// on port, whose address must be in 198.51.100.0/24, until the container's specs end.
func serveDHCP(dnsmasq, fabricNS, port string) {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	server := exec.Command("ip", "netns", "exec", fabricNS, dnsmasq, "--keep-in-foreground", "--conf-file=/dev/null", "--port=0",
		"--user=root", "--group=root", "--bind-interfaces", "--interface="+port, "--dhcp-range=198.51.100.100,198.51.100.199,1h",
		"--dhcp-leasefile="+filepath.Join(dir, "leases"), "--pid-file="+filepath.Join(dir, "pid"))
	server.Stdout, server.Stderr = GinkgoWriter, GinkgoWriter
	Expect(server.Start()).To(Succeed())
	DeferCleanup(func() { _ = server.Process.Kill(); _, _ = server.Process.Wait() })
}
