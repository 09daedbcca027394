//go:build boot

package boot_test

import (
	"context"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/nmoverlay/nmoverlay/overlay"
	"github.com/nmoverlay/nmoverlay/test/demo"
	"github.com/nmoverlay/nmoverlay/test/localcluster"
)

// The demo's scenario (make demo), end to end, on the same code: two nspawn nodes, the
// control plane, the controller; every step checks its own outcome, and the report is
// asserted here on top.
var _ = Describe("the demo scenario", func() {
	It("applies, re-converges after a reboot, rolls back a bad gateway, deletes, and leaves nothing behind", func() {
		Expect(os.Getenv("KUBEBUILDER_ASSETS")).NotTo(BeEmpty(), "KUBEBUILDER_ASSETS is unset: run make test-boot")
		kubectl := os.Getenv("KUBECTL")
		Expect(kubectl).NotTo(BeEmpty(), "KUBECTL is unset: run make test-boot (hack/kubectl.sh builds it)")
		nodes := []string{"demo-a", "demo-b"}
		var out strings.Builder
		report, err := demo.Run(context.Background(), demo.Options{
			Cluster: localcluster.Options{
				Rootfs:   baseRootfs,
				CRDs:     "../../deploy/crds",
				Nodes:    nodes,
				Binaries: localcluster.Binaries{Helper: helper, Handler: handler, Controller: controller},
				Log:      GinkgoWriter,
			},
			Kubectl: kubectl,
			Out:     &out,
		})
		GinkgoWriter.Print(out.String())
		Expect(err).NotTo(HaveOccurred())

		By("every step ran, the clean-up last")
		Expect(report.Steps).To(HaveLen(9))
		Expect(report.Steps[len(report.Steps)-1].Title).To(HavePrefix("clean up"))

		By("one node's handler was denied another node's enactment, by name")
		Expect(report.Denial).To(SatisfyAll(ContainSubstring("demo-a"), ContainSubstring("demo-b"), ContainSubstring("forbidden")))

		By("the policy's profile was only in the tmpfs layer")
		Expect(report.UpperLayer).To(ContainElement(SatisfyAll(
			HaveField("Interface", demo.Bridge), HaveField("Change", overlay.Added))))
		Expect(report.LowerLayer).To(ConsistOf(localcluster.Uplink+".nmconnection", localcluster.SecondNIC+".nmconnection"))

		By("the reboot was a new boot, and the handler re-applied the policy in it")
		Expect(report.BootIDs[0]).NotTo(Equal(report.BootIDs[1]))
		Expect(report.Reconverge).To(BeNumerically(">", 0))
		Expect(report.Reconverge).To(BeNumerically("<", report.Reboot), "the handler's own figure is part of the reboot")

		By("the bad gateway was rolled back by the gateway probe")
		Expect(report.BadGateway).To(ContainSubstring("default-gateway"))
		Expect(report.DefaultRouteAfter).To(ContainSubstring("via 192.0.2.254"))

		By("after the delete every node runs its persistent profile and the tmpfs layer holds no profile of the policy")
		Expect(report.NodesAfterDelete).To(HaveLen(len(nodes)))
		for _, n := range nodes {
			Expect(report.NodesAfterDelete).To(HaveKeyWithValue(n, localcluster.SecondNIC+"-persistent"))
		}
		Expect(report.UpperAfterDelete).NotTo(ContainElement(HaveField("Interface", demo.Bridge)))

		By("the walk-through printed what an administrator reads")
		Expect(out.String()).To(SatisfyAll(
			ContainSubstring("$ kubectl get nncp,nnce"), ContainSubstring(demo.BridgePolicy),
			ContainSubstring("nmoverlay_boot_reconvergence_seconds"), ContainSubstring("no process, network namespace")))
		GinkgoWriter.Printf("start %s, apply %s, reboot to Available %s (handler %s), delete %s\n",
			report.StartCluster.Round(time.Millisecond), report.Applied.Round(time.Millisecond),
			report.Reboot.Round(time.Millisecond), report.Reconverge.Round(time.Millisecond), report.Deleted.Round(time.Millisecond))
	})
})
