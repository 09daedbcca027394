//go:build node

package node_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/networkmanager/nmdbus"
)

// The fault tier (make test-faults): each fault injected for real on a node-tier node
// whose handler runs as its own process (cmd/handler) on the node's NetworkManager,
// reaching the API server across the fabric. After each, the contract: the node runs the
// last committed state or the new one fully committed, the enactment says which, no
// checkpoint is left, nothing another tool made is touched.
var _ = Describe("faults", Label("faults"), Ordered, func() {
	const (
		nodeName     = "faulty"
		probeTimeout = 15 * time.Second // outlasts a NetworkManager restart
		// lateGateway answers pings only once a spec adds it to the fabric: a change that
		// points the default route at it keeps its probes running as long as a spec needs.
		lateGateway = "192.0.2.253"
		badGateway  = "192.0.2.99" // never answers
	)
	var (
		n   *processNode
		k8s client.Client
		ctx = context.Background()
	)
	startHandler := func() { n.startHandler() }
	killHandler := func() { n.killHandler() }
	restartNM := func() {
		GinkgoHelper()
		n.StopNM()
		Expect(n.StartNM(ctx, n.layout.NMEnvFile())).To(Succeed())
	}
	enactment := func(policy string) func() string { return n.enactment(policy) }
	create := func(name, desired string) { n.create(name, desired) }
	remove := func(name string) {
		GinkgoHelper()
		Expect(k8s.Delete(ctx, &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
		Eventually(enactment(name), "30s").Should(Equal("<none>"))
	}
	// A second default route, preferred (metric 50) over the uplink policy's.
	defaultVia := func(gw string) string {
		return `{"routes":{"config":[{"destination":"0.0.0.0/0","next-hop-address":"` + gw + `","next-hop-interface":"eth1","metric":50}]}}`
	}
	routes := func() string {
		out, _ := n.Run(ctx, "ip", "-4", "route", "show", "default")
		return out
	}
	upper := func() string {
		out, _ := n.Run(ctx, "sh", "-c", "cat "+n.layout.Upper()+"/*.nmconnection 2>/dev/null")
		return out
	}
	nnsDrift := func() []string {
		nns := &v1beta1.NodeNetworkState{}
		_ = k8s.Get(ctx, client.ObjectKey{Name: nodeName}, nns)
		return nns.Status.Drift
	}
	// bus is a connection to the node's NetworkManager, as another tool would have.
	bus := func() *dbus.Conn {
		GinkgoHelper()
		conn, err := dbus.Connect(n.BusAddress())
		Expect(err).NotTo(HaveOccurred())
		return conn
	}
	nmObj := func(conn *dbus.Conn) dbus.BusObject {
		return conn.Object(nmdbus.BusName, nmdbus.Path)
	}
	checkpoints := func() []dbus.ObjectPath {
		conn, err := dbus.Connect(n.BusAddress())
		if err != nil {
			return []dbus.ObjectPath{"<no bus>"}
		}
		defer conn.Close()
		v, err := nmObj(conn).GetProperty(nmdbus.Iface + ".Checkpoints")
		if err != nil {
			return []dbus.ObjectPath{"<NetworkManager not answering>"}
		}
		cps, _ := v.Value().([]dbus.ObjectPath)
		return cps
	}
	// noCheckpointLeft: the transaction ended, and the engine's note of it too.
	noCheckpointLeft := func() {
		GinkgoHelper()
		Eventually(checkpoints, "10s").Should(BeEmpty(), "a NetworkManager checkpoint is left")
		_, err := os.Stat(n.PathInNode(n.layout.CheckpointRecord()))
		Expect(os.IsNotExist(err)).To(BeTrue(), "the engine's checkpoint note is left: %v", err)
	}
	// applying waits until the handler's transaction is open and the change is live, and
	// checks that it stays open: the probes are running, and the fault lands among them.
	applying := func(gw string) {
		GinkgoHelper()
		Eventually(checkpoints, "30s", "20ms").ShouldNot(BeEmpty(), "the handler opened no checkpoint")
		Eventually(routes, "10s", "20ms").Should(ContainSubstring("via "+gw), "the change is not live")
		Consistently(checkpoints, "1s", "50ms").ShouldNot(BeEmpty(), "the transaction ended before the fault")
	}
	lateGatewayUp := func(up bool) {
		GinkgoHelper()
		op := "del"
		if up {
			op = "add"
		}
		out, err := exec.Command("ip", "-n", n.fabric, "addr", op, lateGateway+"/24", "dev", "gw0").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		if !up { // nor may the node's neighbour table remember it
			_, _ = n.Run(ctx, "ip", "neigh", "flush", "to", lateGateway)
		}
	}

	BeforeAll(func() {
		n = newProcessNode(nodeName, "--probe-timeout", probeTimeout.String())
		k8s = n.k8s
		// The committed state every fault must leave intact or replace entirely.
		create("uplink", `{"interfaces":[{"name":"eth1","type":"ethernet","state":"up","ipv4":{"enabled":true,"address":[{"ip":"192.0.2.10","prefix-length":24}]}}],
			"routes":{"config":[{"destination":"0.0.0.0/0","next-hop-address":"192.0.2.254","next-hop-interface":"eth1","metric":100}]}}`)
		Eventually(enactment("uplink"), "60s").Should(HavePrefix("Available"))
	})
	AfterEach(func() { n.printOnFailure() })
	// onLastCommitted: the node runs the uplink policy alone.
	onLastCommitted := func(gone string) {
		GinkgoHelper()
		Expect(routes()).To(SatisfyAll(ContainSubstring("via 192.0.2.254"), Not(ContainSubstring("via "+gone))))
		Expect(upper()).NotTo(ContainSubstring(gone), "the change is still in the tmpfs layer")
		Expect(enactment("uplink")()).To(HavePrefix("Available"))
		noCheckpointLeft()
	}

	It("NetworkManager restarts during the probes of a change that breaks the gateway: the last committed state is restored", func() {
		create("bad-gateway", defaultVia(badGateway))
		applying(badGateway)
		start := time.Now()
		restartNM() // checkpoints do not survive it; the profile in tmpfs comes back with it
		Eventually(enactment("bad-gateway"), probeTimeout+20*time.Second).Should(SatisfyAll(
			HavePrefix("Failing"), ContainSubstring("probe default-gateway failed"),
			ContainSubstring("checkpoint lost"), ContainSubstring("restored the last committed state")))
		GinkgoWriter.Println("truthful status", time.Since(start).Round(100*time.Millisecond), "after NetworkManager restarted")
		onLastCommitted(badGateway)
		// The retry keeps the gateway probe even though it fails before the apply: it was
		// healthy before our own change broke it. Never Available on a broken gateway.
		Consistently(enactment("bad-gateway"), "5s").Should(HavePrefix("Failing"))
		remove("bad-gateway")
		onLastCommitted(badGateway)
	})

	It("NetworkManager restarts during the probes of a good change: the change is committed, and said so", func() {
		DeferCleanup(lateGatewayUp, false)
		create("late-gateway", defaultVia(lateGateway))
		applying(lateGateway)
		restartNM()
		lateGatewayUp(true) // the probes pass now
		Eventually(enactment("late-gateway"), probeTimeout+20*time.Second).Should(HavePrefix("Available"))
		Expect(n.handlerLog()).To(ContainSubstring("checkpoint lost, but the change is fully in effect: committed"))
		Expect(routes()).To(ContainSubstring("via " + lateGateway))
		Expect(upper()).To(ContainSubstring(lateGateway))
		noCheckpointLeft()
		remove("late-gateway")
		onLastCommitted(lateGateway)
	})

	It("the handler is killed between apply and commit: its successor rolls its checkpoint back at once and applies again", func() {
		DeferCleanup(lateGatewayUp, false)
		create("killed", defaultVia(lateGateway))
		applying(lateGateway)
		killHandler()
		lateGatewayUp(true)
		start := time.Now()
		startHandler()
		// Without its note of the checkpoint the new handler would take it for another
		// tool's and wait out its rollback timeout (over a minute).
		Eventually(enactment("killed"), probeTimeout+20*time.Second).Should(HavePrefix("Available"))
		GinkgoWriter.Println("committed", time.Since(start).Round(100*time.Millisecond), "after the new handler started")
		Expect(routes()).To(ContainSubstring("via " + lateGateway))
		noCheckpointLeft()
		Expect(n.handlerLog()).NotTo(ContainSubstring("another tool holds"))
		remove("killed")
		onLastCommitted(lateGateway)
	})

	It("another tool holds a checkpoint: the handler waits and says so, never rolls it back, then applies", func() {
		conn := bus()
		defer conn.Close()
		var theirs dbus.ObjectPath
		Expect(nmObj(conn).Call(nmdbus.Iface+".CheckpointCreate", 0, []dbus.ObjectPath{}, uint32(300), uint32(0)).Store(&theirs)).To(Succeed())
		DeferCleanup(func() { _ = nmObj(conn).Call(nmdbus.Iface+".CheckpointDestroy", 0, theirs).Err })
		// Their change inside their transaction.
		_, err := n.Run(ctx, "nmcli", "con", "add", "type", "bridge", "con-name", "br-tool", "ifname", "br-tool",
			"ipv4.method", "disabled", "ipv6.method", "disabled")
		Expect(err).NotTo(HaveOccurred())

		create("waits", `{"interfaces":[{"name":"br-waits","type":"linux-bridge","state":"up","bridge":{"options":{"stp":{"enabled":false}}}}]}`)
		Eventually(enactment("waits"), "20s").Should(SatisfyAll(HavePrefix("Progressing"),
			ContainSubstring("another tool holds NetworkManager checkpoint "+string(theirs))))
		Consistently(checkpoints, "3s").Should(Equal([]dbus.ObjectPath{theirs}), "their checkpoint was touched")

		// They commit; the handler goes on.
		Expect(nmObj(conn).Call(nmdbus.Iface+".CheckpointDestroy", 0, theirs).Err).To(Succeed())
		Eventually(enactment("waits"), "20s").Should(HavePrefix("Available"))
		out, err := n.Run(ctx, "nmcli", "-g", "connection.id", "con", "show", "br-tool")
		Expect(err).NotTo(HaveOccurred(), "their bridge is gone")
		Expect(out).To(ContainSubstring("br-tool"))
		noCheckpointLeft()
		remove("waits")
		_, _ = n.Run(ctx, "nmcli", "con", "del", "br-tool")
	})

	It("NetworkManager is killed (SIGKILL) mid-apply: the enactment says what the node runs", func() {
		DeferCleanup(lateGatewayUp, false)
		create("nm-killed", defaultVia(lateGateway))
		applying(lateGateway)
		Expect(syscall.Kill(n.NMPID(), syscall.SIGKILL)).To(Succeed())
		restartNM() // as systemd's Restart=on-failure would
		lateGatewayUp(true)
		Eventually(enactment("nm-killed"), probeTimeout+30*time.Second).Should(Or(HavePrefix("Available"), HavePrefix("Failing")))
		Eventually(checkpoints, "10s").Should(BeEmpty())
		if e := enactment("nm-killed")(); strings.HasPrefix(e, "Available") {
			Expect(routes()).To(ContainSubstring("via " + lateGateway))
		} else {
			onLastCommitted(lateGateway)
		}
		noCheckpointLeft()
		remove("nm-killed")
		onLastCommitted(lateGateway)
	})

	It("the API server is unreachable for 90 s during an apply: committed or rolled back, and said so once it is back", func() {
		drop := func(op string) error {
			out, err := exec.Command("ip", "netns", "exec", n.fabric, "iptables", op, "INPUT", "-p", "tcp", "--dport", "6443", "-j", "DROP").CombinedOutput()
			if err != nil {
				return fmt.Errorf("iptables %s: %v: %s", op, err, out)
			}
			return nil
		}
		// The change points the default route at the late gateway: its probes wait on it,
		// so the API server is dropped while they run, whatever the machine's speed; then
		// the gateway answers and only the API-server and Node-Ready probes fail.
		DeferCleanup(lateGatewayUp, false)
		create("cut-off", defaultVia(lateGateway))
		applying(lateGateway)
		Expect(drop("-I")).To(Succeed())
		DeferCleanup(func() { _ = drop("-D") })
		lateGatewayUp(true)
		time.Sleep(90 * time.Second)
		// Either every probe passed once (the API-server probe may have before the drop:
		// they run at once) and the change is committed, or they rolled it back. Either
		// way no transaction is left open, and once the API server is back the enactment
		// says which.
		committed := strings.Contains(routes(), "via "+lateGateway)
		noCheckpointLeft()
		Expect(drop("-D")).To(Succeed())
		back := time.Now()
		if committed {
			Eventually(enactment("cut-off"), probeTimeout).Should(HavePrefix("Available"))
		} else {
			Eventually(enactment("cut-off"), probeTimeout).Should(Or(
				SatisfyAll(HavePrefix("Failing"), MatchRegexp(`probe (api-server|node-ready) failed`), ContainSubstring("rolled back")),
				HavePrefix("Available")))
		}
		GinkgoWriter.Println("committed while dropped:", committed, "; truthful status", time.Since(back).Round(100*time.Millisecond), "after the API server was back:", enactment("cut-off")())
		Eventually(enactment("cut-off"), "90s").Should(HavePrefix("Available"))
		GinkgoWriter.Println("Available", time.Since(back).Round(100*time.Millisecond), "after the API server was back")
		Expect(routes()).To(ContainSubstring("via " + lateGateway))
		noCheckpointLeft()
		remove("cut-off")
	})

	It("drift: a change outside nmoverlay is reported at once, and undone once the policy opts in", func() {
		create("drifty", `{"interfaces":[{"name":"br-drift","type":"linux-bridge","state":"up","bridge":{"options":{"stp":{"enabled":false}}},
			"ipv4":{"enabled":true,"address":[{"ip":"198.51.100.1","prefix-length":24}]}}]}`)
		Eventually(enactment("drifty"), "30s").Should(HavePrefix("Available"))
		brAddr := func() string { out, _ := n.Run(ctx, "ip", "-4", "addr", "show", "br-drift"); return out }
		Expect(brAddr()).To(ContainSubstring("198.51.100.1/24"))

		_, err := n.Run(ctx, "ip", "addr", "del", "198.51.100.1/24", "dev", "br-drift")
		Expect(err).NotTo(HaveOccurred())
		start := time.Now()
		Eventually(enactment("drifty"), "5s", "50ms").Should(SatisfyAll(HavePrefix("Failing"),
			ContainSubstring("changed outside nmoverlay"), ContainSubstring("198.51.100.1/24")))
		GinkgoWriter.Println("drift on the enactment", time.Since(start).Round(10*time.Millisecond), "after ip addr del")
		Eventually(nnsDrift, "10s", "50ms").Should(ContainElement(HavePrefix("drifty: changed outside nmoverlay")))
		GinkgoWriter.Println("drift on the NodeNetworkState", time.Since(start).Round(10*time.Millisecond), "after ip addr del")
		Expect(n.handlerMetric(`nmoverlay_drift_total{action="reported"}`)).To(BeNumerically(">=", 1))
		Consistently(brAddr, "2s").ShouldNot(ContainSubstring("198.51.100.1/24"), "undone without the policy opting in")
		Expect(enactment("uplink")()).To(HavePrefix("Available"), "another policy's enactment is not touched")

		// The policy opts in; the next change outside nmoverlay is undone.
		p := &nmstatev1.NodeNetworkConfigurationPolicy{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "drifty"}, p)).To(Succeed())
		p.Annotations = map[string]string{"nmoverlay.io/drift": "reapply"}
		Expect(k8s.Update(ctx, p)).To(Succeed())
		_, err = n.Run(ctx, "nmcli", "con", "down", "br-drift")
		Expect(err).NotTo(HaveOccurred())
		start = time.Now()
		Eventually(brAddr, "15s", "50ms").Should(ContainSubstring("198.51.100.1/24"))
		GinkgoWriter.Println("re-applied", time.Since(start).Round(10*time.Millisecond), "after nmcli con down")
		Eventually(enactment("drifty"), "10s").Should(HavePrefix("Available"))
		Eventually(nnsDrift, "15s").Should(BeEmpty())
		noCheckpointLeft()
		remove("drifty")
	})

	It("a file is written into the persistent dir while the overlay is mounted: reported at once, policies refused", func() {
		stray := filepath.Join(n.Lower(), "stray.nmconnection")
		Expect(os.WriteFile(stray, []byte("[connection]\nid=stray\ntype=ethernet\n"), 0o600)).To(Succeed())
		DeferCleanup(func() { _ = os.Remove(stray) })
		start := time.Now()
		Eventually(func() string {
			nns := &v1beta1.NodeNetworkState{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: nodeName}, nns); err != nil || nns.Status.Overlay == nil {
				return ""
			}
			return nns.Status.Overlay.Degraded
		}, "10s", "100ms").Should(ContainSubstring("added stray.nmconnection"))
		GinkgoWriter.Println("on NodeNetworkState", time.Since(start).Round(100*time.Millisecond), "after the write")
		Expect(n.handlerMetric("nmoverlay_overlay_degraded")).To(Equal(1.0))
		create("refused", `{"interfaces":[{"name":"br-refused","type":"linux-bridge","state":"up"}]}`)
		Eventually(enactment("refused"), "20s").Should(SatisfyAll(HavePrefix("Failing"), ContainSubstring("written while the overlay was mounted")))
		out, _ := n.Run(ctx, "ip", "link", "show", "br-refused")
		Expect(out).To(BeEmpty(), "a refused policy was applied")

		// Gone again: the node takes policies again.
		Expect(os.Remove(stray)).To(Succeed())
		Eventually(func() (float64, error) { return n.handlerMetric("nmoverlay_overlay_degraded") }, "10s").Should(Equal(0.0))
		remove("refused")
		Eventually(enactment("uplink"), "20s").Should(HavePrefix("Available"))
	})

	It("the tmpfs layer is full: a clean error, everything rolled back", func() {
		// Shrink the tmpfs the upper dir lives on (the node's /run) to what it holds plus
		// three pages: the engine's checkpoint note fits, the policy's profiles do not.
		_, err := n.Run(ctx, "sh", "-c", `mount -o remount,size=$(( $(df --output=used -B4096 /run | tail -1) * 4096 + 12288 )) /run`)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _, _ = n.Run(ctx, "mount", "-o", "remount,size=64m", "/run") })
		var bridges []string
		for _, b := range []string{"br-nospace0", "br-nospace1", "br-nospace2", "br-nospace3"} {
			bridges = append(bridges, `{"name":"`+b+`","type":"linux-bridge","state":"up"}`)
		}
		create("no-space", `{"interfaces":[`+strings.Join(bridges, ",")+`]}`)
		Eventually(enactment("no-space"), "30s").Should(SatisfyAll(HavePrefix("Failing"), MatchRegexp(`(?i)no space left|ENOSPC`)))
		out, _ := n.Run(ctx, "ip", "-br", "link")
		Expect(out).NotTo(ContainSubstring("br-nospace"), "a bridge of the failed policy is left")
		onLastCommitted("br-nospace")
		remove("no-space")
	})
})
