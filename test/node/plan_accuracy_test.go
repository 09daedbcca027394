//go:build node

package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/plan"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/accuracy"
	"github.com/nmoverlay/nmoverlay/test/kit"
	"github.com/nmoverlay/nmoverlay/test/nmhost"
)

// `nmoverlay plan` is accurate: run as an administrator runs it, against the
// NodeNetworkState a real handler reports, it predicts each change the handler then makes
// and no other (test/accuracy compares the prediction with the state before and after,
// field by field), and once the policy is applied the same plan says no change. A bridge,
// DNS, a route and its removal, and an Open vSwitch bridge with an internal interface; the
// VM tier does the bond with its VLANs, which this kernel cannot make.
var _ = Describe("nmoverlay plan against the handler", Ordered, func() {
	const nodeName = "plan-acc"
	var (
		n          *overlayNode
		k8s        client.Client
		bin, dir   string
		kubeconfig string
		ctx        = context.Background()
	)
	// settled is the node's NodeNetworkState once the reporter (every second) has shown
	// the same state three times running: an address's DAD, or a port's carrier, done.
	settled := func() state.State {
		GinkgoHelper()
		var last []byte
		same := 0
		Eventually(func() int {
			nns := &v1beta1.NodeNetworkState{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: nodeName}, nns); err != nil {
				return 0
			}
			if bytes.Equal(nns.Status.CurrentState.Raw, last) {
				same++
			} else {
				last, same = nns.Status.CurrentState.Raw, 1
			}
			return same
		}, "60s", "1s").Should(BeNumerically(">=", 3))
		var s state.State
		Expect(json.Unmarshal(last, &s)).To(Succeed())
		return s
	}
	// planOf runs the command on a policy file or name: its exit status, and this node's
	// changes from -o json.
	planOf := func(arg string) (int, []plan.Change, string) {
		GinkgoHelper()
		cmd := exec.Command(bin, "plan", "--kubeconfig", kubeconfig, "-o", "json", arg)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		status := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			status = ee.ExitCode()
		} else {
			Expect(err).NotTo(HaveOccurred())
		}
		var res struct{ Groups []plan.Group }
		Expect(json.Unmarshal(out, &res)).To(Succeed(), "%s%s", out, stderr.String())
		Expect(res.Groups).To(HaveLen(1), "%s", out)
		Expect(res.Groups[0].Nodes).To(Equal([]string{nodeName}))
		return status, res.Groups[0].Changes, string(out)
	}
	// apply plans desired as policy name, applies it (creates or edits the policy), waits
	// for it to be Available, and checks the plan against the NodeNetworkStates before and
	// after; the plan again says no change. It returns the plan's changes.
	apply := func(name, desired string) []plan.Change {
		GinkgoHelper()
		p := &nmstatev1.NodeNetworkConfigurationPolicy{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			p = &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
		}
		p.TypeMeta = metav1.TypeMeta{APIVersion: nmstatev1.GroupVersion.String(), Kind: "NodeNetworkConfigurationPolicy"}
		j, err := yaml.YAMLToJSON([]byte(desired))
		Expect(err).NotTo(HaveOccurred())
		p.Spec.DesiredState = shared.State{Raw: j}
		file := filepath.Join(dir, name+".yaml")
		manifest, err := yaml.Marshal(p)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(file, manifest, 0o644)).To(Succeed())

		before := settled()
		status, changes, out := planOf(file)
		Expect(status).To(Equal(2), "%s", out)
		GinkgoWriter.Printf("plan of %s: %s\n", name, out)
		if p.ResourceVersion == "" {
			Expect(k8s.Create(ctx, p)).To(Succeed())
		} else {
			Expect(k8s.Update(ctx, p)).To(Succeed())
		}
		Eventually(func() string {
			e := &v1beta1.NodeNetworkConfigurationEnactment{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: shared.EnactmentKey(nodeName, name)}, e); err != nil ||
				e.Status.PolicyGeneration != p.Generation {
				return "<not yet>"
			}
			return kit.EnactmentSummary(k8s, nodeName, name)()
		}, "60s", "250ms").Should(HavePrefix("Available"))
		after := settled()
		Expect(accuracy.Check(changes, before, after)).To(Succeed(), "plan: %s", out)
		status, again, out := planOf(name)
		Expect(status).To(Equal(0), "%s", out)
		Expect(again).To(BeEmpty())
		return changes
	}

	BeforeAll(func() {
		nmDir := os.Getenv("NMOVERLAY_NM_OVS")
		Expect(filepath.Join(nmDir, "NetworkManager")).To(BeAnExistingFile(), "NMOVERLAY_NM_OVS is unset: run make test-node (hack/nm-ovs.sh builds it)")
		var err error
		bin, err = kit.Binary("cmd/nmoverlay")
		Expect(err).NotTo(HaveOccurred())
		dir = GinkgoT().TempDir()
		a, err := kit.StartAPI()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(a.Stop)
		stopController, err := a.StartController()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stopController)
		k8s = a.Client
		kubeconfig, err = a.AdminKubeconfig(dir)
		Expect(err).NotTo(HaveOccurred())
		_, err = kit.ReadyNode(ctx, k8s, nodeName, nil)
		Expect(err).NotTo(HaveOccurred())
		n, err = newOverlayNode("planacc", helper, withNICs(ctx, "eth2", "eth3"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(n.close)
		n.OVS = &nmhost.OVS{NetworkManagerDir: nmDir}
		Expect(n.start(ctx)).To(Succeed())
		stop, err := n.startHandler(a.Env.Config, k8s, nodeName)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(stop()).To(Succeed()) })
	})
	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Println(n.NMLog())
		}
	})

	It("predicts a bridge over a port, with an address", func() {
		changes := apply("acc-bridge", `
interfaces:
- name: br-acc
  type: linux-bridge
  state: up
  mtu: 1400
  ipv4: {enabled: true, dhcp: false, address: [{ip: 192.0.2.1, prefix-length: 24}]}
  bridge: {options: {stp: {enabled: false}}, port: [{name: eth3}]}
`)
		Expect(changes).To(ContainElements(
			HaveField("Kind", plan.Create), HaveField("Path", "eth3.controller")))
	})

	It("predicts DNS servers and search domains", func() {
		changes := apply("acc-dns", `
dns-resolver: {config: {server: [192.0.2.53], search: [example.test]}}
`)
		Expect(changes).To(ConsistOf(
			plan.Change{Kind: plan.Set, Path: "dns-resolver.config.server", Old: "[]", New: "[192.0.2.53]"},
			plan.Change{Kind: plan.Set, Path: "dns-resolver.config.search", Old: "[]", New: "[example.test]"}))
	})

	const route = `{destination: 198.51.100.0/24, next-hop-address: 192.0.2.254, next-hop-interface: br-acc`
	It("predicts a route", func() {
		changes := apply("acc-route", "routes: {config: ["+route+"}]}")
		Expect(changes).To(ConsistOf(HaveField("Kind", plan.Add)))
	})

	It("predicts a route's removal, by an edit of the policy that made it", func() {
		changes := apply("acc-route", "routes: {config: ["+route+", state: absent}]}")
		Expect(changes).To(ConsistOf(HaveField("Kind", plan.Drop)))
	})

	It("predicts an Open vSwitch bridge with a system port and an internal interface", func() {
		changes := apply("acc-ovs", `
interfaces:
- name: ovs-acc
  type: ovs-bridge
  state: up
  bridge: {options: {stp: false, datapath: netdev}, port: [{name: eth2}, {name: ovs-acc0}]}
- name: ovs-acc0
  type: ovs-interface
  state: up
  ipv4: {enabled: true, dhcp: false, address: [{ip: 203.0.113.1, prefix-length: 24}]}
  ipv6: {enabled: false}
`)
		Expect(changes).To(ContainElements(HaveField("Path", "ovs-acc,type=ovs-bridge"), HaveField("Path", "ovs-acc0")))
	})
})
