//go:build boot

package boot_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/nmoverlay/nmoverlay/internal/overlay"
	"github.com/nmoverlay/nmoverlay/internal/rebootgate"
	"github.com/nmoverlay/nmoverlay/test/demo"
	"github.com/nmoverlay/nmoverlay/test/localcluster"
)

// The demo's scenario (make demo), end to end, on the same code: the control plane, two
// nspawn nodes with kubelets, nmoverlay installed with kubectl apply -k and running as
// pods; every step checks its own outcome, and the report is asserted here on top.
var _ = Describe("the demo scenario", func() {
	It("installs as pods, rolls the MachineConfig out, applies, re-converges after a reboot, serves metrics to a token only, rolls back a bad gateway, deletes, and leaves nothing behind", func() {
		kubectl := os.Getenv("KUBECTL")
		Expect(kubectl).NotTo(BeEmpty(), "KUBECTL is unset: run make test-boot (hack/kube-assets.sh builds it)")
		nodes := []string{"demo-a", "demo-b"}
		o := cluster
		o.Nodes, o.Log = nodes, GinkgoWriter
		var out strings.Builder
		report, err := demo.Run(context.Background(), demo.Options{Cluster: o, Kubectl: kubectl, Deploy: "../../deploy", Out: &out,
			Topology: os.Getenv("NMOVERLAY_DEMO_TOPOLOGY")}) // the README's picture
		GinkgoWriter.Print(out.String())
		Expect(err).NotTo(HaveOccurred())

		By("every step ran, the clean-up last")
		Expect(report.Steps).To(HaveLen(14))
		Expect(report.Steps[len(report.Steps)-1].Title).To(HavePrefix("clean up"))

		By("the operator, then for the NMState the handler on every node and the controller's two replicas, one of them leading")
		onNode := map[string]int{}
		for _, node := range report.Pods {
			onNode[node]++
		}
		Expect(report.Pods).To(HaveLen(5))
		Expect(report.Operator).To(BeNumerically("<", report.Installed))
		Expect(report.Deployed).To(BeNumerically("<", report.Installed))
		Expect(onNode).To(HaveKey("demo-a"))
		Expect(onNode).To(HaveKey("demo-b"))
		Expect(report.Pods).To(HaveKey(report.Leader))

		By("each node got its own address from its own policy")
		Expect(report.Addresses).To(Equal(map[string]string{"demo-a": demo.BridgeAddress(0), "demo-b": demo.BridgeAddress(1)}))

		By("one node's handler, with its pod's own token, was denied another node's enactment, by name")
		Expect(report.HandlerUser).To(SatisfyAll(ContainSubstring("system:serviceaccount:nmoverlay:nmoverlay-handler"), ContainSubstring("demo-a")))
		Expect(report.Denial).To(SatisfyAll(ContainSubstring("demo-a"), ContainSubstring("demo-b"), ContainSubstring("forbidden")))

		By("the policy's profile was only in the tmpfs layer")
		Expect(report.UpperLayer).To(ContainElement(SatisfyAll(
			HaveField("Interface", demo.Bridge), HaveField("Change", overlay.Added))))
		Expect(report.LowerLayer).To(ConsistOf(localcluster.Uplink+".nmconnection", localcluster.SecondNIC+".nmconnection"))

		By("the node's picture shows the bridge and its port, their profiles in tmpfs (dashed), their policy")
		Expect(report.Topology).To(ContainSubstring(`<g class="iface tmpfs" data-names="` + demo.Bridge + `">`))
		Expect(report.Topology).To(ContainSubstring(`>policy ` + demo.BridgePolicy("demo-a") + `</text>`))
		Expect(report.Topology).To(ContainSubstring(`>` + demo.BridgeAddress(0) + `/24</text>`))
		// The NIC is the bridge's port: its port profile is the policy's, in tmpfs too.
		Expect(report.Topology).To(ContainSubstring(`<g class="iface tmpfs" data-names="` + localcluster.SecondNIC + `">`))
		Expect(strings.Count(report.Topology, `>policy `+demo.BridgePolicy("demo-a")+`</text>`)).To(Equal(2))

		By("the time to Available is split into the wait for a grant, the apply and its probes")
		Expect(report.Split).To(HaveLen(len(nodes)))
		for _, n := range nodes {
			s := report.Split[n]
			Expect(s.Granted).To(BeNumerically(">", 0), n)
			Expect(s.Available).To(BeNumerically(">", s.Granted), n)
			Expect(s.Apply).To(BeNumerically(">", 0), "%s: the handler's applied line", n)
			Expect(s.ProbesBefore+s.Change+s.ProbesAfter+s.Commit).To(BeNumerically("<=", s.Apply+5*time.Millisecond), "%s: each phase rounded to 1 ms", n)
			GinkgoWriter.Printf("%s: %s\n", n, s)
		}

		By("the reboot was a new boot, and the restarted handler re-applied the policy in it")
		Expect(report.BootIDs[0]).NotTo(Equal(report.BootIDs[1]))
		Expect(report.Reconverge).To(BeNumerically(">", 0))
		Expect(report.Reconverge).To(BeNumerically("<", report.Reboot), "the handler's own figure is part of the reboot")

		By("the reboot gate kept the pod created in the new boot off the node until the policy was back; then it ran there")
		g := report.Gate
		Expect(g.BootPosted).To(BeNumerically(">", 0))
		Expect(g.Tainted).To(BeNumerically(">=", g.BootPosted))
		Expect(g.PodCreated).To(BeNumerically(">=", g.Tainted))
		Expect(g.Unschedulable).To(ContainSubstring("untolerated taint"))
		Expect(g.OtherTaints).To(BeEmpty(), "the gate's taint was the only one while the pod waited")
		Expect(g.PodBound).To(BeNumerically(">=", g.Available), "bound only once the policy was Available in the new boot")
		Expect(g.PodRunning).To(BeNumerically(">=", g.PodBound))
		AddReportEntry("reboot gate, end to end with real kubelets",
			fmt.Sprintf("new boot ID to %s taint %s (the gate's window); to the policy Available %s (the window without it)",
				rebootgate.TaintKey, g.Race().Round(time.Millisecond), g.Ungated().Round(time.Millisecond)), ReportEntryVisibilityAlways)

		By("the metrics were refused without a token; with one, kubernetes-nmstate's gauge counts the node's bridges")
		Expect(report.Unauthenticated).To(Equal(http.StatusUnauthorized))
		Expect(report.PeerBridges).To(BeNumerically(">=", 1))

		By("the bad gateway was rolled back by the gateway probe")
		Expect(report.BadGateway).To(ContainSubstring("default-gateway"))
		Expect(report.DefaultRouteAfter).To(ContainSubstring("via 192.0.2.254"))

		By("the NMState's deletion removed the handlers and the controller; created again, they found the policies in effect")
		Expect(report.Removed).To(BeNumerically(">", 0))
		Expect(report.Redeployed).To(BeNumerically(">", 0))

		By("after the delete every node runs its persistent profile and the tmpfs layer holds no profile of the policy")
		Expect(report.NodesAfterDelete).To(HaveLen(len(nodes)))
		for _, n := range nodes {
			Expect(report.NodesAfterDelete).To(HaveKeyWithValue(n, localcluster.SecondNIC+"-persistent"))
		}
		Expect(report.UpperAfterDelete).NotTo(ContainElement(HaveField("Interface", demo.Bridge)))

		By("the walk-through printed what an administrator reads")
		Expect(out.String()).To(SatisfyAll(
			ContainSubstring("$ kubectl apply -k"), ContainSubstring("$ kubectl -n nmoverlay get pods -o wide"),
			ContainSubstring("$ kubectl get nncp,nnce"), ContainSubstring(demo.BridgePolicy("demo-a")),
			ContainSubstring("nmoverlay_boot_reconvergence_seconds"), ContainSubstring("no process, network namespace")))
		GinkgoWriter.Printf("start %s, install %s, MachineConfig %s, apply %s, reboot to Available %s (handler %s), delete %s\n",
			report.StartCluster.Round(time.Millisecond), report.Installed.Round(time.Millisecond), report.MachineConfig.Round(time.Millisecond),
			report.Applied.Round(time.Millisecond), report.Reboot.Round(time.Millisecond), report.Reconverge.Round(time.Millisecond),
			report.Deleted.Round(time.Millisecond))
	})
})
