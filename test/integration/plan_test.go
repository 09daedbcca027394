//go:build integration

package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/plan"
	"github.com/nmoverlay/nmoverlay/test/kit"
)

// nmoverlay plan on an API server of its own: 12 workers as their handlers report them
// (a NodeNetworkState each, one policy in force Available on each), one of them already
// running what a new policy asks, and a node without a NodeNetworkState. The command reads
// them with an administrator's kubeconfig, prints per group of nodes, and exits as
// scripts expect; nothing it reads is written.
var _ = Describe("nmoverlay plan", Ordered, func() {
	var (
		c          client.Client
		ctx        = context.Background()
		bin, dir   string
		kubeconfig string
	)
	const (
		workers = 12
		// vlan100 is in force on every worker: a VLAN on eth1 with an address.
		vlan100 = `{"interfaces":[{"name":"eth1.100","type":"vlan","state":"up","vlan":{"base-iface":"eth1","id":100},
  "ipv4":{"enabled":true,"dhcp":false,"address":[{"ip":"198.51.100.1","prefix-length":24}]}}]}`
		currentOf = `{"interfaces":[
  {"name":"eth0","type":"ethernet","state":"up","mtu":1500,"ipv4":{"enabled":true,"dhcp":false,"address":[{"ip":"%s","prefix-length":24}]}},
  {"name":"eth1","type":"ethernet","state":"up","mtu":%d,"ipv4":{"enabled":false}},
  {"name":"eth1.100","type":"vlan","state":"up","mtu":1500,"vlan":{"base-iface":"eth1","id":100},
   "ipv4":{"enabled":true,"dhcp":false,"address":[{"ip":"198.51.100.1","prefix-length":24}]}}],
 "routes":{"running":[{"destination":"0.0.0.0/0","next-hop-interface":"eth0","next-hop-address":"192.0.2.254","table-id":254}],"config":[]}}`
	)
	planCmd := func(args ...string) (stdout, stderr string, code int) {
		GinkgoHelper()
		cmd := exec.Command(bin, append([]string{"plan", "--kubeconfig", kubeconfig}, args...)...)
		var out, errOut []byte
		var err error
		cmd.Stderr = nil
		out, err = cmd.Output()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			errOut = exit.Stderr
			return string(out), string(errOut), exit.ExitCode()
		}
		Expect(err).NotTo(HaveOccurred())
		return string(out), "", 0
	}
	file := func(name, manifest string) string {
		GinkgoHelper()
		p := filepath.Join(dir, name)
		Expect(os.WriteFile(p, []byte(manifest), 0o644)).To(Succeed())
		return p
	}
	policyManifest := func(name, selector, desired string) string {
		return fmt.Sprintf("apiVersion: nmstate.io/v1\nkind: NodeNetworkConfigurationPolicy\nmetadata:\n  name: %s\nspec:\n  nodeSelector:\n    %s\n  desiredState: %s\n", name, selector, desired)
	}
	groups := func(stdout string) []plan.Group {
		GinkgoHelper()
		var out struct{ Groups []plan.Group }
		Expect(json.Unmarshal([]byte(stdout), &out)).To(Succeed(), stdout)
		return out.Groups
	}

	BeforeAll(func() {
		a, err := kit.StartAPI()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(a.Stop)
		c = a.Client
		dir = GinkgoT().TempDir()
		kubeconfig, err = a.AdminKubeconfig(dir)
		Expect(err).NotTo(HaveOccurred())
		bin, err = kit.Binary("cmd/nmoverlay")
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Create(ctx, &nmstatev1.NMState{ObjectMeta: metav1.ObjectMeta{Name: "nmstate"}})).To(Succeed())

		p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "vlan100"}}
		p.Spec.NodeSelector = map[string]string{"node-role.kubernetes.io/worker": ""}
		p.Spec.DesiredState = shared.State{Raw: []byte(vlan100)}
		Expect(c.Create(ctx, p)).To(Succeed())
		for i := range workers {
			name := fmt.Sprintf("worker-%02d", i)
			ip := fmt.Sprintf("192.0.2.%d", 10+i)
			node, err := kit.ReadyNode(ctx, c, name, map[string]string{"node-role.kubernetes.io/worker": "", "kubernetes.io/hostname": name})
			Expect(err).NotTo(HaveOccurred())
			node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
			Expect(c.Status().Update(ctx, node)).To(Succeed())
			mtu := 1500
			if i == workers-1 {
				mtu = 9000 // runs the jumbo frames already
			}
			nns := &v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: name}}
			Expect(c.Create(ctx, nns)).To(Succeed())
			nns.Status.CurrentState = shared.State{Raw: []byte(fmt.Sprintf(currentOf, ip, mtu))}
			nns.Status.HostNetworkManagerCapabilities = []string{"ipv4-forwarding"}
			Expect(c.Status().Update(ctx, nns)).To(Succeed())
			e := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: name + ".vlan100",
				Labels: map[string]string{shared.NodeLabel: name, shared.PolicyLabel: "vlan100"}}}
			Expect(c.Create(ctx, e)).To(Succeed())
		}
		_, err = kit.ReadyNode(ctx, c, "bare", map[string]string{"bare": "yes"})
		Expect(err).NotTo(HaveOccurred())
	})

	It("groups the nodes with the same change, field by field, and exits 2", func() {
		f := file("jumbo.yaml", policyManifest("jumbo", `node-role.kubernetes.io/worker: ""`,
			`{interfaces: [{name: eth1, type: ethernet, state: up, mtu: 9000}, {name: br-storage, type: linux-bridge, state: up, bridge: {port: [{name: eth1.200}]}},
  {name: eth1.200, type: vlan, state: up, vlan: {base-iface: eth1, id: 200}}]}`))
		stdout, stderr, code := planCmd("-o", "json", f)
		Expect(code).To(Equal(2), stderr)
		g := groups(stdout)
		Expect(g).To(HaveLen(2))
		Expect(g[0].Nodes).To(HaveLen(workers - 1))
		Expect(g[0].Changes).To(ConsistOf(
			plan.Change{Kind: plan.Create, Path: "br-storage", New: "(linux-bridge; ports eth1.200)"},
			plan.Change{Kind: plan.Create, Path: "eth1.200", New: "(vlan; on eth1)"},
			plan.Change{Kind: plan.Set, Path: "eth1.mtu", Old: "1500", New: "9000"}))
		Expect(g[1].Nodes).To(Equal([]string{fmt.Sprintf("worker-%02d", workers-1)}))
		Expect(g[1].Changes).To(HaveLen(2), "its MTU is already 9000")

		text, _, code := planCmd(f)
		Expect(code).To(Equal(2))
		Expect(text).To(ContainSubstring("worker-00, worker-01, worker-02, worker-03, worker-04, worker-05, worker-06, worker-07 and 3 more (11 nodes):\n"))
		Expect(text).To(ContainSubstring("  ~ eth1.mtu: 1500 → 9000\n"))
	})

	It("plans an edit of a policy in force: what it no longer states goes; by name, what applying it again would change", func() {
		f := file("vlan100.yaml", policyManifest("vlan100", `node-role.kubernetes.io/worker: ""`,
			`{interfaces: [{name: eth1.100, type: vlan, state: up, vlan: {base-iface: eth1, id: 100}, ipv4: {enabled: true, dhcp: false, address: []}}]}`))
		stdout, stderr, code := planCmd("-o", "yaml", f)
		Expect(code).To(Equal(2), stderr)
		Expect(stdout).To(ContainSubstring("kind: drop\n"))
		Expect(stdout).To(ContainSubstring("old: 198.51.100.1/24\n"))
		Expect(stdout).To(ContainSubstring("path: eth1.100.ipv4.address\n"))

		stdout, stderr, code = planCmd("vlan100")
		Expect(code).To(Equal(0), stderr)
		Expect(stdout).To(ContainSubstring("(12 nodes): no change"))
	})

	It("exits 1 on a conflict, naming the policy in force, and on a capability a node lacks", func() {
		f := file("conflict.yaml", policyManifest("other-vlan", `node-role.kubernetes.io/worker: ""`,
			`{interfaces: [{name: eth1.100, type: vlan, state: up, vlan: {base-iface: eth1, id: 101}}]}`))
		stdout, stderr, code := planCmd(f)
		Expect(code).To(Equal(1), stderr)
		Expect(stdout).To(ContainSubstring("conflict with vlan100: spec.desiredState.interfaces[name=eth1.100].vlan"))

		f = file("hsr.yaml", policyManifest("hsr", `kubernetes.io/hostname: worker-00`,
			`{interfaces: [{name: hsr0, type: hsr, state: up, hsr: {port1: eth0, port2: eth1, protocol: prp}}]}`))
		stdout, stderr, code = planCmd(f)
		Expect(code).To(Equal(1), stderr)
		Expect(stdout).To(ContainSubstring("worker-00 (1 node):\n  refused: spec.desiredState.interfaces[0].type: needs hsr, which the node's NetworkManager does not have"))
	})

	It("flags a change to the interface of the default route and the InternalIP", func() {
		f := file("eth0.yaml", policyManifest("eth0-mtu", `kubernetes.io/hostname: worker-03`,
			`{interfaces: [{name: eth0, type: ethernet, state: up, mtu: 9000}]}`))
		stdout, stderr, code := planCmd(f)
		Expect(code).To(Equal(2), stderr)
		Expect(stdout).To(ContainSubstring("  risk: eth0 carries the node's default route: the change touches it\n"))
	})

	It("says one clear line for an unknown node, a selected node without its NodeNetworkState, an unknown policy", func() {
		f := file("bare.yaml", policyManifest("bare", `bare: "yes"`, `{interfaces: [{name: eth1, type: ethernet, state: up, mtu: 9000}]}`))
		for _, tc := range []struct {
			args []string
			says string
		}{
			{[]string{"--node", "nope", f}, "nmoverlay plan: no node nope in the cluster\n"},
			{[]string{f}, "nmoverlay plan: node bare: no NodeNetworkState (its handler has not reported the node's state yet)\n"},
			{[]string{"no-such-policy"}, "nmoverlay plan: no-such-policy: no such file, and no policy of that name in the cluster\n"},
		} {
			stdout, stderr, code := planCmd(tc.args...)
			Expect(code).To(Equal(1), stdout)
			Expect(stderr).To(Equal(tc.says))
		}
	})

	It("changes nothing in the cluster", func() {
		policies := &nmstatev1.NodeNetworkConfigurationPolicyList{}
		Expect(c.List(ctx, policies)).To(Succeed())
		Expect(policies.Items).To(HaveLen(1))
		Expect(policies.Items[0].Generation).To(Equal(int64(1)))
	})
})
