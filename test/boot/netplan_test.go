//go:build boot

package boot_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/netplan"
	"github.com/nmoverlay/nmoverlay/internal/paths"
	"github.com/nmoverlay/nmoverlay/test/clusterspec"
	"github.com/nmoverlay/nmoverlay/test/kit"
	"github.com/nmoverlay/nmoverlay/test/localcluster"
)

// The netplan backend as the operator deploys it: the NMState's spec.backend netplan, the
// handler a pod on a node with a kubelet, running the node's own netplan chrooted into the
// host's root. A policy in netplan's schema is applied under /run/netplan, and after a
// reboot (/run empty, the node on its persistent profiles) the handler applies it again.
var _ = Describe("the netplan backend, as pods", Ordered, func() {
	const policy, address = "netplan-second-nic", "198.51.100.77/24"
	var (
		c   *localcluster.Cluster
		n   *localcluster.Node
		w   localcluster.Workloads
		ctx = context.Background()
	)
	enactment := func() string { return kit.EnactmentSummary(c.Client, n.Name, policy)() }
	addresses := func() string {
		out, _ := n.Run(ctx, "ip", "-4", "addr", "show", localcluster.SecondNIC)
		return out
	}

	BeforeAll(func() {
		c = clusterspec.Start(ctx, cluster, "netplan-a")
		var err error
		n = c.Nodes[0]
		w, err = localcluster.DeployWorkloads()
		Expect(err).NotTo(HaveOccurred())
		Expect(c.ApplyMachineConfig(ctx, n)).To(Succeed())
		dir, _, err := c.Kustomization("../../deploy", w)
		Expect(err).NotTo(HaveOccurred())
		out, err := c.Kubectl(ctx, os.Getenv("KUBECTL"), "apply", "-k", dir)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(c.WaitOperator(ctx, w)).To(Succeed())
		Expect(c.Client.Create(ctx, &nmstatev1.NMState{ObjectMeta: metav1.ObjectMeta{Name: nmstatev1.NMStateName},
			Spec: nmstatev1.NMStateSpec{Backend: nmstatev1.BackendNetplan}})).To(Succeed())
		Expect(c.WaitInstalled(ctx, w)).To(Succeed())
	})
	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Print(c.Diagnose(ctx, n, w))
		}
	})

	It("applies a policy in netplan's schema through the handler's pod, under /run/netplan", func() {
		boot, err := n.BootID(ctx)
		Expect(err).NotTo(HaveOccurred())
		p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: policy}}
		p.Spec.DesiredState = shared.State{Raw: []byte(`{"network":{"version":2,"ethernets":{"` + localcluster.SecondNIC +
			`":{"addresses":["` + address + `"]}}}}`)}
		Expect(c.Client.Create(ctx, p)).To(Succeed())
		Eventually(enactment, "120s", "250ms").Should(HavePrefix(shared.EnactmentAvailable + " " + boot))
		Expect(addresses()).To(ContainSubstring(address))
		Expect(n.Run(ctx, "cat", filepath.Join(netplan.RunDir, netplan.FilePrefix+policy+".yaml"))).To(ContainSubstring(address))
		Expect(n.Run(ctx, "ls", netplan.ProfileDir)).To(ContainSubstring("netplan-" + localcluster.SecondNIC + ".nmconnection"))
		nns := &v1beta1.NodeNetworkState{}
		Eventually(func() string {
			_ = c.Client.Get(ctx, client.ObjectKey{Name: n.Name}, nns)
			return nns.Status.Backend
		}, "30s").Should(Equal(netplan.Name))
		args, err := n.Run(ctx, "sh", "-c", "cat /proc/$(pgrep -x handler)/cmdline | tr '\\0' ' '")
		Expect(err).NotTo(HaveOccurred())
		Expect(args).To(ContainSubstring("--backend=netplan"), "the operator passed the CR's backend")
	})

	It("re-converges after a reboot: /run is empty, the handler applies the policy again", func() {
		before, err := n.BootID(ctx)
		Expect(err).NotTo(HaveOccurred())
		start := time.Now()
		Expect(c.Reboot(ctx, n)).To(Succeed())
		after, err := n.BootID(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(after).NotTo(Equal(before))
		Eventually(enactment, "180s", "250ms").Should(HavePrefix(shared.EnactmentAvailable + " " + after))
		GinkgoWriter.Printf("reboot to Available in the new boot, netplan backend: %s\n", time.Since(start).Round(100*time.Millisecond))
		Expect(addresses()).To(ContainSubstring(address))
		lower, err := n.Run(ctx, "ls", paths.NMDefaultKeyfile)
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Fields(lower)).To(ConsistOf(localcluster.Uplink+".nmconnection", localcluster.SecondNIC+".nmconnection"),
			"nothing persistent")
		Expect(n.Run(ctx, "ls", "/etc/netplan")).To(BeEmpty(), "the node's own netplan configuration untouched")
	})
})
