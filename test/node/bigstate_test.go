//go:build node

package node_test

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/node"
	"github.com/nmoverlay/nmoverlay/test/nmhost"
)

// A node whose state does not fit in a NodeNetworkState: 400 veth pairs, each pair's one
// end up with 64 IPv6 addresses, the other down (about 1.4 MB of state, over
// node.MaxStateBytes). The handler writes what fits, the most useful part, and says what
// it left out, by name; a policy naming an interface left out applies all the same, since
// the handler applies and verifies against the node's whole state, not the reported one.
var _ = Describe("a node whose state is bigger than a NodeNetworkState holds", Ordered, func() {
	const pairs, addresses = 400, 64
	var p *processNode
	BeforeAll(func() {
		p = newProcessNodeWith("bigstate", func(n *nmhost.Node, _ string) error {
			var batch strings.Builder
			for i := range pairs {
				fmt.Fprintf(&batch, "link add f%d type veth peer name f%dp\nlink set f%dp up\n", i, i, i)
			}
			return ipBatch(n, batch.String())
		})
		// The addresses once NetworkManager runs: at its start, taking in 25,600 of them
		// takes it longer than the node's boot allows.
		var batch strings.Builder
		for i := range pairs {
			for j := range addresses {
				// No prefix route: the addresses alone make the state big.
				fmt.Fprintf(&batch, "addr add 2001:db8:%x:%x::1/128 dev f%dp nodad noprefixroute\n", i, j, i)
			}
		}
		Expect(ipBatch(p.Node, batch.String())).To(Succeed())
	})
	AfterEach(func() { p.printOnFailure() })

	summarized := func() string {
		nns := &v1beta1.NodeNetworkState{}
		if err := p.k8s.Get(context.Background(), client.ObjectKey{Name: p.name}, nns); err != nil {
			return ""
		}
		if len(nns.Status.CurrentState.Raw) > node.MaxStateBytes {
			return fmt.Sprintf("currentState of %d bytes, over %d", len(nns.Status.CurrentState.Raw), node.MaxStateBytes)
		}
		return nns.Status.Summarized
	}

	It("reports what fits and names what it left out", func() {
		Eventually(summarized, "3m", "1s").Should(MatchRegexp(`the node's state is \d+ bytes, over the %d allowed here; left out: .*\d+ of \d+ interfaces \(down ones first, then those without addresses\): f0, `, node.MaxStateBytes))
		leftOut := map[string]bool{}
		for _, name := range strings.Split(summarized()[strings.LastIndex(summarized(), ": ")+2:], ", ") {
			leftOut[name] = true
		}
		shown := map[string]bool{}
		for _, it := range reportedState(p.k8s, p.name).Interfaces {
			shown[it.Name] = true
			Expect(leftOut).NotTo(HaveKey(it.Name), "named as left out, and shown")
		}
		Expect(shown).To(HaveKey("f0p"), "an up interface with addresses is kept")
		Expect(shown).NotTo(HaveKey("f0"), "a down one is left out first")
	})

	It("applies a policy naming an interface it left out", func() {
		Expect(summarized()).To(ContainSubstring(" f7,"))
		p.create("bigstate-f7", `{"interfaces":[{"name":"f7","type":"ethernet","state":"up","ipv4":{"enabled":true,"address":[{"ip":"198.51.100.7","prefix-length":24}]}}]}`)
		Eventually(p.enactment("bigstate-f7"), "3m", "1s").Should(HavePrefix("Available"))
		out, err := p.Run(context.Background(), "ip", "-4", "-o", "addr", "show", "dev", "f7")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("198.51.100.7/24"))
	})
})

// ipBatch runs ip -batch with these commands inside the node.
func ipBatch(n *nmhost.Node, commands string) error {
	cmd := n.Command(context.Background(), "ip", "-batch", "-")
	cmd.Stdin = strings.NewReader(commands)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ip -batch: %v: %s", err, out)
	}
	return nil
}
