//go:build boot

package boot_test

import (
	"context"
	"fmt"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/overlay"
	"github.com/nmoverlay/nmoverlay/test/localcluster"
)

// Install order as on OpenShift: the DaemonSet puts nm-overlay on a node, the MachineConfig
// sets the overlay up with it at boot. A node that boots the MachineConfig before the
// helper is there runs on its persistent profiles, degraded, and its handler refuses every
// policy (a profile would become persistent); after its next reboot the helper verifies
// the overlay and the policy lands in the tmpfs layer.
var _ = Describe("a node that boots the MachineConfig before the DaemonSet put nm-overlay on it", Ordered, func() {
	const nodeName, policy = "order-a", "order-eth1"
	var (
		c   *localcluster.Cluster
		n   *localcluster.Node
		w   localcluster.Workloads
		ctx = context.Background()
	)
	enactment := func() (condition, message, boot string) {
		e := &v1beta1.NodeNetworkConfigurationEnactment{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: shared.EnactmentKey(nodeName, policy)}, e); err != nil {
			return "<none>", err.Error(), ""
		}
		for _, cond := range e.Status.Conditions {
			if cond.Status == metav1.ConditionTrue {
				return cond.Type, cond.Message, e.Status.BootID
			}
		}
		return "<no condition>", "", e.Status.BootID
	}

	BeforeAll(func() {
		o := cluster
		o.Nodes, o.Log = []string{nodeName}, GinkgoWriter
		var err error
		c, err = localcluster.Start(ctx, o)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			c.Close()
			Expect(c.Leftovers()).To(BeEmpty())
		})
		n = c.Nodes[0]
		w, err = localcluster.DeployWorkloads()
		Expect(err).NotTo(HaveOccurred())
	})
	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Print(c.Diagnose(ctx, n, w))
		}
	})

	It("runs degraded on its persistent profiles when the MachineConfig comes first", func() {
		Expect(c.ApplyMachineConfig(ctx, n)).To(Succeed())
		_, err := os.Stat(n.Root + overlay.HelperBinary)
		Expect(os.IsNotExist(err)).To(BeTrue(), "nm-overlay is not on the node yet")
		Expect(run(n.Machine, "cat", overlay.DefaultLayout().DegradedMarker())).To(ContainSubstring("helper not installed"))
		Expect(run(n.Machine, "nmcli", "-g", "GENERAL.CONNECTION", "device", "show", localcluster.SecondNIC)).To(Equal(localcluster.SecondNIC + "-persistent"))
	})

	It("installs nmoverlay; the handler refuses a policy and nothing reaches the persistent dir", func() {
		dir, _, err := c.Kustomization("../../deploy", w)
		Expect(err).NotTo(HaveOccurred())
		_, err = c.Kubectl(ctx, os.Getenv("KUBECTL"), "apply", "-k", dir)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.WaitOperator(ctx, w)).To(Succeed())
		Expect(c.Client.Create(ctx, &nmstatev1.NMState{ObjectMeta: metav1.ObjectMeta{Name: nmstatev1.NMStateName}})).To(Succeed())
		Expect(c.WaitInstalled(ctx, w)).To(Succeed())
		Expect(n.Root+overlay.HelperBinary).To(BeAnExistingFile(), "the init container installed nm-overlay")

		p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: policy}}
		p.Spec.DesiredState = shared.State{Raw: []byte(fmt.Sprintf(`{"interfaces":[{"name":%q,"type":"ethernet","state":"up",
			"ipv4":{"enabled":true,"address":[{"ip":"198.51.100.77","prefix-length":24}]}}]}`, localcluster.SecondNIC))}
		Expect(c.Client.Create(ctx, p)).To(Succeed())
		Eventually(func() string { cond, msg, _ := enactment(); return cond + ": " + msg }, "60s").Should(SatisfyAll(
			HavePrefix(shared.EnactmentFailing), ContainSubstring("refused"), ContainSubstring("helper not installed")))
		Consistently(func() string {
			return run(n.Machine, "ip", "-4", "-o", "addr", "show", localcluster.SecondNIC)
		}, "3s").ShouldNot(ContainSubstring("198.51.100.77"))
		Expect(run(n.Machine, "ls", overlay.NMDefaultKeyfile)).To(Equal(localcluster.Uplink + ".nmconnection\n" + localcluster.SecondNIC + ".nmconnection"))
	})

	It("verifies the overlay after the next reboot, and the handler applies the policy into the tmpfs layer", func() {
		Expect(c.Reboot(ctx, n)).To(Succeed())
		boot, err := n.BootID(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(run(n.Machine, "nm-overlay", "verify")).To(ContainSubstring("overlay verified"))
		Eventually(func() string { cond, _, b := enactment(); return cond + " " + b }, "90s").Should(Equal(shared.EnactmentAvailable + " " + boot))
		Expect(run(n.Machine, "ip", "-4", "-o", "addr", "show", localcluster.SecondNIC)).To(ContainSubstring("198.51.100.77/24"))
		Expect(run(n.Machine, "ls", overlay.DefaultLayout().Upper())).To(ContainSubstring(".nmconnection"))
		Expect(run(n.Machine, "ls", overlay.NMDefaultKeyfile)).NotTo(ContainSubstring(policy))
	})
})
