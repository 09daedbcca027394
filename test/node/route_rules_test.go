//go:build node

package node_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/nmoverlay/nmoverlay/api/field"
	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// Route rules through the handler's engine on an overlay node: they live on the profiles
// of the interfaces that carry them, so the kernel's rules follow the tmpfs layer; read
// back with ip rule.
var _ = Describe("route rules through the engine", Ordered, func() {
	var (
		ctx    = context.Background()
		n      *overlayNode
		nm     *networkmanager.Client
		engine networkmanager.Backend
	)
	apply := func(doc string) {
		tx, err := engine.Apply(ctx, mustParse(doc))
		Expect(err).NotTo(HaveOccurred(), n.NMLog())
		Expect(tx.Commit(ctx)).To(Succeed())
	}
	// rule is the line of ip rule with the given priority, or "".
	rule := func(family, priority string) string {
		out, err := n.Run(ctx, "ip", family, "rule", "show")
		Expect(err).NotTo(HaveOccurred(), out)
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, priority+":") {
				return strings.Join(strings.Fields(l), " ")
			}
		}
		return ""
	}

	// OpenShift's documented rules to main for the cluster's service networks, next to a
	// route in main through the interface; a source rule to a table of its own.
	const documented = `
interfaces:
- name: eth1
  type: ethernet
  state: up
  ipv4:
    enabled: true
    dhcp: false
    address: [{ip: 192.0.2.10, prefix-length: 24}]
  ipv6:
    enabled: true
    address: [{ip: '2001:db8:2::10', prefix-length: 64}]
routes:
  config:
  - {destination: 198.51.100.0/24, metric: 150, next-hop-address: 192.0.2.254, next-hop-interface: eth1, table-id: 254}
  - {destination: 0.0.0.0/0, next-hop-address: 192.0.2.254, next-hop-interface: eth1, table-id: 200}
route-rules:
  config:
  - {ip-to: 172.30.0.0/16, priority: 1000, route-table: 254}
  - {ip-to: 'fd03::/64', priority: 1000, route-table: 254}
  - {ip-from: 192.0.2.10, priority: 2000, route-table: 200}
`

	BeforeAll(func() {
		var err error
		n, err = newOverlayNode("rules", helper, nil)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(n.close)
		// The persistent profile holds a rule of its own.
		persistent := filepath.Join(n.Lower(), "eth1-persistent.nmconnection")
		b, err := os.ReadFile(persistent)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(persistent, []byte(strings.Replace(string(b), "[ipv4]\n", "[ipv4]\nrouting-rule1=priority 500 from 192.0.2.0/24 table 100\n", 1)), 0o600)).To(Succeed())
		nm, engine = n.engineOn(ctx)
	})
	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Println(n.NMLog())
		}
	})

	It("applies the documented rules, both families, and a source rule to its own table", func() {
		apply(documented)
		Expect(rule("-4", "1000")).To(Equal("1000: from all to 172.30.0.0/16 lookup main proto static"))
		Expect(rule("-6", "1000")).To(Equal("1000: from all to fd03::/64 lookup main proto static"))
		Expect(rule("-4", "2000")).To(Equal("2000: from 192.0.2.10 lookup 200 proto static"))
		cur, err := nm.Show(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(state.Verify(mustParse(documented), cur)).To(BeEmpty())
		Expect(cur.RouteRules.Config).To(ContainElement(state.RouteRule{Family: "ipv4", IPFrom: "192.0.2.10/32", Priority: intPtr(2000), RouteTable: intPtr(200)}))
	})

	It("adds an action rule on its iif, and removes the persistent profile's rule with an absent one", func() {
		Expect(rule("-4", "500")).To(Equal("500: from 192.0.2.0/24 lookup 100 proto static"), "the persistent profile's rule")
		apply(documented + `
  - {family: ipv4, iif: eth1, action: blackhole, priority: 3000, ip-to: 203.0.113.0/24}
  - {ip-from: 192.0.2.0/24, route-table: 100, state: absent}
`)
		Expect(rule("-4", "3000")).To(Equal("3000: from all to 203.0.113.0/24 iif eth1 blackhole proto static"))
		Expect(rule("-4", "500")).To(BeEmpty())
		Expect(rule("-4", "1000")).NotTo(BeEmpty(), "a rule the absent one does not select stays")
		lower, err := os.ReadFile(filepath.Join(n.Lower(), "eth1-persistent.nmconnection"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(lower)).To(ContainSubstring("routing-rule1="), "the persistent profile is shadowed, never edited")
	})

	It("refuses a rule no interface can carry, with nothing changed", func() {
		_, err := engine.Apply(ctx, mustParse(`route-rules: {config: [{ip-from: 198.51.100.0/24, route-table: 201}]}`))
		var fe *field.Error
		Expect(errors.As(err, &fe)).To(BeTrue(), "%v", err)
		Expect(fe.Path).To(Equal("route-rules.config[0]"))
		Expect(rule("-4", "3000")).NotTo(BeEmpty())
	})

	It("takes every rule away with the policies: the persistent profile's rule is back", func() {
		apply("")
		for _, p := range [][2]string{{"-4", "2000"}, {"-4", "3000"}, {"-6", "1000"}} {
			Expect(rule(p[0], p[1])).To(BeEmpty())
		}
		Expect(rule("-4", "500")).NotTo(BeEmpty())
		Expect(n.Run(ctx, "ip", "-4", "-o", "addr", "show", "eth1")).To(ContainSubstring("192.0.2.20/24"))
	})
})

func intPtr(i int) *int { return &i }
