//go:build node

package node_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/internal/migration"
	"github.com/nmoverlay/nmoverlay/internal/node"
	"github.com/nmoverlay/nmoverlay/test/fabric"
	"github.com/nmoverlay/nmoverlay/test/kit"
)

// kubernetes-nmstate's leftovers on a node, as nmstate writes them through NetworkManager:
// a bridge with a veth port (one policy) and a bridge holding the node's InternalIP
// (another).
var leftovers = map[string]string{
	"br7.nmconnection": "[connection]\nid=br7\nuuid=7a1b2c3d-0000-4000-8000-000000000007\ntype=bridge\ninterface-name=br7\n" +
		"autoconnect-slaves=1\n\n[bridge]\nstp=false\n\n[ipv4]\naddress1=198.51.100.7/24\nmethod=manual\n\n[ipv6]\nmethod=disabled\n",
	"veth8.nmconnection": "[connection]\nid=veth8\nuuid=7a1b2c3d-0000-4000-8000-000000000008\ntype=veth\ninterface-name=veth8\n" +
		"master=7a1b2c3d-0000-4000-8000-000000000007\nslave-type=bridge\n\n[veth]\npeer=veth8p\n",
	"br9.nmconnection": "[connection]\nid=br9\nuuid=7a1b2c3d-0000-4000-8000-000000000009\ntype=bridge\ninterface-name=br9\n\n" +
		"[bridge]\nstp=false\n\n[ipv4]\naddress1=203.0.113.9/24\nmethod=manual\n\n[ipv6]\nmethod=disabled\n",
}

// A node that ran kubernetes-nmstate, before it is on the overlay: NetworkManager on the
// persistent dir with the policies' profiles active. The handler refuses the policies
// (applied now, they would be persistent) and keeps the plan of what the next boot on the
// overlay moves out: the profiles the policies in force wrote, but what the node needs to
// reach its cluster (here, the interface holding its InternalIP); a policy deleted, its
// profiles stay.
var _ = Describe("the handler on a node moving from kubernetes-nmstate", Ordered, func() {
	var (
		n        *overlayNode
		k8s      client.Client
		ctx      = context.Background()
		planPath string
	)
	plan := func() (*migration.PlanFile, error) { return migration.ReadPlan(planPath) }
	moved := func() []string {
		p, err := plan()
		Expect(err).NotTo(HaveOccurred())
		if p == nil {
			return nil
		}
		var files []string
		for _, e := range p.Move {
			files = append(files, e.File)
		}
		return files
	}
	create := func(name, desired string) {
		p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
		p.Spec.DesiredState = shared.State{Raw: []byte(desired)}
		Expect(k8s.Create(ctx, p)).To(Succeed())
	}

	BeforeAll(func() {
		a, err := kit.StartAPI()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(a.Stop)
		stopController, err := a.StartController()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stopController)
		k8s = a.Client
		nd, err := kit.ReadyNode(ctx, k8s, "migrating", nil)
		Expect(err).NotTo(HaveOccurred())
		nd.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "203.0.113.9"}}
		Expect(k8s.Status().Update(ctx, nd)).To(Succeed())

		n, err = newOverlayNode("migrating", helper, nil)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(n.close)
		for name, content := range leftovers {
			Expect(os.WriteFile(filepath.Join(n.Lower(), name), []byte(content), 0o600)).To(Succeed())
		}
		// As the node boots before its MachineConfig: no overlay, NetworkManager on the
		// persistent dir, the node marked (tmpfiles' default).
		Expect(n.Boot(ctx)).To(Succeed())
		_, err = n.Run(ctx, "sh", "-c", "mkdir -p "+n.layout.RunDir+` && echo '{"reason":"not set up in this boot"}' > `+n.layout.DegradedMarker())
		Expect(err).NotTo(HaveOccurred())
		Expect(n.StartNM(ctx, "")).To(Succeed())
		Eventually(func() string { out, _ := n.Run(ctx, "ip", "-4", "addr", "show", "br9"); return out }, "20s").Should(ContainSubstring("203.0.113.9/24"))

		create("bridge", `{"interfaces":[{"name":"br7","type":"linux-bridge","state":"up","ipv4":{"enabled":true,"address":[{"ip":"198.51.100.7","prefix-length":24}]},
			"bridge":{"options":{"stp":{"enabled":false}},"port":[{"name":"veth8"}]}},{"name":"veth8","type":"veth","state":"up","veth":{"peer":"veth8p"}}]}`)
		create("internal", `{"interfaces":[{"name":"br9","type":"linux-bridge","state":"up","ipv4":{"enabled":true,"address":[{"ip":"203.0.113.9","prefix-length":24}]},
			"bridge":{"options":{"stp":{"enabled":false}}}}]}`)
		planPath = filepath.Join(GinkgoT().TempDir(), "migration", "plan.json")
		n.migration = &node.Migration{Lower: n.Lower(), PlanPath: planPath, APIServer: netip.MustParseAddr(fabric.Gateway)}
		stop, err := n.startHandler(a.Env.Config, k8s, "migrating")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(stop()).To(Succeed()) })
	})
	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Println(n.NMLog())
		}
	})

	It("plans to move the policies' profiles, keeping the one of the node's InternalIP", func() {
		Eventually(moved, "30s", "200ms").Should(ConsistOf("br7.nmconnection", "veth8.nmconnection"))
		p, err := plan()
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Lower).To(Equal(n.Lower()))
		for _, e := range p.Move {
			Expect(e.Policies).To(Equal([]string{"bridge"}))
			Expect(e.SHA256).NotTo(BeEmpty())
		}
		stays := map[string]string{}
		for _, e := range p.Stay {
			stays[e.File] = e.Why
		}
		Expect(stays).To(HaveKeyWithValue("br9.nmconnection",
			"br9 holds the node's InternalIP 203.0.113.9: the node needs it to boot, so it stays persistent (policies internal)"))
		// The handler applied nothing: the node is not on the overlay.
		Expect(enactmentSummary(k8s, "migrating", "bridge")()).NotTo(HavePrefix("Available"))
		out, err := n.Run(ctx, "nmcli", "-g", "NAME", "connection", "show", "--active")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("br7"), "kubernetes-nmstate's profiles still run the node")
	})

	It("keeps a deleted policy's profiles, and drops the plan once nothing moves", func() {
		Expect(k8s.Delete(ctx, &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "bridge"}})).To(Succeed())
		Eventually(func() (bool, error) {
			_, err := os.Stat(planPath)
			return os.IsNotExist(err), nil
		}, "30s", "200ms").Should(BeTrue(), "no plan: nothing the policies in force wrote is to move")
		for name := range leftovers {
			_, err := os.Stat(filepath.Join(n.Lower(), name))
			Expect(err).NotTo(HaveOccurred(), "%s is still in the persistent dir", name)
		}
	})
})
