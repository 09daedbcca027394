//go:build node

package node_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/godbus/dbus/v5"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/networkmanager/nmdbus"
	"github.com/nmoverlay/nmoverlay/test/nmhost"

	"github.com/nmoverlay/nmoverlay/api/field"
)

// Policies as administrators write them: clean-up routes by wildcard, DNS-only policies,
// DNS next to another policy's interfaces, ports leaving their controllers. Every apply
// prunes, as the handler's do: the state is the node's whole desired state.
var _ = Describe("the engine on ordinary policies", Ordered, func() {
	var (
		n   *nmhost.Node
		nm  *networkmanager.Client
		ctx = context.Background()
	)
	ip := func(args ...string) string {
		out, err := n.Run(ctx, "ip", args...)
		Expect(err).NotTo(HaveOccurred())
		return out
	}
	apply := func(policies ...string) {
		tx, err := nm.Apply(ctx, mergePolicies(policies...), networkmanager.ApplyOptions{Prune: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(tx.Commit(ctx)).To(Succeed())
	}
	applyAdding := func(doc string) {
		tx, err := nm.Apply(ctx, mergePolicies(doc), networkmanager.ApplyOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(tx.Commit(ctx)).To(Succeed())
	}
	persistent := func() string {
		b, err := os.ReadFile(filepath.Join(n.Lower(), "persistent-eth4.nmconnection"))
		Expect(err).NotTo(HaveOccurred())
		return string(b)
	}
	activeConn := func(dev string) string {
		return strings.TrimSpace(mustRun(n, "nmcli", "-g", "GENERAL.CON-PATH", "device", "show", dev))
	}
	profileField := func(conn, field string) string {
		return strings.TrimSpace(mustRun(n, "nmcli", "-g", field, "con", "show", conn))
	}

	BeforeAll(func() {
		// The node's own network, as MCO writes it: eth4 with the default route and a
		// static route of its own.
		n, nm = newVethNode("correct", map[string]string{"persistent-eth4.nmconnection": persistentEth4Routed})
		Eventually(func() string { return ip("-4", "route") }, "10s", "100ms").Should(ContainSubstring("default via 10.4.0.254 dev eth4"))
	})
	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Println(n.NMLog())
		}
	})

	Context("an absent route matches on the fields it states, the others wildcards", func() {
		const routed = `
interfaces: [{name: eth1, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.1, prefix-length: 24}]}}]
routes:
  config:
  - {destination: 203.0.113.0/24, next-hop-address: 192.0.2.254, next-hop-interface: eth1}
  - {destination: 198.51.100.0/24, next-hop-address: 192.0.2.253, next-hop-interface: eth1}
  - {destination: 100.64.0.0/16, next-hop-address: 192.0.2.254, next-hop-interface: eth1, table-id: 100}
`
		BeforeEach(func() {
			apply(routed)
			Expect(ip("-4", "route", "show", "dev", "eth1")).To(SatisfyAll(ContainSubstring("203.0.113.0/24"), ContainSubstring("198.51.100.0/24")))
			Expect(ip("-4", "route", "show", "dev", "eth4")).To(ContainSubstring("203.0.113.0/24 via 10.4.0.254"))
		})

		// Without prune states add up, as nmstate's do: a clean-up state alone removes
		// what earlier states put on owned profiles.
		It("by destination alone: from every profile, the persistent one shadowed, the interfaces up", func() {
			applyAdding(`routes: {config: [{destination: 203.0.113.0/24, state: absent}]}`)
			Expect(ip("-4", "route")).NotTo(ContainSubstring("203.0.113.0/24"))
			Expect(ip("-4", "route", "show", "dev", "eth1")).To(ContainSubstring("198.51.100.0/24"), "a route it does not select stays")
			Expect(ip("-4", "addr", "show", "eth1")).To(ContainSubstring("192.0.2.1/24"))
			Expect(persistent()).To(Equal(persistentEth4Routed), "the persistent profile is never edited")
			Expect(ip("-4", "route")).To(ContainSubstring("default via 10.4.0.254 dev eth4"), "eth4 keeps the rest of its profile")

			By("the node's whole state without the clean-up brings both back")
			apply(routed)
			Eventually(func() string { return ip("-4", "route", "show", "dev", "eth4") }, "10s", "100ms").Should(ContainSubstring("203.0.113.0/24"))
			Expect(ip("-4", "route", "show", "dev", "eth1")).To(ContainSubstring("203.0.113.0/24"))
		})

		It("by destination and interface: only that interface's, next to the policy that adds the other", func() {
			apply(routed, `routes: {config: [{destination: 203.0.113.0/24, next-hop-interface: eth4, state: absent}]}`)
			Expect(ip("-4", "route", "show", "dev", "eth4")).NotTo(ContainSubstring("203.0.113.0/24"))
			Expect(ip("-4", "route", "show", "dev", "eth1")).To(ContainSubstring("203.0.113.0/24"))
			Expect(persistent()).To(Equal(persistentEth4Routed))
		})

		It("by next hop: every route through it", func() {
			applyAdding(`routes: {config: [{next-hop-address: 192.0.2.254, state: absent}]}`)
			Expect(ip("-4", "route", "show", "dev", "eth1")).To(SatisfyAll(Not(ContainSubstring("203.0.113.0/24")), ContainSubstring("198.51.100.0/24")))
			Expect(ip("-4", "route", "show", "table", "100")).NotTo(ContainSubstring("100.64.0.0/16"))
			Expect(ip("-4", "route", "show", "dev", "eth4")).To(ContainSubstring("203.0.113.0/24"), "another next hop")
		})

		It("by table: that table's alone", func() {
			applyAdding(`routes: {config: [{table-id: 100, state: absent}]}`)
			Expect(ip("-4", "route", "show", "table", "100")).NotTo(ContainSubstring("100.64.0.0/16"))
			Expect(ip("-4", "route", "show", "dev", "eth1")).To(SatisfyAll(ContainSubstring("203.0.113.0/24"), ContainSubstring("198.51.100.0/24")))
		})
	})

	Context("DNS", func() {
		It("a DNS-only policy goes on the interface with the default route, shadowing its persistent profile", func() {
			apply(`dns-resolver: {config: {server: [10.4.0.53], search: [example.org]}}`)
			s, err := nm.Show(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.DNSResolver.Config.Server).To(Equal([]string{"10.4.0.53"}))
			Expect(s.DNSResolver.Config.Search).To(Equal([]string{"example.org"}))
			Expect(profileField("eth4", "ipv4.dns")).To(Equal("10.4.0.53"))
			Expect(persistent()).To(Equal(persistentEth4Routed))
		})

		It("stays on the DNS policy's interfaces: another policy's interface is not re-activated", func() {
			storage := `interfaces: [{name: eth2, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 198.51.100.2, prefix-length: 24}]}}]`
			bridge := `
interfaces:
- {name: br1, type: linux-bridge, state: up, bridge: {options: {stp: {enabled: false}}, port: [{name: eth3}]}, ipv4: {enabled: true, address: [{ip: 100.64.1.2, prefix-length: 24}]}}
dns-resolver: {config: {server: [100.64.1.53]}}
`
			apply(storage)
			eth2 := activeConn("eth2")
			apply(storage, bridge)
			Expect(activeConn("eth2")).To(Equal(eth2), "the storage policy's interface was re-activated")
			Expect(profileField("eth2", "ipv4.dns")).To(BeEmpty())
			Expect(profileField("br1", "ipv4.dns")).To(Equal("100.64.1.53"))

			By("deleting the storage policy keeps the DNS")
			apply(bridge)
			s, err := nm.Show(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.DNSResolver.Config.Server).To(Equal([]string{"100.64.1.53"}))

			By("deleting the DNS policy removes it")
			apply(storage)
			s, err = nm.Show(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.DNSResolver.Config.Server).To(BeEmpty())
		})

		It("clearing DNS clears IPv4 and IPv6 servers and search domains", func() {
			dual := `
interfaces:
- name: eth1
  type: ethernet
  state: up
  ipv4: {enabled: true, address: [{ip: 192.0.2.1, prefix-length: 24}]}
  ipv6: {enabled: true, address: [{ip: "2001:db8:1::1", prefix-length: 64}]}
`
			apply(dual, `dns-resolver: {config: {server: ["2001:db8:1::53", 192.0.2.53], search: [example.com]}}`)
			s, err := nm.Show(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.DNSResolver.Config.Server).To(Equal([]string{"2001:db8:1::53", "192.0.2.53"}), "the order as stated")
			Expect(s.DNSResolver.Config.Search).To(Equal([]string{"example.com"}))

			apply(dual, `dns-resolver: {config: {}}`)
			s, err = nm.Show(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.DNSResolver.Config.Server).To(BeEmpty())
			Expect(s.DNSResolver.Config.Search).To(BeEmpty())
			Expect(profileField("eth1", "ipv6.dns")).To(BeEmpty())
			Expect(profileField("eth1", "ipv4.dns-search")).To(BeEmpty())
			Expect(strings.TrimSpace(mustRun(n, "nmcli", "-g", "IP4.DNS", "device", "show", "eth4"))).To(BeEmpty(), "no other interface keeps static DNS")
		})

		It("refuses DNS no interface can carry, before any checkpoint, with the field path", func() {
			before := mustRun(n, "nmcli", "-g", "NAME,UUID", "con", "show")
			_, err := nm.Apply(ctx, mergePolicies(
				`interfaces: [{name: eth1, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.1, prefix-length: 24}]}, ipv6: {enabled: false}}]`,
				`dns-resolver: {config: {server: ["2001:db8:1::53"]}}`), networkmanager.ApplyOptions{Prune: true})
			var fe *field.Error
			Expect(errors.As(err, &fe)).To(BeTrue(), "%v", err)
			Expect(fe.Path).To(Equal("dns-resolver.config"))
			Expect(fe.Reason).To(ContainSubstring("IPv6"))
			Expect(mustRun(n, "nmcli", "-g", "NAME,UUID", "con", "show")).To(Equal(before), "nothing changed")
			conn, err := dbus.Connect(n.BusAddress())
			Expect(err).NotTo(HaveOccurred())
			defer conn.Close()
			v, err := conn.Object(nmdbus.BusName, nmdbus.Path).GetProperty(nmdbus.Iface + ".Checkpoints")
			Expect(err).NotTo(HaveOccurred())
			Expect(v.Value()).To(BeEmpty(), "no checkpoint was taken")
		})
	})

	It("a port leaving its controller comes back with IPv6 off, not NetworkManager's auto", func() {
		tx, err := nm.Apply(ctx, mergePolicies(`interfaces: [{name: br2, type: linux-bridge, state: up, bridge: {options: {stp: {enabled: false}}, port: [{name: eth2}]}}]`), networkmanager.ApplyOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(tx.Commit(ctx)).To(Succeed())
		Expect(ip("link", "show", "eth2")).To(ContainSubstring("master br2"))
		tx, err = nm.Apply(ctx, mergePolicies(`interfaces: [{name: br2, state: absent}, {name: eth2, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 198.51.100.2, prefix-length: 24}]}}]`), networkmanager.ApplyOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(tx.Commit(ctx)).To(Succeed())
		Expect(profileField("eth2", "ipv6.method")).To(Equal("disabled"))
		Expect(ip("-6", "addr", "show", "eth2")).NotTo(ContainSubstring("inet6"))
	})

	It("a port naming its controller (controller:) joins it, from another policy or on the node; controller \"\" takes it out", func() {
		bridge := `interfaces: [{name: br3, type: linux-bridge, state: up, bridge: {options: {stp: {enabled: false}}}}]`
		apply(bridge, `interfaces: [{name: eth2, type: ethernet, state: up, controller: br3}]`)
		Expect(ip("link", "show", "eth2")).To(ContainSubstring("master br3"))
		// A bridge the node has, which this state leaves out: eth3 joins, eth2 stays.
		applyAdding(`interfaces: [{name: eth3, type: ethernet, state: up, controller: br3}]`)
		Expect(ip("link", "show", "eth3")).To(ContainSubstring("master br3"))
		Expect(ip("link", "show", "eth2")).To(ContainSubstring("master br3"))
		apply(bridge, `interfaces: [{name: eth2, type: ethernet, state: up, controller: ""}]`)
		Expect(ip("link", "show", "eth2")).NotTo(ContainSubstring("master"))
		Expect(ip("link", "show", "eth3")).NotTo(ContainSubstring("master"), "pruned: no policy names it")
		apply(`interfaces: [{name: br3, state: absent}]`)
	})

	// This host's kernel has no bonding (the VM tier removes bonds): a bridge is a
	// controller all the same.
	It("removing a controller without prune removes its ports' profiles too", func() {
		tx, err := nm.Apply(ctx, mergePolicies(`interfaces: [{name: br7, type: linux-bridge, state: up, bridge: {options: {stp: {enabled: false}}, port: [{name: eth3}]}}]`), networkmanager.ApplyOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(tx.Commit(ctx)).To(Succeed())
		Expect(mustRun(n, "nmcli", "-g", "connection.master", "con", "show", "eth3")).To(ContainSubstring("br7"))
		tx, err = nm.Apply(ctx, mergePolicies(`interfaces: [{name: br7, state: absent}]`), networkmanager.ApplyOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(tx.Commit(ctx)).To(Succeed())
		_, err = n.Run(ctx, "nmcli", "con", "show", "eth3")
		Expect(err).To(HaveOccurred(), "the port's profile (master br7) was left behind")
	})
})

const persistentEth4Routed = `[connection]
id=persistent-eth4
uuid=11111111-2222-4333-8444-666666666666
type=ethernet
interface-name=eth4

[ipv4]
method=manual
address1=10.4.0.1/24,10.4.0.254
route1=203.0.113.0/24,10.4.0.254

[ipv6]
method=disabled
`
