//go:build node

package node_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/nmhost"
)

// LLDP on a node: two NICs cabled to switch ports in the fabric, where Debian's lldpd
// announces itself as tor-1 on one of them. The handler enables LLDP, the
// NodeNetworkState shows the neighbour as nmstate does, and a capture selects the NIC
// facing tor-1 by it (kubernetes-nmstate's LLDP-based selection).
var _ = Describe("the handler with LLDP", Ordered, func() {
	var (
		n   *processNode
		k8s client.Client
		ctx = context.Background()
	)
	lldpOf := func(iface string) func() *state.LLDP {
		return func() *state.LLDP {
			for _, it := range reportedState(k8s, n.name).Interfaces {
				if it.Name == iface {
					return it.LLDP
				}
			}
			return nil
		}
	}

	BeforeAll(func() {
		lldpd := sbinTool("lldpd")
		n = newProcessNodeWith("lldp", func(node *nmhost.Node, fabricNS string) error {
			if err := cableToFabric(node, fabricNS, map[string]string{"swp12": "eth2", "swp13": "eth3"}); err != nil {
				return err
			}
			return nil
		})
		// The switch: lldpd on swp12 only, every second (its default is 30 s).
		dir := GinkgoT().TempDir()
		// lldpd configures itself through lldpcli, which runs as _lldpd: its socket's dir
		// must be open to it.
		Expect(os.Chmod(dir, 0o755)).To(Succeed())
		conf := filepath.Join(dir, "lldpd.conf")
		Expect(os.WriteFile(conf, []byte("configure system hostname tor-1\nconfigure system description \"top of rack\"\nconfigure lldp tx-interval 1\nconfigure lldp portidsubtype ifname\n"), 0o644)).To(Succeed())
		sw := exec.Command("ip", "netns", "exec", n.fabric, lldpd, "-d", "-u", filepath.Join(dir, "lldpd.socket"), "-O", conf, "-I", "swp12")
		sw.Stdout, sw.Stderr = GinkgoWriter, GinkgoWriter
		Expect(sw.Start()).To(Succeed())
		DeferCleanup(func() { _ = sw.Process.Kill(); _, _ = sw.Process.Wait() })
		k8s = n.k8s
	})
	AfterEach(func() { n.printOnFailure() })

	It("enables LLDP and reports the neighbour in the NodeNetworkState, as nmstate does", func() {
		n.create("lldp-on", `{"interfaces":[
			{"name":"eth2","type":"ethernet","state":"up","lldp":{"enabled":true},"ipv4":{"enabled":false},"ipv6":{"enabled":false}},
			{"name":"eth3","type":"ethernet","state":"up","lldp":{"enabled":true},"ipv4":{"enabled":false},"ipv6":{"enabled":false}}]}`)
		Eventually(n.enactment("lldp-on"), "60s").Should(HavePrefix("Available"))
		Eventually(lldpOf("eth2"), "30s", "500ms").Should(HaveField("Neighbors", ContainElement(SatisfyAll(
			ContainElement(SatisfyAll(HaveKeyWithValue("type", BeEquivalentTo(5)), HaveKeyWithValue("system-name", "tor-1"))),
			ContainElement(HaveKeyWithValue("system-description", "top of rack")),
			ContainElement(SatisfyAll(HaveKeyWithValue("type", BeEquivalentTo(2)), HaveKeyWithValue("port-id", "swp12"),
				HaveKeyWithValue("_description", "Interface name"))),
			ContainElement(HaveKeyWithValue("type", BeEquivalentTo(1))),
		))))
		eth3 := lldpOf("eth3")()
		Expect(eth3).NotTo(BeNil())
		Expect(*eth3.Enabled).To(BeTrue())
		Expect(eth3.Neighbors).To(BeEmpty(), "nothing speaks LLDP on eth3's port")
	})

	It("selects the NIC facing tor-1 by its LLDP neighbour in a capture", func() {
		p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "jumbo-to-tor-1"}}
		p.Spec.Capture = map[string]string{"uplink": `interfaces.lldp.neighbors.0.0.system-name == "tor-1"`}
		p.Spec.DesiredState = shared.State{Raw: []byte(`{"interfaces":[{"name":"{{ capture.uplink.interfaces.0.name }}","type":"ethernet","mtu":9000,
			"description":"uplink to {{ capture.uplink.interfaces.0.lldp.neighbors.0.0.system-name }}"}]}`)}
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Eventually(n.enactment("jumbo-to-tor-1"), "60s").Should(HavePrefix("Available"))
		Expect(n.Run(ctx, "ip", "link", "show", "eth2")).To(ContainSubstring("mtu 9000"))
		Expect(n.Run(ctx, "ip", "link", "show", "eth3")).NotTo(ContainSubstring("mtu 9000"), "eth3 faces no tor-1")
		Expect(string(n.enactmentOf("jumbo-to-tor-1").Status.DesiredState.Raw)).To(SatisfyAll(ContainSubstring(`"name":"eth2"`), ContainSubstring(`"description":"uplink to tor-1"`)))
	})
})
