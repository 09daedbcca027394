//go:build boot

package boot_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/deploy"
	"github.com/nmoverlay/nmoverlay/internal/machineconfigs"
	"github.com/nmoverlay/nmoverlay/internal/paths"
	"github.com/nmoverlay/nmoverlay/test/clusterspec"
	"github.com/nmoverlay/nmoverlay/test/kit"
	"github.com/nmoverlay/nmoverlay/test/localcluster"
)

// A cluster that ran kubernetes-nmstate, moved to nmoverlay with nmoverlay migrate --apply,
// then rolled back with --rollback, on the local cluster (kubelets, kube-controller-manager,
// nspawn nodes with NetworkManager). kubernetes-nmstate's API objects are written from its
// public API; its operator and handler, whose images are not here, are pause containers
// under its names and labels (installed from manifests, in namespace nmstate); its
// policies' profiles are made on each node through NetworkManager as nmstate makes them
// (persistent, id and interface the bridge's name). The test does what MCO would: when
// the MachineConfig appears it writes it onto one node at a time and reboots it, and when
// it goes it removes its files and reboots.
var _ = Describe("a cluster moved from kubernetes-nmstate and back", Ordered, func() {
	const (
		ns       = "nmstate"
		kept     = "mig-kept" // a bridge policy kept through the move
		dropped  = "mig-gone" // one deleted after the move: the node reverts it
		keptBr   = "br-kept"
		droppedB = "br-gone"
	)
	var (
		c         *localcluster.Cluster
		ctx       = context.Background()
		bin       string
		rendered  string
		mcFile    string
		readyLog  *localcluster.ReadyLog
		before    = map[string]map[string]string{} // node -> /etc file -> sha256, with kubernetes-nmstate
		lower     = map[string]map[string][]byte{} // node -> keyfile -> content, with kubernetes-nmstate
		moveBoots = map[string]string{}            // node -> its boot on the overlay
		mcPaths   = machineconfigs.Paths(machineconfigs.Options{Pools: []string{"worker"}})
	)
	policyState := func(bridge string) string {
		return `{"interfaces":[{"name":"` + bridge + `","type":"linux-bridge","state":"up","ipv4":{"enabled":false},"ipv6":{"enabled":false},` +
			`"bridge":{"options":{"stp":{"enabled":false}},"port":[]}}]}`
	}
	enactment := func(node, policy string) (condition, boot string) {
		e := &v1beta1.NodeNetworkConfigurationEnactment{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: shared.EnactmentKey(node, policy)}, e); err != nil {
			return "<none>", ""
		}
		for _, cond := range e.Status.Conditions {
			if cond.Status == metav1.ConditionTrue {
				return cond.Type, e.Status.BootID
			}
		}
		return "<no condition>", e.Status.BootID
	}
	links := func(n *localcluster.Node) string {
		out, _ := n.Run(ctx, "ip", "-o", "link", "show")
		return out
	}
	keyfiles := func(n *localcluster.Node) map[string][]byte {
		out := map[string][]byte{}
		entries, err := os.ReadDir(n.Root + paths.NMDefaultKeyfile)
		Expect(err).NotTo(HaveOccurred())
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(n.Root+paths.NMDefaultKeyfile, e.Name()))
			Expect(err).NotTo(HaveOccurred())
			out[e.Name()] = b
		}
		return out
	}
	// etcFiles digests every regular file of the node's /etc but the MachineConfig's own
	// and the keyfile dir (compared on its own).
	etcFiles := func(n *localcluster.Node) map[string]string {
		out := map[string]string{}
		Expect(filepath.WalkDir(n.Root+"/etc", func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			inside := strings.TrimPrefix(p, n.Root)
			if slices.Contains(mcPaths, inside) || strings.HasPrefix(inside, paths.NMDefaultKeyfile+"/") {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			out[inside] = hex.EncodeToString(sum[:])
			return nil
		})).To(Succeed())
		return out
	}
	migrate := func(timeout string, args ...string) *exec.Cmd {
		cmd := exec.Command(bin, append([]string{"migrate", "--kubeconfig", c.Kubeconfig, "--poll", "1s", "--timeout", timeout}, args...)...)
		cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
		Expect(cmd.Start()).To(Succeed())
		return cmd
	}
	machineConfigExists := func() bool {
		mc := &unstructured.Unstructured{}
		mc.SetAPIVersion("machineconfiguration.openshift.io/v1")
		mc.SetKind("MachineConfig")
		err := c.Client.Get(ctx, client.ObjectKey{Name: machineconfigs.Name("worker")}, mc)
		Expect(client.IgnoreNotFound(err)).To(Succeed())
		return err == nil
	}
	standIn := func(name string, labels map[string]string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: c.SandboxImage()}},
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}}
	}
	handlerDaemonSet := func() *appsv1.DaemonSet {
		labels := map[string]string{"name": "nmstate-handler", "app": "kubernetes-nmstate", "component": "kubernetes-nmstate-handler"}
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "nmstate-handler", Namespace: ns,
			Labels: map[string]string{"app": "kubernetes-nmstate", "component": "kubernetes-nmstate-handler"}},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"name": "nmstate-handler"}},
				Template: standIn("nmstate-handler", labels)}}
	}

	BeforeAll(func() {
		c = clusterspec.Start(ctx, cluster, "mig-a", "mig-b")
		var err error
		recording, stop := context.WithCancel(ctx)
		DeferCleanup(stop)
		readyLog, err = c.RecordReady(recording)
		Expect(err).NotTo(HaveOccurred())
		bin = buildCommand("nmoverlay")
		dir := GinkgoT().TempDir()
		out, err := exec.Command(bin, "render", "--pool", "worker", "--image", c.Image).Output()
		Expect(err).NotTo(HaveOccurred())
		rendered = filepath.Join(dir, "nmoverlay.yaml")
		Expect(os.WriteFile(rendered, out, 0o644)).To(Succeed())
		objs, err := deploy.Decode(out)
		Expect(err).NotTo(HaveOccurred())
		for _, o := range objs {
			if o.GetKind() == "MachineConfig" {
				b, err := deploy.Marshal([]*unstructured.Unstructured{o})
				Expect(err).NotTo(HaveOccurred())
				mcFile = filepath.Join(dir, "machineconfig.yaml")
				Expect(os.WriteFile(mcFile, b, 0o644)).To(Succeed())
			}
		}
		Expect(mcFile).NotTo(BeEmpty())

		// kubernetes-nmstate's API, and MCO's kind.
		crd, err := runtime.DefaultUnstructuredConverter.ToUnstructured(kit.OpenCRD("machineconfiguration.openshift.io", "v1", "MachineConfig", "machineconfigs", false))
		Expect(err).NotTo(HaveOccurred())
		u := &unstructured.Unstructured{Object: crd}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		Expect(c.Client.Create(ctx, u)).To(Succeed())
		_, err = c.Kubectl(ctx, os.Getenv("KUBECTL"), "apply", "-f", filepath.Join(mustRoot(), "deploy", "crds"))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error {
			_, err := c.Kubectl(ctx, os.Getenv("KUBECTL"), "wait", "--for", "condition=Established", "--timeout", "60s",
				"crd/nodenetworkconfigurationpolicies.nmstate.io", "crd/nmstates.nmstate.io", "crd/nodenetworkconfigurationenactments.nmstate.io",
				"crd/machineconfigs.machineconfiguration.openshift.io")
			return err
		}, "60s", "500ms").Should(Succeed())
		// Its operator and handler, from manifests.
		Expect(c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		one := int32(1)
		operatorLabels := map[string]string{"name": "kubernetes-nmstate-operator"}
		Expect(c.Client.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "nmstate-operator", Namespace: ns,
			Labels: map[string]string{"app": "kubernetes-nmstate-operator"}},
			Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: operatorLabels},
				Template: standIn("nmstate-operator", operatorLabels)}})).To(Succeed())
		Expect(c.Client.Create(ctx, handlerDaemonSet())).To(Succeed())
		Expect(c.Client.Create(ctx, &nmstatev1.NMState{ObjectMeta: metav1.ObjectMeta{Name: nmstatev1.NMStateName}})).To(Succeed())
		Eventually(func() int32 {
			ds := &appsv1.DaemonSet{}
			Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nmstate-handler"}, ds)).To(Succeed())
			return ds.Status.NumberReady
		}, "120s", "1s").Should(Equal(int32(len(c.Nodes))), "its handler runs on every node")

		// Its policies, as its handler left them: the profiles persistent on each node,
		// the enactments Available.
		for _, p := range []struct{ name, bridge string }{{kept, keptBr}, {dropped, droppedB}} {
			policy := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: p.name}}
			policy.Spec.DesiredState = shared.State{Raw: []byte(policyState(p.bridge))}
			Expect(c.Client.Create(ctx, policy)).To(Succeed())
			for _, n := range c.Nodes {
				run(n.Machine, "nmcli", "connection", "add", "type", "bridge", "con-name", p.bridge, "ifname", p.bridge,
					"connection.autoconnect", "yes", "connection.autoconnect-slaves", "yes", "bridge.stp", "no",
					"ipv4.method", "disabled", "ipv6.method", "disabled")
				run(n.Machine, "nmcli", "connection", "up", p.bridge)
				e := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: shared.EnactmentKey(n.Name, p.name),
					Labels: map[string]string{shared.NodeLabel: n.Name, shared.PolicyLabel: p.name}}}
				Expect(c.Client.Create(ctx, e)).To(Succeed())
				e.Status.DesiredState = shared.State{Raw: []byte(policyState(p.bridge))}
				e.Status.Conditions = []metav1.Condition{{Type: shared.EnactmentAvailable, Status: metav1.ConditionTrue, Reason: "SuccessfullyConfigured",
					Message: "successfully reconciled", LastTransitionTime: metav1.Now()}}
				Expect(c.Client.Update(ctx, e)).To(Succeed())
			}
		}
		for _, n := range c.Nodes {
			lower[n.Name] = keyfiles(n)
			Expect(lower[n.Name]).To(HaveKey(keptBr + ".nmconnection"))
			Expect(lower[n.Name]).To(HaveKey(droppedB + ".nmconnection"))
			before[n.Name] = etcFiles(n)
		}
	})
	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			w, _ := localcluster.DeployWorkloads()
			for _, n := range c.Nodes {
				GinkgoWriter.Print(c.Diagnose(ctx, n, w))
			}
			GinkgoWriter.Printf("Ready as seen:\n%s\n", readyLog)
		}
	})

	It("says the move can start, and changes nothing", func() {
		out, err := exec.Command(bin, "migrate", "--kubeconfig", c.Kubeconfig).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		Expect(string(out)).To(ContainSubstring("The move can start"))
	})

	It("moves: kubernetes-nmstate stops, nmoverlay takes over, each node reboots onto the overlay without the policies' persistent profiles and gets them from nmoverlay", func() {
		start := time.Now()
		cmd := migrate("15m", "--apply", rendered)
		Eventually(machineConfigExists, "5m", "1s").Should(BeTrue(), "the move applies the MachineConfig once every node has its plan")
		GinkgoWriter.Printf("migrate --apply -> MachineConfig applied: %s\n", time.Since(start).Round(100*time.Millisecond))
		for _, n := range c.Nodes { // MCO: one node at a time
			nns := &v1beta1.NodeNetworkState{}
			Expect(c.Client.Get(ctx, client.ObjectKey{Name: n.Name}, nns)).To(Succeed())
			Expect(nns.Status.Overlay).NotTo(BeNil())
			Expect(nns.Status.Overlay.Migration).NotTo(BeNil())
			Expect(nns.Status.Overlay.Migration.Move).To(ConsistOf(HaveField("File", keptBr+".nmconnection"), HaveField("File", droppedB+".nmconnection")),
				"the plan moves the policies' profiles only")

			nodeStart := time.Now()
			Expect(c.ApplyMachineConfigFile(ctx, n, mcFile)).To(Succeed())
			boot, err := n.BootID(ctx)
			Expect(err).NotTo(HaveOccurred())
			moveBoots[n.Name] = boot
			for _, p := range []string{kept, dropped} {
				Eventually(func() string { cond, b := enactment(n.Name, p); return cond + " " + b }, "180s", "250ms").
					Should(Equal(shared.EnactmentAvailable+" "+boot), "%s Available on %s under nmoverlay, in its boot on the overlay", p, n.Name)
			}
			GinkgoWriter.Printf("%s: MachineConfig written and reboot -> its policies Available under nmoverlay: %s\n", n.Name, time.Since(nodeStart).Round(100*time.Millisecond))
		}
		Expect(cmd.Wait()).To(Succeed(), "the move ends")
		GinkgoWriter.Printf("migrate --apply -> done, %d nodes: %s\n", len(c.Nodes), time.Since(start).Round(100*time.Millisecond))

		for _, n := range c.Nodes {
			now := keyfiles(n)
			want := map[string][]byte{}
			for name, b := range lower[n.Name] {
				if name != keptBr+".nmconnection" && name != droppedB+".nmconnection" {
					want[name] = b
				}
			}
			Expect(now).To(Equal(want), "%s: the policies' profiles left the persistent dir, the others are as they were", n.Name)
			backup := filepath.Join(paths.MigratedDir, moveBoots[n.Name], "profiles")
			for _, f := range []string{keptBr + ".nmconnection", droppedB + ".nmconnection"} {
				b, err := os.ReadFile(n.Root + filepath.Join(backup, f))
				Expect(err).NotTo(HaveOccurred())
				Expect(bytes.Equal(b, lower[n.Name][f])).To(BeTrue(), "%s: %s kept byte for byte in %s", n.Name, f, backup)
			}
			Expect(etcFiles(n)).To(Equal(before[n.Name]), "%s: nothing else in /etc changed but the MachineConfig's files", n.Name)
			Expect(links(n)).To(SatisfyAll(ContainSubstring(keptBr+":"), ContainSubstring(droppedB+":")))
			Expect(run(n.Machine, "ls", paths.DefaultLayout().Upper())).To(SatisfyAll(ContainSubstring(keptBr), ContainSubstring(droppedB)),
				"the policies' profiles are in the tmpfs layer")
		}
		Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nmstate-handler"}, &appsv1.DaemonSet{})).To(Satisfy(apierrors.IsNotFound))
		nm := &nmstatev1.NMState{}
		Expect(c.Client.Get(ctx, client.ObjectKey{Name: nmstatev1.NMStateName}, nm)).To(Succeed())
		Expect(nm.Spec.MigrateFrom).To(BeEmpty())
		GinkgoWriter.Printf("Ready as seen:\n%s\n", readyLog)
		Expect(readyLog.String()).NotTo(Or(ContainSubstring(": False "), ContainSubstring(": Unknown ")),
			"every node stayed Ready through the move, its reboot included")
	})

	It("comes back through the policies after a reboot, and reverts a policy deleted", func() {
		n := c.Nodes[0]
		Expect(c.Reboot(ctx, n)).To(Succeed())
		boot, err := n.BootID(ctx)
		Expect(err).NotTo(HaveOccurred())
		for _, p := range []string{kept, dropped} {
			Eventually(func() string { cond, b := enactment(n.Name, p); return cond + " " + b }, "120s", "250ms").
				Should(Equal(shared.EnactmentAvailable+" "+boot), "%s back on %s after the reboot", p, n.Name)
		}
		Expect(links(n)).To(SatisfyAll(ContainSubstring(keptBr+":"), ContainSubstring(droppedB+":")))

		Expect(c.Client.Delete(ctx, &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: dropped}})).To(Succeed())
		for _, n := range c.Nodes {
			Eventually(func() string { return links(n) }, "60s", "250ms").Should(SatisfyAll(Not(ContainSubstring(droppedB+":")), ContainSubstring(keptBr+":")),
				"%s reverted %s: its persistent profile is no longer there to bring it back", n.Name, dropped)
		}
	})

	It("rolls back: each node reboots off the overlay, gets its original profiles back byte for byte, and kubernetes-nmstate runs again", func() {
		start := time.Now()
		cmd := migrate("15m", "--rollback", rendered)
		Eventually(machineConfigExists, "60s", "1s").Should(BeFalse(), "the rollback deletes the MachineConfig")
		mc, err := os.ReadFile(mcFile)
		Expect(err).NotTo(HaveOccurred())
		var parsed machineconfigs.MachineConfig
		Expect(yaml.Unmarshal(mc, &parsed)).To(Succeed())
		for _, n := range c.Nodes { // MCO: the files removed, one reboot at a time
			Expect(machineconfigs.RemoveIgnition(n.Root, parsed.Spec.Config)).To(Succeed())
			Expect(c.Reboot(ctx, n)).To(Succeed())
		}
		// kubernetes-nmstate's operator, scaled back, deploys its handler (the stand-in's part).
		Eventually(func() int32 {
			d := &appsv1.Deployment{}
			Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nmstate-operator"}, d)).To(Succeed())
			return *d.Spec.Replicas
		}, "5m", "1s").Should(Equal(int32(1)))
		Expect(c.Client.Create(ctx, handlerDaemonSet())).To(Succeed())
		Expect(cmd.Wait()).To(Succeed(), "the rollback ends")
		GinkgoWriter.Printf("migrate --rollback -> done, %d nodes: %s\n", len(c.Nodes), time.Since(start).Round(100*time.Millisecond))

		for _, n := range c.Nodes {
			Expect(keyfiles(n)).To(Equal(lower[n.Name]), "%s: the persistent dir is back byte for byte", n.Name)
			Eventually(func() string { return links(n) }, "60s", "250ms").Should(SatisfyAll(ContainSubstring(keptBr+":"), ContainSubstring(droppedB+":")),
				"%s: NetworkManager reloaded the restored profiles and brought them up", n.Name)
		}
		for _, name := range []string{"nmoverlay-operator"} {
			Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: "nmoverlay", Name: name}, &appsv1.Deployment{})).To(Satisfy(apierrors.IsNotFound))
		}
		GinkgoWriter.Printf("Ready as seen:\n%s\n", readyLog)
		Expect(readyLog.String()).NotTo(Or(ContainSubstring(": False "), ContainSubstring(": Unknown ")),
			"every node stayed Ready through the rollback, its reboot included")
	})
})

func mustRoot() string {
	root, err := kit.Root()
	Expect(err).NotTo(HaveOccurred())
	return root
}
