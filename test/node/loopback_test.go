//go:build node

package node_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
)

// lo through the engine on NetworkManager 1.42, the first release with loopback profiles:
// nmstate's loopback test (an MTU, more addresses, then absent) and the blackhole route of
// nmstate's eth1_add_route.yml, which has no next hop and no VRF and so goes on lo's
// profile. The loopback addresses must survive every step: the node's own traffic runs
// over them.
var _ = Describe("lo through the engine", Ordered, func() {
	var (
		ctx    = context.Background()
		n      *overlayNode
		engine networkmanager.Backend
	)
	apply := func(doc string) {
		tx, err := engine.Apply(ctx, mustParse(doc))
		Expect(err).NotTo(HaveOccurred(), n.NMLog())
		Expect(tx.Commit(ctx)).To(Succeed())
	}
	run := func(args ...string) string {
		out, err := n.Run(ctx, args[0], args[1:]...)
		Expect(err).NotTo(HaveOccurred(), out)
		return out
	}
	upperProfiles := func() []string {
		profiles, err := filepath.Glob(filepath.Join(n.PathInNode(n.layout.Upper()), "*.nmconnection"))
		Expect(err).NotTo(HaveOccurred())
		return profiles
	}
	loopbackKept := func() {
		Expect(run("ip", "-4", "-o", "addr", "show", "lo")).To(ContainSubstring("inet 127.0.0.1/8"))
		Expect(run("ip", "-6", "-o", "addr", "show", "lo")).To(ContainSubstring("inet6 ::1/128"))
		Expect(run("ip", "link", "show", "lo")).To(ContainSubstring(",UP,"))
	}

	BeforeAll(func() {
		var err error
		n, err = newOverlayNode("loopback", helper, nil)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(n.close)
		_, engine = n.engineOn(ctx)
	})
	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Println(n.NMLog())
		}
	})

	It("gives lo an MTU and more addresses, keeping its own", func() {
		apply(`
interfaces:
- name: lo
  type: loopback
  state: up
  mtu: 12800
  ipv4: {enabled: true, address: [{ip: 192.0.2.251, prefix-length: 24}]}
  ipv6: {enabled: true, address: [{ip: '2001:db8:1::1', prefix-length: 64}]}
`)
		Expect(run("ip", "link", "show", "lo")).To(ContainSubstring("mtu 12800"))
		Expect(run("ip", "-4", "-o", "addr", "show", "lo")).To(ContainSubstring("inet 192.0.2.251/24"))
		Expect(run("ip", "-6", "-o", "addr", "show", "lo")).To(ContainSubstring("inet6 2001:db8:1::1/64"))
		loopbackKept()
		profiles := upperProfiles()
		Expect(profiles).To(HaveLen(1), "lo's profile, in the tmpfs layer")
		b, err := os.ReadFile(profiles[0])
		Expect(err).NotTo(HaveOccurred())
		Expect(string(b)).To(ContainSubstring("type=loopback"))
	})

	It("puts a blackhole route with no next hop and no VRF on lo's profile, as nmstate does", func() {
		apply(`
routes:
  config:
  - {destination: 198.51.200.0/24, route-type: blackhole}
  - {destination: '2001:db8:f::/64', route-type: unreachable}
`)
		Expect(run("ip", "-4", "route", "show", "type", "blackhole")).To(ContainSubstring("blackhole 198.51.200.0/24"))
		Expect(run("ip", "-6", "route", "show", "type", "unreachable")).To(ContainSubstring("unreachable 2001:db8:f::/64"))
		Expect(run("ip", "link", "show", "lo")).NotTo(ContainSubstring("mtu 12800"), "the MTU went with the policy that set it")
		loopbackKept()
	})

	It("gives lo back its defaults when the policies go", func() {
		apply("")
		Expect(run("ip", "-4", "route", "show", "type", "blackhole")).NotTo(ContainSubstring("198.51.200.0/24"))
		Expect(run("ip", "-6", "route", "show", "type", "unreachable")).NotTo(ContainSubstring("2001:db8:f::/64"))
		Eventually(func() string { return run("ip", "link", "show", "lo") }).Should(ContainSubstring("mtu 65536"))
		Expect(strings.Contains(run("ip", "-4", "-o", "addr", "show", "lo"), "192.0.2.251")).To(BeFalse())
		loopbackKept()
		Expect(upperProfiles()).To(BeEmpty())
	})
})
