//go:build node

package node_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/nmoverlay/nmoverlay/test/nmhost"
)

// What nmoverlay's Open vSwitch support rests on (TEST-RECIPES §10), on a node with Open
// vSwitch on its userspace datapath and NetworkManager built with its OVS plugin
// (hack/nm-ovs.sh): NetworkManager makes an OVS bridge from its profiles, and at its next
// start it removes the OVS objects it made whose profiles are gone, which is what makes
// profiles in the tmpfs layer take their bridges with them at a reboot. A bridge made with
// ovs-vsctl is left alone.
var _ = Describe("Open vSwitch under NetworkManager, the facts OVS support rests on", Ordered, func() {
	var (
		n   *nmhost.Node
		ctx = context.Background()
	)
	run := func(name string, args ...string) string {
		out, err := n.Run(ctx, name, args...)
		Expect(err).NotTo(HaveOccurred(), "%s\n%s", out, n.NMLog())
		return strings.TrimSpace(out)
	}
	boot := func() {
		Expect(n.Boot(ctx)).To(Succeed())
		Expect(n.StartNM(ctx, "")).To(Succeed(), n.NMLog())
	}

	BeforeAll(func() {
		nmDir := os.Getenv("NMOVERLAY_NM_OVS")
		Expect(filepath.Join(nmDir, "NetworkManager")).To(BeAnExistingFile(), "NMOVERLAY_NM_OVS is unset: run make test-node (hack/nm-ovs.sh builds it)")
		var err error
		n, err = nmhost.New("ovs")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(n.Close)
		n.OVS = &nmhost.OVS{NetworkManagerDir: nmDir}
		n.BootSetup = func(n *nmhost.Node) error {
			if _, err := n.Run(ctx, "ip", "link", "add", "eth1", "type", "veth", "peer", "name", "eth1p"); err != nil {
				return err
			}
			_, err := n.Run(ctx, "ip", "link", "set", "eth1p", "up")
			return err
		}
		boot()
	})
	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Println(n.NMLog())
		}
	})

	It("makes an OVS bridge with a port and an internal interface from its profiles", func() {
		for _, args := range [][]string{
			{"type", "ovs-bridge", "con-name", "br-test", "conn.interface", "br-test", "ovs-bridge.datapath-type", "netdev"},
			{"type", "ovs-port", "con-name", "port-br-test", "conn.interface", "br-test", "master", "br-test"},
			{"type", "ovs-interface", "con-name", "if-br-test", "conn.interface", "br-test", "master", "port-br-test",
				"slave-type", "ovs-port", "ovs-interface.type", "internal", "ipv4.method", "manual", "ipv4.addresses", "198.51.100.1/24", "ipv6.method", "disabled"},
			{"type", "ovs-port", "con-name", "port-eth1", "conn.interface", "eth1", "master", "br-test"},
			{"type", "ethernet", "con-name", "eth1-ovs", "conn.interface", "eth1", "master", "port-eth1", "slave-type", "ovs-port"},
		} {
			run("nmcli", append([]string{"connection", "add"}, args...)...)
		}
		run("nmcli", "--wait", "20", "connection", "up", "if-br-test")
		run("nmcli", "--wait", "20", "connection", "up", "eth1-ovs")
		// ovs-vsctl's bridge commands leave out the port named like its bridge (the bridge's
		// local port): the tables show it.
		Expect(strings.Fields(run("ovs-vsctl", "list-ports", "br-test"))).To(ConsistOf("eth1"))
		Expect(run("ovs-vsctl", "--bare", "--columns=name", "find", "Port", "name=br-test")).To(Equal("br-test"))
		Expect(run("ovs-vsctl", "get", "Interface", "br-test", "type")).To(Equal("internal"))
		Expect(run("ovs-vsctl", "--columns=external_ids", "list", "Interface", "eth1")).To(ContainSubstring("NM.connection.uuid"))
		Expect(run("ip", "-4", "-o", "addr", "show", "br-test")).To(ContainSubstring("198.51.100.1/24"))
	})

	It("removes at its next start the OVS objects it made whose profiles are gone, and leaves a bridge made with ovs-vsctl", func() {
		run("ovs-vsctl", "add-br", "br-manual", "--", "set", "Bridge", "br-manual", "datapath_type=netdev")
		n.Shutdown() // a reboot: the database persists, the profiles in the tmpfs layer would not
		for _, f := range []string{"br-test", "port-br-test", "if-br-test", "port-eth1", "eth1-ovs"} {
			Expect(os.Remove(filepath.Join(n.Lower(), f+".nmconnection"))).To(Succeed())
		}
		boot()
		Eventually(func() []string { return strings.Fields(run("ovs-vsctl", "list-br")) }, "20s", "250ms").Should(Equal([]string{"br-manual"}))
	})
})
