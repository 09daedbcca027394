//go:build boot

package boot_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/paths"
	"github.com/nmoverlay/nmoverlay/test/clusterspec"
	"github.com/nmoverlay/nmoverlay/test/kit"
	"github.com/nmoverlay/nmoverlay/test/localcluster"
)

// An install as openshift-install does it, from `nmoverlay render --install-manifests`:
// every node boots the MachineConfig at its first boot, before any handler put nm-overlay
// on it, and the policies given at install time exist before any handler runs. Once the
// NMState is there, the operator deploys the handlers, their init containers install the
// helper, nm-overlay-enable.path moves each node's NetworkManager onto the overlay without
// a reboot, and the policies converge on every node into the tmpfs layer.
var _ = Describe("an install from openshift-install's manifests", Ordered, func() {
	const policy, bridge = "install-bridge", "br-install"
	var (
		c          *localcluster.Cluster
		w          localcluster.Workloads
		dir        string // the install manifests
		ctx        = context.Background()
		bootIDs    = map[string]string{}
		nmPIDs     = map[string]string{}
		readySince = map[string]metav1.Time{}
		readyLog   *localcluster.ReadyLog
	)
	file := func(sub, name string) string { return filepath.Join(dir, sub, name) }
	enactment := func(node string) (condition, message, boot string) {
		e := &v1beta1.NodeNetworkConfigurationEnactment{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: shared.EnactmentKey(node, policy)}, e); err != nil {
			return "<none>", err.Error(), ""
		}
		for _, cond := range e.Status.Conditions {
			if cond.Status == metav1.ConditionTrue {
				return cond.Type, cond.Message, e.Status.BootID
			}
		}
		return "<no condition>", "", e.Status.BootID
	}
	nodeReadySince := func(name string) metav1.Time {
		n := &corev1.Node{}
		Expect(c.Client.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return cond.LastTransitionTime
			}
		}
		Fail(name + " is not Ready")
		return metav1.Time{}
	}

	BeforeAll(func() {
		c = clusterspec.Start(ctx, cluster, "install-a", "install-b")
		var err error
		w, err = localcluster.DeployWorkloads()
		Expect(err).NotTo(HaveOccurred())
		recording, stop := context.WithCancel(ctx)
		DeferCleanup(stop)
		readyLog, err = c.RecordReady(recording)
		Expect(err).NotTo(HaveOccurred())

		// What an administrator gives openshift-install: a bridge on every node's second NIC.
		dir = GinkgoT().TempDir()
		policyFile := filepath.Join(dir, "bridge.yaml")
		Expect(os.WriteFile(policyFile, []byte(fmt.Sprintf(`apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata:
  name: %s
spec:
  desiredState:
    interfaces:
    - name: %s
      type: linux-bridge
      state: up
      ipv4: {enabled: false}
      ipv6: {enabled: false}
      bridge:
        options: {stp: {enabled: false}}
        port: [{name: %s}]
`, policy, bridge, localcluster.SecondNIC)), 0o644)).To(Succeed())
		out, err := exec.Command(buildCommand("nmoverlay"), "render", "--install-manifests", dir,
			"--image", c.Image, "--policy", policyFile).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
	})
	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			for _, n := range c.Nodes {
				GinkgoWriter.Print(c.Diagnose(ctx, n, w))
			}
		}
	})

	It("boots every node with the MachineConfig before the helper exists: on its persistent profiles, marked, waiting for the helper", func() {
		for _, n := range c.Nodes {
			Expect(c.ApplyMachineConfigFile(ctx, n, file("openshift", "99_nmoverlay_0_machineconfig_99-worker-nmoverlay.yaml"))).To(Succeed())
			_, err := os.Stat(n.Root + paths.HelperBinary)
			Expect(os.IsNotExist(err)).To(BeTrue(), "nm-overlay is not on the node yet")
			Expect(run(n.Machine, "cat", paths.DefaultLayout().DegradedMarker())).To(ContainSubstring("helper not installed"))
			Expect(run(n.Machine, "nmcli", "-g", "GENERAL.CONNECTION", "device", "show", localcluster.SecondNIC)).To(Equal(localcluster.SecondNIC + "-persistent"))
			Expect(unitProp(n.Machine, paths.EnablePath, "ActiveState")).To(Equal("active"), "the path unit waits for the helper")
			Expect(unitProp(n.Machine, paths.EnableService, "ActiveState")).To(Equal("inactive"))
			bootIDs[n.Name], err = n.BootID(ctx)
			Expect(err).NotTo(HaveOccurred())
			nmPIDs[n.Name] = unitProp(n.Machine, "NetworkManager.service", "MainPID")
		}
	})

	It("creates the cluster side and the policy before any handler exists: the policy waits, nothing is applied", func() {
		_, err := c.Kubectl(ctx, os.Getenv("KUBECTL"), "apply", "-f", filepath.Join(dir, "manifests"))
		Expect(err).NotTo(HaveOccurred())
		// kubectl wait fails at once, instead of waiting, on a CRD whose status has no
		// conditions yet (right after its creation): asked again until it answers.
		Eventually(func() error {
			_, err := c.Kubectl(ctx, os.Getenv("KUBECTL"), "wait", "--for", "condition=Established", "--timeout", "60s",
				"crd/nodenetworkconfigurationpolicies.nmstate.io", "crd/nmstates.nmstate.io")
			return err
		}, "60s", "500ms").Should(Succeed())
		_, err = c.Kubectl(ctx, os.Getenv("KUBECTL"), "apply", "-f", file("openshift", "99_nmoverlay_2_policy_"+policy+".yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(c.WaitOperator(ctx, w)).To(Succeed())
		Consistently(func() []string {
			pods := &corev1.PodList{}
			Expect(c.Client.List(ctx, pods, client.InNamespace(w.Namespace))).To(Succeed())
			var names []string
			for _, p := range pods.Items {
				if !strings.HasPrefix(p.Name, w.Operator) {
					names = append(names, p.Name)
				}
			}
			return names
		}, "3s").Should(BeEmpty(), "no NMState: only the operator runs")
		for _, n := range c.Nodes {
			cond, _, _ := enactment(n.Name)
			Expect(cond).To(Equal("<none>"), "no handler: no enactment on %s", n.Name)
			Expect(run(n.Machine, "ip", "-o", "link", "show")).NotTo(ContainSubstring(bridge))
		}
	})

	It("creates the NMState: each node's overlay is enabled without a reboot and the policy converges on every node", func() {
		for _, n := range c.Nodes {
			readySince[n.Name] = nodeReadySince(n.Name)
		}
		start := time.Now()
		_, err := c.Kubectl(ctx, os.Getenv("KUBECTL"), "apply", "-f", file("openshift", "99_nmoverlay_1_nmstate.yaml"))
		Expect(err).NotTo(HaveOccurred())
		for _, n := range c.Nodes {
			Eventually(func() string { cond, msg, b := enactment(n.Name); return cond + " " + b + " " + msg }, "180s", "250ms").
				Should(HavePrefix(shared.EnactmentAvailable+" "+bootIDs[n.Name]), "Available on %s in the boot it had", n.Name)
		}
		GinkgoWriter.Printf("NMState created -> %s Available on %d nodes: %s\n", policy, len(c.Nodes), time.Since(start).Round(100*time.Millisecond))

		Eventually(func() bool {
			nm := &nmstatev1.NMState{}
			Expect(c.Client.Get(ctx, client.ObjectKey{Name: nmstatev1.NMStateName}, nm)).To(Succeed())
			return meta.IsStatusConditionTrue(nm.Status.Conditions, nmstatev1.NMStateAvailable)
		}, "30s").Should(BeTrue(), "the NMState says Available")
		Eventually(func() bool {
			p := &nmstatev1.NodeNetworkConfigurationPolicy{}
			Expect(c.Client.Get(ctx, client.ObjectKey{Name: policy}, p)).To(Succeed())
			return meta.IsStatusConditionTrue(p.Status.Conditions, shared.PolicyAvailable)
		}, "30s").Should(BeTrue(), "the policy says Available")
		for _, n := range c.Nodes {
			boot, err := n.BootID(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(boot).To(Equal(bootIDs[n.Name]), "%s did not reboot", n.Name)
			Expect(n.Root+paths.HelperBinary).To(BeAnExistingFile(), "the init container installed nm-overlay")
			Expect(unitProp(n.Machine, paths.EnableService, "ActiveState")).To(Equal("active"))
			Expect(unitProp(n.Machine, "NetworkManager.service", "MainPID")).NotTo(Equal(nmPIDs[n.Name]), "nm-overlay enable restarted NetworkManager")
			Expect(run(n.Machine, paths.HelperBinary, "verify")).To(ContainSubstring("overlay verified"))
			Expect(run(n.Machine, "cat", "/sys/class/net/"+localcluster.SecondNIC+"/master/uevent")).To(ContainSubstring("INTERFACE=" + bridge))
			Expect(run(n.Machine, "ls", paths.DefaultLayout().Upper())).To(ContainSubstring(".nmconnection"))
			Expect(run(n.Machine, "ls", paths.NMDefaultKeyfile)).To(Equal(localcluster.Uplink+".nmconnection\n"+localcluster.SecondNIC+".nmconnection"),
				"nothing reached the persistent dir")
			Expect(nodeReadySince(n.Name)).To(Equal(readySince[n.Name]), "%s stayed Ready through the NetworkManager restart; Ready as seen:\n%s", n.Name, readyLog)
		}
		GinkgoWriter.Printf("Ready as seen:\n%s\n", readyLog)
		usage := componentUsage()
		Expect(usage["/handler"].processes).To(Equal(len(c.Nodes)), "one handler per node")
		Expect(usage["/controller"].processes).To(Equal(2), "two controller replicas")
		Expect(usage["/operator"].processes).To(Equal(1))
		time.Sleep(10 * time.Second)
		rest := componentUsage()
		for _, name := range []string{"/operator", "/controller", "/handler"} {
			u, r := usage[name], rest[name]
			GinkgoWriter.Printf("%s x%d: CPU %.2f s from start to converged, %.2f s in the next 10 s at rest; RSS %d MiB at rest (all its processes)\n",
				name, u.processes, u.cpu, r.cpu-u.cpu, r.rssKiB/1024)
		}

		pods := &corev1.PodList{}
		Expect(c.Client.List(ctx, pods, client.InNamespace(w.Namespace))).To(Succeed())
		for _, p := range pods.Items {
			for _, cs := range p.Status.ContainerStatuses {
				Expect(cs.RestartCount).To(BeZero(), "%s/%s waited for the NetworkManager restart instead of exiting", p.Name, cs.Name)
			}
		}
	})

	// Backup and restore (seed 002): an etcd snapshot restored to before a policy was
	// created and before another was deleted. The nodes follow the restored API: what the
	// first applied is reverted, the second is applied again, and every enactment is true.
	It("restores an etcd snapshot: each node drops a policy created after it and applies again one deleted after it", func() {
		const later, laterBridge = "after-backup", "br-later"
		etcdutl := os.Getenv("NMOVERLAY_ETCDUTL")
		Expect(etcdutl).To(BeAnExistingFile(), "NMOVERLAY_ETCDUTL is unset: run make test-boot (hack/etcdutl.sh builds it)")
		snapshot := filepath.Join(dir, "etcd.snapshot")
		Expect(c.SnapshotEtcd(ctx, snapshot)).To(Succeed())

		p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: later}}
		p.Spec.DesiredState = shared.State{Raw: []byte(`{"interfaces":[{"name":"` + laterBridge + `","type":"linux-bridge","state":"up",
			"ipv4":{"enabled":false},"ipv6":{"enabled":false},"bridge":{"options":{"stp":{"enabled":false}},"port":[]}}]}`)}
		Expect(c.Client.Create(ctx, p)).To(Succeed())
		Expect(c.Client.Delete(ctx, &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: policy}})).To(Succeed())
		links := func(n *localcluster.Node) string {
			out, _ := n.Run(ctx, "ip", "-o", "link", "show")
			return out
		}
		for _, n := range c.Nodes {
			Eventually(func() string { return links(n) }, "60s", "250ms").Should(SatisfyAll(ContainSubstring(laterBridge), Not(ContainSubstring(bridge+":"))),
				"%s applied %s and reverted %s", n.Name, later, policy)
		}

		start := time.Now()
		Expect(c.RestoreEtcd(ctx, etcdutl, snapshot)).To(Succeed())
		GinkgoWriter.Printf("etcd restored and the API server back: %s\n", time.Since(start).Round(100*time.Millisecond))
		Expect(c.Client.Get(ctx, client.ObjectKey{Name: later}, &nmstatev1.NodeNetworkConfigurationPolicy{})).To(Satisfy(apierrors.IsNotFound))
		for _, n := range c.Nodes {
			// The bridge back with its port (the port is attached after the bridge is up).
			Eventually(func() string {
				port, _ := n.Run(ctx, "ip", "-o", "link", "show", localcluster.SecondNIC)
				return links(n) + port
			}, "90s", "250ms").Should(SatisfyAll(Not(ContainSubstring(laterBridge)), ContainSubstring(bridge+":"), ContainSubstring("master "+bridge)),
				"%s follows the restored API", n.Name)
		}
		for _, n := range c.Nodes {
			// Applied again as a policy new to the node: a rollout slot, the apply, then Available.
			Eventually(func() string { cond, msg, b := enactment(n.Name); return cond + " " + b + " " + msg }, "60s", "250ms").
				Should(HavePrefix(shared.EnactmentAvailable+" "+bootIDs[n.Name]), "%s", n.Name)
		}
		GinkgoWriter.Printf("restore started -> every node on the restored policies, its enactment Available: %s\n", time.Since(start).Round(100*time.Millisecond))
		for _, n := range c.Nodes {
			err := c.Client.Get(ctx, client.ObjectKey{Name: shared.EnactmentKey(n.Name, later)}, &v1beta1.NodeNetworkConfigurationEnactment{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no enactment of a policy the restored API does not have: %v", err)
			Expect(run(n.Machine, "ls", paths.NMDefaultKeyfile)).To(Equal(localcluster.Uplink+".nmconnection\n"+localcluster.SecondNIC+".nmconnection"),
				"nothing reached the persistent dir")
		}
	})
})

// usage is the CPU time (user and system, seconds) and resident memory of a component's
// processes, read from the host's /proc (the nodes' pods are its processes too).
type usage struct {
	processes int
	cpu       float64
	rssKiB    int
}

// componentUsage sums usage by the command a process runs (the containers' entrypoints).
func componentUsage() map[string]usage {
	out := map[string]usage{}
	pids, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range pids {
		cmdline, err := os.ReadFile(dir + "/cmdline")
		if err != nil {
			continue
		}
		cmd, _, _ := strings.Cut(string(cmdline), "\x00")
		if cmd != "/handler" && cmd != "/controller" && cmd != "/operator" {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil {
			continue
		}
		if _, err := os.Stat(dir + "/stat"); err != nil {
			continue // gone meanwhile
		}
		u := out[cmd]
		u.processes++
		u.cpu += kit.ProcCPU(pid).Seconds()
		u.rssKiB += int(kit.ProcStatusKiB(pid, "VmRSS"))
		out[cmd] = u
	}
	return out
}
