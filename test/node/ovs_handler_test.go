//go:build node

package node_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/ovsdb"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/kit"
	"github.com/nmoverlay/nmoverlay/test/nmhost"
)

// The handler with a real API server on a node with Open vSwitch: a localnet policy
// (OpenShift's, on the userspace datapath) becomes Available, the NodeNetworkState shows the
// bridge and the mapping, a reboot takes both away until the handler re-applies them in
// the new boot, and deleting the policy removes them.
var _ = Describe("the handler with Open vSwitch", Ordered, func() {
	const nodeName = "ovs-e2e"
	var (
		n    *overlayNode
		env  *envtest.Environment
		k8s  client.Client
		ctx  = context.Background()
		stop func() error
	)
	run := func(name string, args ...string) string {
		out, err := n.Run(ctx, name, args...)
		Expect(err).NotTo(HaveOccurred(), "%s %v: %s", name, args, out)
		return strings.TrimSpace(out)
	}
	bridges := func() []string { return strings.Fields(run("ovs-vsctl", "list-br")) }
	mappings := func() string {
		return strings.Trim(run("ovs-vsctl", "--if-exists", "get", "Open_vSwitch", ".", "external_ids:"+ovsdb.BridgeMappingsKey), `"`)
	}
	enactment := func(policy string) func() string { return enactmentSummary(k8s, nodeName, policy) }
	reported := func() state.State { return reportedState(k8s, nodeName) }
	startHandler := func() {
		var err error
		stop, err = n.startHandler(env.Config, k8s, nodeName)
		Expect(err).NotTo(HaveOccurred())
	}

	BeforeAll(func() {
		nmDir := os.Getenv("NMOVERLAY_NM_OVS")
		Expect(filepath.Join(nmDir, "NetworkManager")).To(BeAnExistingFile(), "NMOVERLAY_NM_OVS is unset: run make test-node (hack/nm-ovs.sh builds it)")
		a, err := kit.StartAPI()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(a.Stop)
		stopController, err := a.StartController() // it grants the node its rollout slots
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stopController)
		env, k8s = a.Env, a.Client
		_, err = kit.ReadyNode(ctx, k8s, nodeName, nil)
		Expect(err).NotTo(HaveOccurred())
		n, err = newOverlayNode("ovse2e", helper, withNICs(ctx, "eth2"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(n.close)
		n.OVS = &nmhost.OVS{NetworkManagerDir: nmDir}
		Expect(n.start(ctx)).To(Succeed())
		run("ovs-vsctl", "set", "Open_vSwitch", ".", "external_ids:ovn-bridge-mappings=physnet:br-ex")
		startHandler()
		DeferCleanup(func() { Expect(stop()).To(Succeed()) })
	})
	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Println(n.NMLog())
		}
	})

	It("applies a localnet policy and reports the bridge and its mapping", func() {
		p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "localnet"}}
		p.Spec.DesiredState = shared.State{Raw: []byte(`{"interfaces":[{"name":"ovs-br1","type":"ovs-bridge","state":"up","bridge":{
			"allow-extra-patch-ports":true,"options":{"stp":false,"mcast-snooping-enable":true,"datapath":"netdev"},"port":[{"name":"eth2"}]}}],
			"ovn":{"bridge-mappings":[{"localnet":"localnet2","bridge":"ovs-br1","state":"present"}]}}`)}
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Eventually(enactment("localnet"), "30s").Should(HavePrefix("Available boot-1"))
		Expect(bridges()).To(ConsistOf("ovs-br1"))
		Expect(mappings()).To(Equal("localnet2:ovs-br1,physnet:br-ex"))
		Eventually(func() *state.OVN { return reported().OVN }, "20s", "250ms").Should(Equal(&state.OVN{BridgeMappings: []state.BridgeMapping{
			{Localnet: "localnet2", Bridge: "ovs-br1"}, {Localnet: "physnet", Bridge: "br-ex"}}}))
		Expect(reported().Interfaces).To(ContainElement(SatisfyAll(HaveField("Name", "ovs-br1"), HaveField("Type", state.OVSBridge),
			WithTransform(bridgePorts, ContainElement(state.BridgePort{Name: "eth2"})))))
	})

	// NetworkManager 1.42.4 (Debian 12's, this node's) has no bond-port.prio: a policy
	// setting a bond port's priority is refused on this node, naming the field, the node's
	// NetworkManager and the releases that apply it, with nothing changed; the
	// NodeNetworkState lists what the node's NetworkManager has.
	It("refuses a field the node's NetworkManager cannot apply, naming it; the state lists the node's capabilities", func() {
		s := &v1beta1.NodeNetworkState{}
		Eventually(func() []string {
			_ = k8s.Get(ctx, client.ObjectKey{Name: nodeName}, s)
			return s.Status.HostNetworkManagerCapabilities
		}, "20s", "250ms").Should(Equal([]string{"ovs"}), "1.42.4 built with the OVS plugin, before bond-port.prio (1.44)")
		Expect(s.Status.HostNetworkManagerVersion).To(Equal("1.42.4"))
		// refused: the policy fails with reason and no boot (it was never applied), dev
		// (what it would make) does not exist, and its enactment goes with it.
		refused := func(name, desired, reason, dev string) {
			p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
			p.Spec.DesiredState = shared.State{Raw: []byte(desired)}
			Expect(k8s.Create(ctx, p)).To(Succeed())
			Eventually(enactment(name), "30s").Should(Equal("Failing : spec.desiredState: " + reason))
			Expect(run("ip", "-o", "link", "show")).NotTo(ContainSubstring(dev))
			Expect(k8s.Delete(ctx, p)).To(Succeed())
			Eventually(enactment(name), "30s").Should(Equal("<none>"))
		}
		refused("bond-priority", `{"interfaces":[{"name":"bond9","type":"bond","state":"up",
			"link-aggregation":{"mode":"active-backup","port":["eth2"],"ports-config":[{"name":"eth2","priority":5}]}}]}`,
			"interfaces[0].link-aggregation.ports-config[0].priority: NetworkManager 1.42.4 on this node has no bond-port.prio "+
				"(NetworkManager 1.44 and later apply it)", "bond9")
		// A kind 1.42 has no profile for.
		refused("prp", `{"interfaces":[{"name":"hsr0","type":"hsr","state":"up",
			"hsr":{"port1":"eth2","port2":"eth3","multicast-spec":40,"protocol":"prp"}}]}`,
			"interfaces[0].type: NetworkManager 1.42.4 on this node has no hsr profiles (NetworkManager 1.46 and later apply it)", "hsr0")
		// nmstate's MACsec example on a node without wpa_supplicant, through which
		// NetworkManager agrees MACsec keys.
		refused("macsec", `{"interfaces":[{"name":"macsec0","type":"macsec","state":"up",
			"macsec":{"base-iface":"eth2","encrypt":true,"mka-cak":"50b71a8ef0bd5751ea76de6d6c98c03a",
			"mka-ckn":"f2b4297d39da7330910a74abc0449feb45b5c0b9fc23df1430e1898fcf1c4550","port":0,"send-sci":true,"validation":"strict"}}]}`,
			"interfaces[0].type: this node has no wpa_supplicant (fi.w1.wpa_supplicant1 is neither on the system bus nor one it can start); "+
				"NetworkManager agrees MACsec keys through it", "macsec0")
		// OpenShift Virtualization's VRF with a blackhole route in its table: the route goes
		// on the VRF's profile, which has no address.
		refused("vrf-blackhole", `{"interfaces":[{"name":"vrf9","type":"vrf","state":"up","vrf":{"route-table-id":100,"port":["eth3"]}}],
			"routes":{"config":[{"destination":"198.51.200.0/24","route-type":"blackhole","vrf-name":"vrf9"}]}}`,
			"routes.config[0].route-type: NetworkManager 1.42.4 on this node has no profiles with routes and no address "+
				"(NetworkManager 1.46 and later apply it)", "vrf9")
		// OpenShift's per-interface forwarding: ipv4.forwarding is 1.54's, and RHEL's builds'
		// that announce it; 1.42.4 announces nothing of the kind.
		refused("forwarding", `{"interfaces":[{"name":"fwd0","type":"dummy","state":"up","ipv4":{"enabled":true,"forwarding":true}}]}`,
			"interfaces[0].ipv4.forwarding: NetworkManager 1.42.4 on this node has no ipv4.forwarding "+
				"(NetworkManager 1.54 and later apply it, and builds that announce it)", "fwd0")
		// A port's forward error correction: NetworkManager's fec-mode is 1.52's.
		refused("fec", `{"interfaces":[{"name":"fec0","type":"dummy","state":"up","ethtool":{"fec":{"auto":false,"mode":"rs"}}}]}`,
			"interfaces[0].ethtool.fec: NetworkManager 1.42.4 on this node has no ethtool.fec-mode (NetworkManager 1.52 and later apply it)", "fec0")
	})

	It("re-applies the bridge and the mapping after a reboot", func() {
		Expect(stop()).To(Succeed())
		Expect(n.reboot(ctx)).To(Succeed())
		Expect(mappings()).To(Equal("physnet:br-ex"), "nm-overlay setup removed nmoverlay's mapping")
		Eventually(bridges, "20s", "250ms").Should(BeEmpty(), "NetworkManager removed the bridge whose profile went with the tmpfs layer")
		startHandler()
		Eventually(enactment("localnet"), "30s").Should(HavePrefix("Available boot-2"))
		Expect(bridges()).To(ConsistOf("ovs-br1"))
		Expect(mappings()).To(Equal("localnet2:ovs-br1,physnet:br-ex"))
	})

	It("removes a deleted policy's bridge and mapping, and only those", func() {
		Expect(k8s.Delete(ctx, &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "localnet"}})).To(Succeed())
		Eventually(enactment("localnet"), "30s").Should(Equal("<none>"))
		Eventually(bridges, "15s", "250ms").Should(BeEmpty())
		Expect(mappings()).To(Equal("physnet:br-ex"))
		Eventually(func() *state.OVN { return reported().OVN }, "20s", "250ms").Should(Equal(&state.OVN{BridgeMappings: []state.BridgeMapping{
			{Localnet: "physnet", Bridge: "br-ex"}}}))
	})
})
