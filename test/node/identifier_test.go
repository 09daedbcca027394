//go:build node

package node_test

import (
	"context"
	"errors"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/nmoverlay/nmoverlay/api/field"
	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/test/nmhost"
)

// identifier: mac-address through the engine: the interface is found by its MAC address,
// whatever the kernel named it, and the name the policy gave names its profile.
var _ = Describe("interfaces identified by MAC address", Ordered, func() {
	const mac = "02:00:00:5e:00:53"
	var (
		ctx    = context.Background()
		n      *overlayNode
		nm     *networkmanager.Client
		engine networkmanager.Backend
	)

	BeforeAll(func() {
		var err error
		// A NIC the kernel named enp7s0 with a known address, cabled to nothing.
		n, err = newOverlayNode("ident", helper, func(node *nmhost.Node) error {
			if _, err := node.Run(ctx, "ip", "link", "add", "enp7s0", "address", mac, "type", "veth", "peer", "name", "enp7s0p"); err != nil {
				return err
			}
			_, err := node.Run(ctx, "ip", "link", "set", "enp7s0p", "up")
			return err
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(n.close)
		nm, engine = n.engineOn(ctx)
	})
	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Println(n.NMLog())
		}
	})

	It("configures the NIC with that MAC address, its profile named as the policy names the interface", func() {
		doc := `
interfaces:
- name: storage
  identifier: mac-address
  mac-address: "` + strings.ToUpper(mac) + `"
  type: ethernet
  state: up
  mtu: 9000
  ipv4: {enabled: true, address: [{ip: 198.51.100.7, prefix-length: 24}]}
routes:
  config:
  - {destination: 203.0.113.0/24, next-hop-address: 198.51.100.1, next-hop-interface: storage}
`
		tx, err := engine.Apply(ctx, mustParse(doc))
		Expect(err).NotTo(HaveOccurred(), n.NMLog())
		Expect(tx.Commit(ctx)).To(Succeed())
		out, err := n.Run(ctx, "ip", "addr", "show", "enp7s0")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(SatisfyAll(ContainSubstring("mtu 9000"), ContainSubstring("198.51.100.7/24")))
		out, err = n.Run(ctx, "ip", "route", "show", "203.0.113.0/24")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("via 198.51.100.1 dev enp7s0"))
		out, err = n.Run(ctx, "nmcli", "-g", "connection.id,802-3-ethernet.mac-address", "connection", "show", "--active", "storage")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(strings.ToLower(out)).To(ContainSubstring(strings.ReplaceAll(mac, ":", `\:`)))
		cur, err := nm.Show(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(cur.Interfaces).To(ContainElement(SatisfyAll(HaveField("Name", "enp7s0"), HaveField("ProfileName", HaveValue(Equal("storage"))))))
	})

	It("refuses a MAC address no NIC has, naming it, before changing anything", func() {
		_, err := engine.Apply(ctx, mustParse(`interfaces: [{name: storage, identifier: mac-address, mac-address: "02:00:00:5e:00:99", type: ethernet, mtu: 1500}]`))
		var fe field.Errors
		Expect(errors.As(err, &fe)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(Equal("interfaces[name=storage].mac-address: no interface with MAC address 02:00:00:5e:00:99 on this node"))
		out, _ := n.Run(ctx, "ip", "link", "show", "enp7s0")
		Expect(out).To(ContainSubstring("mtu 9000"), "nothing changed")
	})

	It("refuses OpenShift's IP-over-InfiniBand example on a node without InfiniBand, saying so", func() {
		_, err := engine.Apply(ctx, mustParse(`interfaces: [{name: ibp27s0, type: infiniband, state: up, identifier: mac-address,
  mac-address: "20:00:55:04:01:FE:80:00:00:00:00:00:00:00:02:C9:02:00:23:13:92", infiniband: {mode: datagram, pkey: "0xffff"},
  ipv4: {enabled: true, dhcp: false, address: [{ip: 100.125.3.4, prefix-length: 16}]}, ipv6: {enabled: false}}]`))
		Expect(err).To(MatchError("interfaces[name=ibp27s0]: no InfiniBand device here"))
	})
})
