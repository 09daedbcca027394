//go:build upgrade

package upgrade_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/paths"
	"github.com/nmoverlay/nmoverlay/test/clusterspec"
	"github.com/nmoverlay/nmoverlay/test/kit"
	"github.com/nmoverlay/nmoverlay/test/localcluster"
)

const (
	bridge          = "br-up"
	controllerLease = "nmoverlay-controller.nmstate.io" // cmd/controller's
	nmstateManifest = "apiVersion: nmstate.io/v1\nkind: NMState\nmetadata:\n  name: nmstate\n"
)

// bridgePolicy moves node i's second NIC into a bridge with an address of its own and a
// route, on that node only.
func bridgePolicy(node string, i int) *nmstatev1.NodeNetworkConfigurationPolicy {
	p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "upgrade-bridge-" + node}}
	p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	p.Spec.DesiredState = shared.State{Raw: []byte(fmt.Sprintf(`{"interfaces":[{"name":%q,"type":"linux-bridge","state":"up",
  "ipv4":{"enabled":true,"dhcp":false,"address":[{"ip":"198.51.100.%d","prefix-length":24}]},"ipv6":{"enabled":false},
  "bridge":{"options":{"stp":{"enabled":false}},"port":[{"name":%q}]}}],
 "routes":{"config":[{"destination":"203.0.113.0/24","next-hop-address":"198.51.100.254","next-hop-interface":%q}]}}`,
		bridge, i+1, localcluster.SecondNIC, bridge))}
	return p
}

// portlessBridge is a policy of a bridge with no port and no address, on the nodes selected.
func portlessBridge(name, dev string, selector map[string]string) *nmstatev1.NodeNetworkConfigurationPolicy {
	p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.Spec.NodeSelector = selector
	p.Spec.DesiredState = shared.State{Raw: []byte(fmt.Sprintf(`{"interfaces":[{"name":%q,"type":"linux-bridge","state":"up",
  "ipv4":{"enabled":false},"ipv6":{"enabled":false},"bridge":{"options":{"stp":{"enabled":false}},"port":[]}}]}`, dev))}
	return p
}

// nmActivity matches NetworkManager's log lines for an activation, a deactivation and a
// checkpoint (created, destroyed or rolled back), at its default level.
var nmActivity = regexp.MustCompile(`Activation: starting connection|-> deactivating|checkpoint`)

var _ = Describe("an upgrade from version N to this tree, a downgrade back, and both versions at once", Ordered, func() {
	var (
		c    *localcluster.Cluster
		w    localcluster.Workloads
		ctx  = context.Background()
		next struct{ image, version string } // N+1: this tree's image, and its version (the tag hack/image.sh gives it)
		// fromVersion is the handler version N's NodeNetworkStates report.
		fromVersion string
		mcFrom      string // N's MachineConfig, as N's CLI renders it
		dir         string // the files of the whole run
		timings     []string
	)
	took := func(what string, start time.Time) {
		timings = append(timings, fmt.Sprintf("%s: %s", what, time.Since(start).Round(100*time.Millisecond)))
	}
	BeforeAll(func() {
		start := time.Now()
		dir = GinkgoT().TempDir()
		DeferCleanup(func() { fmt.Printf("upgrade tier, each phase: %s\n", strings.Join(timings, "; ")) })
		c = clusterspec.Start(ctx, cluster, "upgrade-a", "upgrade-b")
		var err error
		for _, n := range c.Nodes {
			Expect(n.ImportImage(ctx, from.archive)).To(Succeed())
		}
		w, err = localcluster.DeployWorkloads()
		Expect(err).NotTo(HaveOccurred())
		next.image = c.Image
		_, next.version, _ = strings.Cut(c.Image[strings.LastIndex(c.Image, "/"):], ":")
		Expect(next.version).NotTo(BeEmpty(), "hack/image.sh tags the image with its version: %s", c.Image)
		took("cluster", start)
	})
	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			for _, n := range c.Nodes {
				GinkgoWriter.Print(c.Diagnose(ctx, n, w))
			}
		}
	})

	kubectlOK := func(args ...string) string {
		out, err := c.Kubectl(ctx, kubectl, args...)
		Expect(err).NotTo(HaveOccurred())
		return out
	}
	// install applies a version's manifests as an administrator does: kubectl apply -k of
	// its deploy/ with its image.
	install := func(name, deployDir, image string) {
		kustomization, _, err := c.KustomizationOf(name, deployDir, image, w)
		Expect(err).NotTo(HaveOccurred())
		kubectlOK("apply", "-k", kustomization)
	}
	enactment := func(node, policy string) *v1beta1.NodeNetworkConfigurationEnactment {
		e := &v1beta1.NodeNetworkConfigurationEnactment{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: shared.EnactmentKey(node, policy)}, e); err != nil {
			return nil
		}
		return e
	}
	available := func(node, policy string) string {
		e := enactment(node, policy)
		if e == nil {
			return "<none>"
		}
		for _, cond := range e.Status.Conditions {
			if cond.Status == metav1.ConditionTrue {
				return cond.Type + " boot=" + e.Status.BootID + " " + cond.Message
			}
		}
		return "<no condition>"
	}
	waitAvailable := func(node, policy, boot string) {
		Eventually(func() string { return available(node, policy) }, "120s", "250ms").
			Should(HavePrefix(shared.EnactmentAvailable+" boot="+boot), "%s on %s", policy, node)
	}
	nnsVersion := func(node string) string {
		s := &v1beta1.NodeNetworkState{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: node}, s); err != nil {
			return "" // not reported yet
		}
		return s.Status.HandlerNmstateVersion
	}
	// journalCursor is where NetworkManager's journal on n ends now.
	journalCursor := func(n *localcluster.Node) string {
		out, err := n.Run(ctx, "journalctl", "-u", paths.NMService, "-n", "1", "--show-cursor", "-o", "cat", "--no-pager")
		Expect(err).NotTo(HaveOccurred())
		_, cursor, ok := strings.Cut(out, "-- cursor: ")
		Expect(ok).To(BeTrue(), "journalctl --show-cursor: %s", out)
		return strings.TrimSpace(cursor)
	}
	// activity is what NetworkManager on n logged of activations, deactivations and
	// checkpoints since cursor.
	activity := func(n *localcluster.Node, cursor string) []string {
		out, err := n.Run(ctx, "journalctl", "-u", paths.NMService, "--after-cursor", cursor, "-o", "cat", "--no-pager")
		Expect(err).NotTo(HaveOccurred())
		var lines []string
		for _, l := range strings.Split(out, "\n") {
			if nmActivity.MatchString(l) {
				lines = append(lines, l)
			}
		}
		return lines
	}
	// network is n's addresses, links' states and routes, without the pods' veths and
	// bridge (the controller's pods come and go while it rolls). A route on "ifN" is on a
	// link ip could not name as it read: a pod's veth end the CNI was moving into the pod
	// (seen once: its IPv6 link-local routes, during the downgrade).
	network := func(n *localcluster.Node) string {
		out, err := n.Run(ctx, "sh", "-c", "ip -br addr show; ip route show table all; ip -6 route show table all")
		if err != nil {
			return err.Error()
		}
		var keep []string
		for _, l := range strings.Split(out, "\n") {
			if !strings.Contains(l, "veth") && !strings.Contains(l, "cni0") && !unnamedLink.MatchString(l) {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	// versions of the API objects: a write changes the object's resourceVersion.
	resourceVersions := func() map[string]string {
		rv := map[string]string{}
		policies := &nmstatev1.NodeNetworkConfigurationPolicyList{}
		Expect(c.Client.List(ctx, policies)).To(Succeed())
		for _, p := range policies.Items {
			rv["nncp/"+p.Name] = p.ResourceVersion
		}
		for _, e := range listEnactments(ctx, c) {
			rv["nnce/"+e.Name] = e.ResourceVersion
		}
		return rv
	}

	// watch samples, until stopped, the enactments of the watched nodes and their network:
	// what it returns is every time an enactment was not Available, or a node's network
	// differed from what it was when the watch started.
	watch := func(nodes ...*localcluster.Node) (stop func() []string) {
		before := map[string]string{}
		for _, n := range nodes {
			before[n.Name] = network(n)
		}
		var (
			mu         sync.Mutex
			violations []string
			done       = make(chan struct{})
			finished   = make(chan struct{})
		)
		note := func(s string) {
			mu.Lock()
			defer mu.Unlock()
			if !slices.Contains(violations, s) {
				violations = append(violations, s)
			}
		}
		go func() {
			defer close(finished)
			for {
				select {
				case <-done:
					return
				case <-time.After(300 * time.Millisecond):
				}
				enactments := &v1beta1.NodeNetworkConfigurationEnactmentList{}
				if err := c.Client.List(ctx, enactments); err != nil {
					note("listing enactments: " + err.Error())
					continue
				}
				for _, e := range enactments.Items {
					for _, n := range nodes {
						if e.Labels[shared.NodeLabel] == n.Name && !shared.IsTrue(e.Status.Conditions, shared.EnactmentAvailable, "") {
							note(fmt.Sprintf("%s not Available: %v", e.Name, e.Status.Conditions))
						}
					}
				}
				for _, n := range nodes {
					if now := network(n); now != before[n.Name] {
						note(fmt.Sprintf("%s's network changed:\n%s\nwas:\n%s", n.Name, now, before[n.Name]))
					}
				}
			}
		}()
		return func() []string {
			close(done)
			<-finished
			mu.Lock()
			defer mu.Unlock()
			return violations
		}
	}

	// rolled waits until every pod of nmoverlay runs image, ready, and no other remains;
	// the controller's lease is held by one of the new pods, and each node's
	// NodeNetworkState reports the version its handler now runs.
	rolled := func(image, nnsWant string) {
		Eventually(func() error {
			pods := &corev1.PodList{}
			if err := c.Client.List(ctx, pods, client.InNamespace(w.Namespace)); err != nil {
				return err
			}
			count := map[string]int{}
			started := map[string]time.Time{}
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
					return fmt.Errorf("pod %s: %s", p.Name, p.Status.Phase)
				}
				for _, cs := range p.Status.ContainerStatuses {
					if !cs.Ready || cs.State.Running == nil {
						return fmt.Errorf("pod %s: %s not ready", p.Name, cs.Name)
					}
					started[p.Name] = cs.State.Running.StartedAt.Time
				}
				for _, ct := range append(p.Spec.InitContainers, p.Spec.Containers...) {
					if ct.Image != image {
						return fmt.Errorf("pod %s: %s runs %s", p.Name, ct.Name, ct.Image)
					}
				}
				for _, workload := range []string{w.Operator, w.Handler, w.Controller} {
					if strings.HasPrefix(p.Name, workload+"-") {
						count[workload]++
					}
				}
			}
			if count[w.Operator] != 1 || count[w.Handler] != len(c.Nodes) || count[w.Controller] != 2 {
				return fmt.Errorf("pods: %v", count)
			}
			lease := &coordinationv1.Lease{}
			if err := c.Client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: controllerLease}, lease); err != nil {
				return err
			}
			holder, _, _ := strings.Cut(ptrString(lease.Spec.HolderIdentity), "_")
			at, ok := started[holder]
			if !ok || lease.Spec.RenewTime == nil || !lease.Spec.RenewTime.After(at) {
				return fmt.Errorf("the controller's lease is held by %q, not by one of the new pods", holder)
			}
			for _, n := range c.Nodes {
				if v := nnsVersion(n.Name); v != nnsWant {
					return fmt.Errorf("%s's NodeNetworkState: handler version %q, want %q", n.Name, v, nnsWant)
				}
			}
			return nil
		}, "180s", "500ms").Should(Succeed())
	}

	// switchTo applies a version's manifests while the nodes carry policies, and asserts
	// that nothing on the nodes noticed: every enactment stays Available, no address, link
	// state or route changes, NetworkManager activates, deactivates and checkpoints
	// nothing, and no policy or enactment is written.
	switchTo := func(name, deployDir, image, nnsWant string) {
		cursors := map[string]string{}
		for _, n := range c.Nodes {
			cursors[n.Name] = journalCursor(n)
		}
		objects := resourceVersions()
		stop := watch(c.Nodes...)
		install(name, deployDir, image)
		rolled(image, nnsWant)
		Expect(stop()).To(BeEmpty(), "every enactment Available and every node's network unchanged throughout")
		for _, n := range c.Nodes {
			Expect(activity(n, cursors[n.Name])).To(BeEmpty(), "NetworkManager on %s activated, deactivated or checkpointed nothing", n.Name)
		}
		Expect(resourceVersions()).To(Equal(objects), "the new pods read the policies and enactments as they are, and wrote none of them")
	}

	It("installs N through its operator, with its MachineConfig, and converges a bridge with an address and a route on each node", func() {
		start := time.Now()
		mcFrom = filepath.Join(dir, "mc-from.yaml")
		out, err := exec.Command(from.cli, "machineconfigs", "--pool", "worker", "-o", mcFrom).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		for _, n := range c.Nodes {
			Expect(c.ApplyMachineConfigFile(ctx, n, mcFrom)).To(Succeed())
		}
		install("install-from", from.deploy, from.image)
		Expect(c.WaitOperator(ctx, w)).To(Succeed())
		nmstate := filepath.Join(GinkgoT().TempDir(), "nmstate.yaml")
		Expect(os.WriteFile(nmstate, []byte(nmstateManifest), 0o644)).To(Succeed())
		kubectlOK("apply", "-f", nmstate)
		Expect(c.WaitInstalled(ctx, w)).To(Succeed())
		for _, n := range c.Nodes {
			Eventually(func() (string, error) { return n.Run(ctx, paths.HelperBinary, "verify") }, "60s", "500ms").
				Should(ContainSubstring("overlay verified"), "%s: N's init container installed nm-overlay and it enabled the overlay", n.Name)
		}
		Eventually(func() string { return nnsVersion(c.Nodes[0].Name) }, "60s", "250ms").ShouldNot(SatisfyAny(BeEmpty(), ContainSubstring(next.version)))
		fromVersion = nnsVersion(c.Nodes[0].Name)
		GinkgoWriter.Printf("N's handler reports %q; N+1 is %s\n", fromVersion, next.version)
		took("N installed with its MachineConfig", start)

		start = time.Now()
		cursors := map[string]string{}
		for _, n := range c.Nodes {
			cursors[n.Name] = journalCursor(n)
		}
		for i, n := range c.Nodes {
			Expect(c.Client.Create(ctx, bridgePolicy(n.Name, i))).To(Succeed())
		}
		for i, n := range c.Nodes {
			boot, err := n.BootID(ctx)
			Expect(err).NotTo(HaveOccurred())
			waitAvailable(n.Name, bridgePolicy(n.Name, i).Name, boot)
			Expect(n.Run(ctx, "ip", "-br", "addr", "show", bridge)).To(ContainSubstring(fmt.Sprintf("198.51.100.%d/24", i+1)))
			Expect(n.Run(ctx, "ip", "route", "show", "203.0.113.0/24")).To(ContainSubstring("via 198.51.100.254 dev " + bridge))
			// What the upgrade must not show, seen here: the apply's activations and its checkpoint.
			seen := activity(n, cursors[n.Name])
			Expect(seen).To(ContainElement(ContainSubstring("Activation: starting connection")), "%s", n.Name)
			Expect(seen).To(ContainElement(ContainSubstring("checkpoint")), "%s", n.Name)
		}
		took("policies Available under N", start)
		if file := os.Getenv("NMOVERLAY_UPGRADE_RECORD"); file != "" {
			Expect(record(ctx, c, file)).To(Succeed())
		}
	})

	It("upgrades to N+1 with kubectl apply -k: the operator rolls the handlers and the controller, and nothing on the nodes changes", func() {
		start := time.Now()
		lease := &coordinationv1.Lease{}
		Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: controllerLease}, lease)).To(Succeed())
		before := ptrString(lease.Spec.HolderIdentity)
		switchTo("install-next", "../../deploy", next.image, "nmoverlay "+next.version+" (networkmanager)")
		Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: controllerLease}, lease)).To(Succeed())
		Expect(ptrString(lease.Spec.HolderIdentity)).NotTo(Equal(before), "the leadership passed to a new controller")
		for i, n := range c.Nodes {
			s := &v1beta1.NodeNetworkState{}
			Expect(c.Client.Get(ctx, client.ObjectKey{Name: n.Name}, s)).To(Succeed())
			Expect(string(s.Status.CurrentState.Raw)).To(ContainSubstring(fmt.Sprintf(`"198.51.100.%d"`, i+1)), "%s's state is current", n.Name)
		}
		took("upgrade to N+1", start)
	})

	// MCO applies a changed MachineConfig one node at a time, each drained and rebooted.
	rollMachineConfig := func(file string) {
		for _, n := range c.Nodes {
			var others []*localcluster.Node
			for _, o := range c.Nodes {
				if o != n {
					others = append(others, o)
				}
			}
			stop := watch(others...)
			Expect(c.ApplyMachineConfigFile(ctx, n, file)).To(Succeed())
			boot, err := n.BootID(ctx)
			Expect(err).NotTo(HaveOccurred())
			for i, m := range c.Nodes {
				if m == n {
					waitAvailable(n.Name, bridgePolicy(n.Name, i).Name, boot)
				}
			}
			Expect(stop()).To(BeEmpty(), "the other nodes kept their policies while %s rebooted", n.Name)
		}
	}

	It("rolls N+1's MachineConfig out one reboot at a time: each node comes back on its policies, set up by N+1's nm-overlay", func() {
		start := time.Now()
		mcNext := filepath.Join(dir, "mc-next.yaml")
		cli, err := kit.Binary("cmd/nmoverlay")
		Expect(err).NotTo(HaveOccurred())
		out, err := exec.Command(cli, "machineconfigs", "--pool", "worker", "-o", mcNext).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		a, _ := os.ReadFile(mcFrom)
		b, _ := os.ReadFile(mcNext)
		Expect(a).NotTo(BeEmpty())
		GinkgoWriter.Printf("N+1's MachineConfig is N's: %t (a version alone changes nothing in it, so MCO reboots no pool for it)\n", string(a) == string(b))
		rollMachineConfig(mcNext)
		for _, n := range c.Nodes {
			Expect(n.Run(ctx, paths.HelperBinary, "version")).To(HavePrefix("nm-overlay "+next.version+" "), "N+1's init container installed its nm-overlay on %s", n.Name)
			Expect(n.Run(ctx, "journalctl", "-b", "-u", paths.HelperService, "-o", "verbose", "--no-pager")).
				To(ContainSubstring("NMOVERLAY_VERSION="+next.version), "N+1's nm-overlay set %s's overlay up at its boot", n.Name)
		}
		Eventually(func() error {
			for _, n := range c.Nodes {
				if v := nnsVersion(n.Name); v != "nmoverlay "+next.version+" (networkmanager)" {
					return fmt.Errorf("%s: %s", n.Name, v)
				}
			}
			return nil
		}, "60s", "500ms").Should(Succeed())
		took("N+1's MachineConfig, one reboot at a time", start)
	})

	It("downgrades to N with kubectl apply -k: the operator rolls back, and nothing on the nodes changes", func() {
		start := time.Now()
		switchTo("install-from", from.deploy, from.image, fromVersion)
		took("downgrade to N", start)
	})

	// While a DaemonSet rolls, nodes run both versions under the newer controller. Held
	// here: the operator stopped, the DaemonSet set to OnDelete with N+1's image, and one
	// node's handler replaced.
	It("runs an N handler and an N+1 handler under one N+1 controller: both converge new policies, and neither writes the other's objects", func() {
		start := time.Now()
		a, b := c.Nodes[0], c.Nodes[1]
		kubectlOK("-n", w.Namespace, "scale", "deployment", w.Operator, "--replicas=0")
		Eventually(func() int {
			d := &appsv1.Deployment{}
			Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: w.Operator}, d)).To(Succeed())
			return int(d.Status.Replicas)
		}, "60s", "250ms").Should(BeZero())
		kubectlOK("-n", w.Namespace, "patch", "daemonset", w.Handler, "--type=merge", "-p", `{"spec":{"updateStrategy":{"type":"OnDelete","rollingUpdate":null}}}`)
		kubectlOK("-n", w.Namespace, "set", "image", "daemonset/"+w.Handler, "*="+next.image)
		kubectlOK("-n", w.Namespace, "set", "image", "deployment/"+w.Controller, "*="+next.image)
		kubectlOK("-n", w.Namespace, "delete", "pod", "--field-selector", "spec.nodeName="+a.Name, "-l", "app.kubernetes.io/name="+w.Handler, "--wait")
		want := map[string]string{a.Name: "nmoverlay " + next.version + " (networkmanager)", b.Name: fromVersion}
		Eventually(func() error {
			pods := &corev1.PodList{}
			if err := c.Client.List(ctx, pods, client.InNamespace(w.Namespace)); err != nil {
				return err
			}
			for _, p := range pods.Items {
				ready := len(p.Status.ContainerStatuses) > 0 && p.DeletionTimestamp == nil
				for _, cs := range p.Status.ContainerStatuses {
					ready = ready && cs.Ready
				}
				wantImage := next.image
				if strings.HasPrefix(p.Name, w.Handler+"-") && p.Spec.NodeName == b.Name {
					wantImage = from.image
				}
				if !ready || p.Spec.Containers[0].Image != wantImage {
					return fmt.Errorf("pod %s on %s: ready %t, %s", p.Name, p.Spec.NodeName, ready, p.Spec.Containers[0].Image)
				}
			}
			for node, v := range want {
				if got := nnsVersion(node); got != v {
					return fmt.Errorf("%s: %s", node, got)
				}
			}
			return nil
		}, "180s", "500ms").Should(Succeed())
		took("skew set up", start)

		start = time.Now()
		// A node's own handler writes its state a moment after its policy is Available (it
		// waits for NetworkManager to be quiet): each node's state is waited for until it
		// shows what its policy made, so that the writes below are the other handler's alone.
		shows := func(node, dev string) {
			Eventually(func() string {
				s := &v1beta1.NodeNetworkState{}
				Expect(c.Client.Get(ctx, client.ObjectKey{Name: node}, s)).To(Succeed())
				return string(s.Status.CurrentState.Raw)
			}, "30s", "250ms").Should(ContainSubstring(`"`+dev+`"`), "%s's state shows %s", node, dev)
		}
		both := portlessBridge("skew-both", "br-skew", nil)
		Expect(c.Client.Create(ctx, both)).To(Succeed())
		for _, n := range c.Nodes {
			boot, err := n.BootID(ctx)
			Expect(err).NotTo(HaveOccurred())
			waitAvailable(n.Name, both.Name, boot)
			shows(n.Name, "br-skew")
		}
		// A policy for one node only: the other node's handler writes nothing meanwhile.
		for _, pair := range [][2]*localcluster.Node{{a, b}, {b, a}} {
			n, other := pair[0], pair[1]
			dev := "br-" + n.Name[len(n.Name)-1:]
			mine := portlessBridge("skew-"+n.Name, dev, map[string]string{corev1.LabelHostname: n.Name})
			otherState := &v1beta1.NodeNetworkState{}
			Expect(c.Client.Get(ctx, client.ObjectKey{Name: other.Name}, otherState)).To(Succeed())
			otherEnactments := map[string]string{}
			for _, e := range listEnactments(ctx, c) {
				if e.Labels[shared.NodeLabel] == other.Name {
					otherEnactments[e.Name] = e.ResourceVersion
				}
			}
			Expect(c.Client.Create(ctx, mine)).To(Succeed())
			boot, err := n.BootID(ctx)
			Expect(err).NotTo(HaveOccurred())
			waitAvailable(n.Name, mine.Name, boot)
			shows(n.Name, dev)
			Expect(enactment(other.Name, mine.Name)).To(BeNil(), "no enactment on a node the policy does not select")
			after := &v1beta1.NodeNetworkState{}
			Expect(c.Client.Get(ctx, client.ObjectKey{Name: other.Name}, after)).To(Succeed())
			Expect(after.ResourceVersion).To(Equal(otherState.ResourceVersion), "%s's NodeNetworkState was not written while %s converged", other.Name, n.Name)
			for _, e := range listEnactments(ctx, c) {
				if e.Labels[shared.NodeLabel] == other.Name {
					Expect(e.ResourceVersion).To(Equal(otherEnactments[e.Name]), "%s was not written while %s converged", e.Name, n.Name)
				}
			}
		}
		for node, v := range want {
			Expect(nnsVersion(node)).To(Equal(v), "each node's state is written by its own handler's version only")
		}
		took("both versions converge", start)
	})
})

// record writes what N stored of nmoverlay's kinds, as the API server returns them, to
// file: the objects deploy/testdata/released keeps, which the integration tier applies to
// this tree's CRDs. Only what an object says is kept (no UIDs, owners or server fields).
func record(ctx context.Context, c *localcluster.Cluster, file string) error {
	var docs []string
	for _, kind := range []string{"NMStateList", "NodeNetworkConfigurationPolicyList", "NodeNetworkConfigurationEnactmentList", "NodeNetworkStateList"} {
		version := "v1"
		if kind == "NodeNetworkConfigurationEnactmentList" || kind == "NodeNetworkStateList" {
			version = "v1beta1"
		}
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion("nmstate.io/" + version)
		l.SetKind(kind)
		if err := c.Client.List(ctx, l); err != nil {
			return err
		}
		for _, o := range l.Items {
			meta := map[string]any{"name": o.GetName()}
			if l := o.GetLabels(); len(l) > 0 {
				meta["labels"] = l
			}
			if a := o.GetAnnotations(); len(a) > 0 {
				meta["annotations"] = a
			}
			o.Object["metadata"] = meta
			b, err := yaml.Marshal(o.Object)
			if err != nil {
				return err
			}
			docs = append(docs, string(b))
		}
	}
	return os.WriteFile(file, []byte("---\n"+strings.Join(docs, "---\n")), 0o644)
}

func listEnactments(ctx context.Context, c *localcluster.Cluster) []v1beta1.NodeNetworkConfigurationEnactment {
	l := &v1beta1.NodeNetworkConfigurationEnactmentList{}
	Expect(c.Client.List(ctx, l)).To(Succeed())
	return l.Items
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// unnamedLink is a route's device as ip prints one it cannot name: "dev if5".
var unnamedLink = regexp.MustCompile(`\bdev if[0-9]+\b`)
