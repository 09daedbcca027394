//go:build node

package node_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/netplan"
	"github.com/nmoverlay/nmoverlay/test/fabric"
	"github.com/nmoverlay/nmoverlay/test/nmhost"
)

// nodeNetplan is a netplan node's own configuration (/etc/netplan, as an installer leaves
// it): eth1 on the fabric, where the gateway and the API server are.
const nodeNetplan = `network:
  version: 2
  renderer: NetworkManager
  ethernets:
    eth1:
      addresses: [192.0.2.20/24]
      routes: [{to: default, via: ` + fabric.Gateway + `}]
`

// The netplan backend on a real node: the handler as its own process with --backend
// netplan, Debian's netplan.io, the real NetworkManager. The node is configured by netplan
// (its /etc/netplan, generated into /run at boot, as netplan's systemd generator does);
// eth2 and eth4 are cabled to the fabric, and dnsmasq serves eth3's link.
var _ = Describe("the netplan backend", Ordered, func() {
	var n *processNode
	ctx := context.Background()
	run := func(args ...string) string {
		GinkgoHelper()
		out, err := n.Run(ctx, args[0], args[1:]...)
		Expect(err).NotTo(HaveOccurred())
		return out
	}
	policyFile := func(policy string) string {
		return n.PathInNode(filepath.Join(netplan.RunDir, netplan.FilePrefix+policy+".yaml"))
	}

	BeforeAll(func() {
		dnsmasq := sbinTool("dnsmasq")
		n = newProcessNodeWith("netplan", func(node *nmhost.Node, fabricNS string) error {
			// A netplan node: no keyfile of its own in the persistent dir, its
			// configuration is netplan's.
			if err := os.Remove(filepath.Join(node.Lower(), "eth1-persistent.nmconnection")); err != nil && !os.IsNotExist(err) {
				return err
			}
			if err := os.WriteFile(filepath.Join(node.Netplan(), "00-node.yaml"), []byte(nodeNetplan), 0o600); err != nil {
				return err
			}
			if err := cableToFabric(node, fabricNS, map[string]string{"np2": "eth2", "np3": "eth3", "np4": "eth4"}); err != nil {
				return err
			}
			if out, err := exec.Command("ip", "-n", fabricNS, "addr", "replace", "198.51.100.1/24", "dev", "np3").CombinedOutput(); err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			_, err := node.Run(context.Background(), "netplan", "generate")
			return err
		}, "--backend", netplan.Name, "--activation-timeout", "20s")
		serveDHCP(dnsmasq, n.fabric, "np3")
	})
	AfterEach(func() { n.printOnFailure() })

	It("applies a static address and a route under /run/netplan; nothing persistent changes", func() {
		n.create("static", `{"network":{"version":2,"ethernets":{"eth1":{"addresses":["192.0.2.10/24"],
			"routes":[{"to":"203.0.113.0/24","via":"192.0.2.254","metric":300}]}}}}`)
		Eventually(n.enactment("static"), "60s").Should(HavePrefix("Available"))
		Expect(run("ip", "-4", "addr", "show", "eth1")).To(SatisfyAll(ContainSubstring("192.0.2.10/24"), ContainSubstring("192.0.2.20/24")),
			"netplan merges the policy's addresses with the node's own")
		Expect(run("ip", "-4", "route", "show", "203.0.113.0/24")).To(MatchRegexp(`via 192\.0\.2\.254 dev eth1 .*metric 300`))
		info, err := os.Stat(policyFile("static"))
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)), "netplan warns about a configuration others can read")
		etc, err := os.ReadDir(n.Netplan())
		Expect(err).NotTo(HaveOccurred())
		Expect(etc).To(HaveLen(1), "the node's /etc/netplan is untouched")
		lower, err := os.ReadDir(n.Lower())
		Expect(err).NotTo(HaveOccurred())
		Expect(lower).To(BeEmpty(), "nothing in the persistent keyfile dir")
		nns := &v1beta1.NodeNetworkState{}
		Eventually(func() string {
			_ = n.k8s.Get(ctx, client.ObjectKey{Name: n.name}, nns)
			return nns.Status.Backend
		}, "30s").Should(Equal(netplan.Name), "the NodeNetworkState names the backend")
	})

	It("applies a bridge over eth2 and DHCP on eth3", func() {
		n.create("bridge-dhcp", `{"network":{"version":2,"ethernets":{"eth2":{},"eth3":{"dhcp4":true}},
			"bridges":{"br0":{"interfaces":["eth2"],"addresses":["198.18.0.1/24"]}}}}`)
		Eventually(n.enactment("bridge-dhcp"), "60s").Should(HavePrefix("Available"))
		Expect(run("ip", "link", "show", "eth2")).To(ContainSubstring("master br0"))
		Expect(run("ip", "-4", "addr", "show", "br0")).To(ContainSubstring("198.18.0.1/24"))
		Expect(run("ip", "-4", "addr", "show", "eth3")).To(SatisfyAll(ContainSubstring("198.51.100."), ContainSubstring("dynamic")))
		Expect(n.enactment("static")()).To(HavePrefix("Available"), "the other policy stays in effect")
	})

	It("refuses what netplan's parser refuses, quoting it, with nothing written", func() {
		n.create("bad-boolean", `{"network":{"version":2,"ethernets":{"eth4":{"dhcp4":"maybe"}}}}`)
		Eventually(n.enactment("bad-boolean"), "30s").Should(SatisfyAll(HavePrefix("Failing"),
			ContainSubstring(netplan.FilePrefix+"bad-boolean.yaml:"), ContainSubstring("invalid boolean value 'maybe'")))
		Expect(policyFile("bad-boolean")).NotTo(BeAnExistingFile())
		Expect(n.enactment("static")()).To(HavePrefix("Available"))
		Expect(n.enactment("bridge-dhcp")()).To(HavePrefix("Available"))
	})

	It("refuses a policy in nmstate's schema, naming the backend", func() {
		n.create("nmstate-schema", `{"interfaces":[{"name":"eth4","type":"ethernet","state":"up"}]}`)
		Eventually(n.enactment("nmstate-schema"), "30s").Should(SatisfyAll(HavePrefix("Failing"),
			ContainSubstring("nmstate's schema"), ContainSubstring("backend is netplan")))
		Expect(policyFile("nmstate-schema")).NotTo(BeAnExistingFile())
	})

	It("rolls back a change whose route netplan left out without a word", func() {
		// netplan drops a route via a gateway from a bridge without addresses (its profile
		// gets IPv4 link-local, quick without STP's forwarding delay): the verification
		// reads the document, not what netplan made of it.
		n.create("dropped-route", `{"network":{"version":2,"ethernets":{"eth4":{}},
			"bridges":{"br1":{"interfaces":["eth4"],"parameters":{"stp":false},"routes":[{"to":"203.0.113.128/25","via":"192.0.2.254"}]}}}}`)
		Eventually(n.enactment("dropped-route"), "90s").Should(SatisfyAll(HavePrefix("Failing"),
			ContainSubstring("did not converge"), ContainSubstring("203.0.113.128/25"), ContainSubstring("rolled back")))
		Expect(policyFile("dropped-route")).NotTo(BeAnExistingFile(), "its file is gone with the rollback")
		Eventually(func() string { out, _ := n.Run(ctx, "ip", "link", "show", "eth4"); return out }, "15s").
			ShouldNot(ContainSubstring("master br1"))
		Expect(n.enactment("static")()).To(HavePrefix("Available"))
		Expect(n.enactment("bridge-dhcp")()).To(HavePrefix("Available"))
	})

	It("takes a deleted policy's configuration away", func() {
		for _, name := range []string{"dropped-route", "bad-boolean", "nmstate-schema", "static"} {
			Expect(n.k8s.Delete(ctx, &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
		}
		Eventually(n.enactment("static"), "60s").Should(Equal("<none>"))
		Expect(policyFile("static")).NotTo(BeAnExistingFile())
		Eventually(func() string { return run("ip", "-4", "addr", "show", "eth1") }, "20s").
			ShouldNot(ContainSubstring("192.0.2.10/24"))
		Expect(run("ip", "-4", "addr", "show", "eth1")).To(ContainSubstring("192.0.2.20/24"), "the node's own configuration stays")
		Expect(run("ip", "-4", "route", "show", "203.0.113.0/24")).To(BeEmpty())
		Expect(n.enactment("bridge-dhcp")()).To(HavePrefix("Available"))
	})
})
