//go:build node

package node_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// The keyfiles nmoverlay render --persist lays down through a MachineConfig, loaded by a
// real NetworkManager from its persistent dir with nothing else of the engine's: it takes
// every file, and once it has started them the node is in the desired state as the
// engine verifies its own applies (state.Verify).
var _ = Describe("persistent keyfiles rendered from a desired state", func() {
	ctx := context.Background()
	for _, tc := range []struct{ name, desired string }{
		// A bridge where a bond would be: the node tier's host kernel has no bonding.
		{"a bridge over two NICs with static addresses, routes in a table, a route rule and DNS", `{"interfaces":[
  {"name":"eth1","type":"ethernet","state":"up"},{"name":"eth2","type":"ethernet","state":"up"},
  {"name":"br7","type":"linux-bridge","state":"up","bridge":{"options":{"stp":{"enabled":false}},"port":[{"name":"eth1"},{"name":"eth2"}]},
   "ipv4":{"enabled":true,"dhcp":false,"address":[{"ip":"192.0.2.10","prefix-length":24}]},
   "ipv6":{"enabled":true,"dhcp":false,"autoconf":false,"address":[{"ip":"2001:db8:7::10","prefix-length":64}]}}],
 "routes":{"config":[{"destination":"198.51.100.0/24","next-hop-address":"192.0.2.2","next-hop-interface":"br7","table-id":100,"metric":50},
  {"destination":"203.0.113.0/24","next-hop-address":"192.0.2.3","next-hop-interface":"br7"}]},
 "route-rules":{"config":[{"ip-from":"192.0.2.0/24","route-table":100,"priority":3000}]},
 "dns-resolver":{"config":{"server":["192.0.2.53"],"search":["example.com"]}}}`},
		{"a bridge with a port, an MTU and an address", `{"interfaces":[
  {"name":"eth3","type":"ethernet","state":"up","mtu":9000},
  {"name":"br8","type":"linux-bridge","state":"up","mtu":9000,"bridge":{"options":{"stp":{"enabled":false}},"port":[{"name":"eth3"}]},
   "ipv4":{"enabled":true,"dhcp":false,"address":[{"ip":"198.51.100.8","prefix-length":24}]},"ipv6":{"enabled":false}}]}`},
	} {
		It("loads and runs "+tc.name, func() {
			desired, err := state.Parse([]byte(tc.desired))
			Expect(err).NotTo(HaveOccurred())
			files, err := networkmanager.PersistentKeyfiles(desired)
			Expect(err).NotTo(HaveOccurred())
			// As MCO lays them down: in the persistent dir before NetworkManager starts.
			persistent := map[string]string{}
			for _, f := range files {
				persistent[f.Name] = string(f.Content)
			}
			n, nm := newVethNode("persist", persistent)
			for _, f := range files {
				out, err := n.Run(ctx, "nmcli", "-g", "connection.id", "connection", "show", f.Name[:len(f.Name)-len(".nmconnection")])
				Expect(err).NotTo(HaveOccurred(), "NetworkManager loaded %s:\n%s\n%s", f.Name, f.Content, n.NMLog())
				Expect(out).NotTo(BeEmpty())
			}
			Eventually(func() []string {
				current, err := nm.Show(ctx)
				Expect(err).NotTo(HaveOccurred())
				return state.Verify(desired, current)
			}, "30s", "500ms").Should(BeEmpty(), func() string { return "the node runs the desired state from the keyfiles alone:\n" + n.NMLog() })
			for _, line := range strings.Split(n.NMLog(), "\n") {
				Expect(strings.Contains(line, "<warn>") && strings.Contains(line, "keyfile")).To(BeFalse(), "the keyfile plugin warned: %s", line)
			}
		})
	}
})
