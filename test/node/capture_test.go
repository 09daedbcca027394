//go:build node

package node_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
)

// OpenShift's "bridge on the NIC of the default route, keeping its address"
// (modules/virt-example-inherit-static-ip-from-nic.adoc), as written there.
var bridgeOnDefaultNIC = map[string]string{
	"default-gw":        `routes.running.destination=="0.0.0.0/0"`,
	"base-iface":        `interfaces.name==capture.default-gw.routes.running.0.next-hop-interface`,
	"base-iface-routes": `routes.running.next-hop-interface==capture.default-gw.routes.running.0.next-hop-interface`,
	"bridge-routes":     `capture.base-iface-routes | routes.running.next-hop-interface:="br1"`,
}

const bridgeOnDefaultNICState = `{"interfaces":[{"name":"br1","description":"Linux bridge with base interface as a port","type":"linux-bridge","state":"up",
	"ipv4":"{{ capture.base-iface.interfaces.0.ipv4 }}",
	"bridge":{"options":{"stp":{"enabled":false}},"port":[{"name":"{{ capture.base-iface.interfaces.0.name }}"}]}}],
	"routes":{"config":"{{ capture.bridge-routes.routes.running }}"}}`

// The handler process on a node, evaluating nmpolicy captures against the node's state:
// the node's only uplink (eth1, which carries the handler's own connection to the API
// server) moved into a bridge that keeps its address and routes.
var _ = Describe("the handler with captures", Ordered, func() {
	var (
		n   *processNode
		k8s client.Client
		ctx = context.Background()
	)
	run := func(name string, args ...string) string {
		out, err := n.Run(ctx, name, args...)
		Expect(err).NotTo(HaveOccurred(), "%s %v: %s", name, args, out)
		return out
	}
	create := func(name string, captures map[string]string, desired string) {
		GinkgoHelper()
		p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
		p.Spec.Capture, p.Spec.DesiredState = captures, shared.State{Raw: []byte(desired)}
		Expect(k8s.Create(ctx, p)).To(Succeed())
	}
	captureTimes := func(e *v1beta1.NodeNetworkConfigurationEnactment) map[string]string {
		t := map[string]string{}
		for name, c := range e.Status.CapturedStates {
			t[name] = c.MetaInfo.TimeStamp.String() + " " + string(c.State.Raw)
		}
		return t
	}
	onBridge := func() {
		GinkgoHelper()
		Expect(run("ip", "-4", "addr", "show", "br1")).To(ContainSubstring("192.0.2.20/24"), "br1 has eth1's address")
		Expect(run("ip", "-4", "addr", "show", "eth1")).NotTo(ContainSubstring("192.0.2.20"))
		Expect(run("ip", "-4", "route", "show", "default")).To(ContainSubstring("via 192.0.2.254 dev br1"))
		Expect(run("ip", "link", "show", "eth1")).To(ContainSubstring("master br1"))
		Expect(n.reachesAPI()).To(Succeed())
	}

	BeforeAll(func() {
		n = newProcessNode("capture")
		k8s = n.k8s
	})
	AfterEach(func() { n.printOnFailure() })

	It("puts the NIC of the default route into a bridge that keeps its address and routes; the node stays reachable", func() {
		create("br1-on-default-nic", bridgeOnDefaultNIC, bridgeOnDefaultNICState)
		Eventually(n.enactment("br1-on-default-nic"), "90s").Should(HavePrefix("Available boot-1"))
		onBridge()
		e := n.enactmentOf("br1-on-default-nic")
		Expect(e.Status.CapturedStates).To(HaveLen(4))
		Expect(string(e.Status.CapturedStates["base-iface"].State.Raw)).To(ContainSubstring(`"name":"eth1"`))
		Expect(e.Status.CapturedStates["base-iface"].MetaInfo.Version).NotTo(BeEmpty())
		Expect(string(e.Status.DesiredState.Raw)).To(SatisfyAll(ContainSubstring(`"port":[{"name":"eth1"}]`), Not(ContainSubstring("{{"))),
			"the enactment shows the desired state as rendered for this node")
	})

	It("applies a new generation with what it captured first, though the default route is now on br1", func() {
		before := captureTimes(n.enactmentOf("br1-on-default-nic"))
		n.killHandler() // and its memory: only the enactment remembers
		n.startHandler()
		p := &nmstatev1.NodeNetworkConfigurationPolicy{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "br1-on-default-nic"}, p)).To(Succeed())
		p.Spec.DesiredState.Raw = []byte(strings.Replace(bridgeOnDefaultNICState, `"state":"up",`, `"state":"up","mtu":1400,`, 1))
		Expect(k8s.Update(ctx, p)).To(Succeed())
		Eventually(func() int64 { return n.enactmentOf("br1-on-default-nic").Status.PolicyGeneration }, "60s").Should(Equal(p.Generation))
		Eventually(n.enactment("br1-on-default-nic"), "60s").Should(HavePrefix("Available boot-1"))
		Expect(run("ip", "link", "show", "br1")).To(ContainSubstring("mtu 1400"))
		onBridge()
		Expect(captureTimes(n.enactmentOf("br1-on-default-nic"))).To(Equal(before), "evaluated again, the capture would find br1 as its own port")
	})

	It("re-converges after a reboot to the bridge it captured", func() {
		before := captureTimes(n.enactmentOf("br1-on-default-nic"))
		n.killHandler()
		Expect(n.reboot(ctx)).To(Succeed())
		Eventually(func() string { out, _ := n.Run(ctx, "ip", "-4", "addr", "show", "eth1"); return out }, "15s").
			Should(ContainSubstring("192.0.2.20/24"), "after the reboot eth1 is on its persistent profile")
		n.startHandler()
		Eventually(n.enactment("br1-on-default-nic"), "90s").Should(HavePrefix("Available boot-2"))
		onBridge()
		Expect(captureTimes(n.enactmentOf("br1-on-default-nic"))).To(Equal(before))
	})

	It("fails a policy whose capture finds nothing, or whose reference finds nothing, naming where; the others stay", func() {
		create("cap-nothing", map[string]string{"net": `routes.running.destination=="203.0.113.0/24"`},
			`{"interfaces":[{"name":"{{ capture.net.routes.running.0.next-hop-interface }}","type":"ethernet","mtu":1400}]}`)
		create("cap-bad-ref", map[string]string{"bridge": `interfaces.name=="br1"`},
			`{"interfaces":[{"name":"br1","type":"linux-bridge","mtu":"{{ capture.bridge.interfaces.0.no-such-field }}"}]}`)
		Eventually(n.enactment("cap-nothing"), "30s").Should(SatisfyAll(HavePrefix("Failing"), HaveSuffix(
			`: spec.capture.net: no running route has destination == "203.0.113.0/24" (at character 1 of: routes.running.destination=="203.0.113.0/24")`)))
		Eventually(n.enactment("cap-bad-ref"), "30s").Should(SatisfyAll(HavePrefix("Failing"),
			ContainSubstring(`spec.desiredState.interfaces[0].mtu: capture.bridge.interfaces.0.no-such-field: no "no-such-field" in interfaces.0`)))
		Expect(n.enactment("br1-on-default-nic")()).To(HavePrefix("Available boot-2"))
		onBridge()
	})

	It("gives eth1 back to its persistent profile when the policy goes; the node stays reachable", func() {
		for _, name := range []string{"br1-on-default-nic", "cap-nothing", "cap-bad-ref"} {
			Expect(k8s.Delete(ctx, &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
		}
		Eventually(n.enactment("br1-on-default-nic"), "60s").Should(Equal("<none>"))
		Eventually(func() string { out, _ := n.Run(ctx, "ip", "-4", "addr", "show", "eth1"); return out }, "30s").Should(ContainSubstring("192.0.2.20/24"))
		Expect(run("ip", "-4", "route", "show", "default")).To(ContainSubstring("dev eth1"))
		Expect(n.reachesAPI()).To(Succeed())
	})
})
