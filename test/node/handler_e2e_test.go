//go:build node

package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nmoverlay/nmoverlay/api"
	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/overlay"
	"github.com/nmoverlay/nmoverlay/reconciler/networkmanager"
	"github.com/nmoverlay/nmoverlay/reconciler/node"
	"github.com/nmoverlay/nmoverlay/reconciler/probe"
	"github.com/nmoverlay/nmoverlay/reconciler/state"
	"github.com/nmoverlay/nmoverlay/test/nmhost"
)

// inNetNS runs fn on a thread that joined the network namespace at path; the thread is
// thrown away afterwards (never unlocked), so no other goroutine runs there.
func inNetNS(path string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			err = unix.Setns(fd, unix.CLONE_NEWNET)
			unix.Close(fd)
		}
		if err != nil {
			errc <- err
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// The handler against a real NetworkManager on an overlay node and a real API server: a
// policy lands in the tmpfs layer, a policy that breaks the gateway is rolled back, a
// reboot re-converges, a deleted policy's change is gone.
var _ = Describe("the handler on a real node", Ordered, func() {
	var (
		n      *nmhost.Node
		env    *envtest.Environment
		k8s    client.Client
		ctx    = context.Background()
		layout = overlay.DefaultLayout()
		fabric = fmt.Sprintf("nmfabric-%d", os.Getpid())
		mu     sync.Mutex
		boot   = "boot-1"
		stop   context.CancelFunc
		done   chan struct{}
	)
	startHandler := func() {
		nm, err := networkmanager.Connect(ctx, n.BusAddress())
		Expect(err).NotTo(HaveOccurred())
		skip := true // a restarted handler (the reboot) registers its controller again in this process
		mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: k8s.Scheme(), Cache: node.CacheOptions("e2e"),
			Metrics: metricsserver.Options{BindAddress: "0"}, Controller: config.Controller{SkipNameValidation: &skip}})
		Expect(err).NotTo(HaveOccurred())
		gateway := probe.Ping("default-gateway", func(ctx context.Context) (netip.Addr, error) {
			s, err := nm.Show(ctx)
			return state.DefaultGateway(s), err
		})
		h := &node.Handler{Client: mgr.GetClient(), NodeName: "e2e", Engine: node.NetworkManager{Client: nm, Options: networkmanager.ApplyOptions{RollbackTimeout: 30 * time.Second}}, APIReader: mgr.GetAPIReader(),
			BootID: func() (string, error) { mu.Lock(); defer mu.Unlock(); return boot, nil },
			Degraded: func() (string, error) {
				b, err := os.ReadFile(n.PathInNode(layout.DegradedMarker()))
				if os.IsNotExist(err) {
					return "", nil
				}
				return string(b), err
			},
			// The gateway is pinged from inside the node's network namespace.
			Probes: probe.Set{Timeout: 3 * time.Second, Probes: []probe.Probe{
				probe.Func{ProbeName: "default-gateway", Fn: func(ctx context.Context) error {
					return inNetNS(n.NetNSPath(), func() error { return gateway.Check(ctx) })
				}},
				probe.APIServer(env.Config),
				probe.NodeReady(mgr.GetAPIReader(), "e2e"),
			}},
		}
		Expect(h.SetupWithManager(mgr)).To(Succeed())
		var hctx context.Context
		hctx, stop = context.WithCancel(ctx)
		done = make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			defer nm.Close()
			Expect(mgr.Start(hctx)).To(Succeed())
		}()
	}
	stopHandler := func() { stop(); <-done }
	bootNode := func() {
		Expect(n.Boot(ctx)).To(Succeed())
		out, err := n.Run(ctx, helper, "setup")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(n.StartNM(ctx, layout.NMEnvFile())).To(Succeed(), n.NMLog())
	}
	enactment := func(policy string) func() string {
		return func() string {
			e := &v1beta1.NodeNetworkConfigurationEnactment{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: "e2e." + policy}, e); err != nil {
				return "<none>"
			}
			for _, c := range e.Status.Conditions {
				if c.Status == metav1.ConditionTrue {
					return c.Type + " " + e.Status.BootID + ": " + c.Message
				}
			}
			return "<no condition>"
		}
	}
	addrs := func() string {
		out, _ := n.Run(ctx, "ip", "-4", "addr", "show", "eth1")
		return out
	}
	create := func(name, desired string) {
		p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
		p.Spec.DesiredState = shared.State{Raw: []byte(desired)}
		Expect(k8s.Create(ctx, p)).To(Succeed())
	}

	BeforeAll(func() {
		Expect(os.Getenv("KUBEBUILDER_ASSETS")).NotTo(BeEmpty(), "KUBEBUILDER_ASSETS is unset: run make test-node")
		env = &envtest.Environment{CRDDirectoryPaths: []string{"../../deploy/crds"}, ErrorIfCRDPathMissing: true}
		cfg, err := env.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(env.Stop)
		scheme, err := api.NewScheme()
		Expect(err).NotTo(HaveOccurred())
		k8s, err = client.New(cfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		nodeObj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "e2e"}}
		Expect(k8s.Create(ctx, nodeObj)).To(Succeed())
		nodeObj.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		Expect(k8s.Status().Update(ctx, nodeObj)).To(Succeed())

		// The fabric: the node's eth1 is cabled to a gateway at 192.0.2.254.
		Expect(exec.Command("ip", "netns", "add", fabric).Run()).To(Succeed())
		DeferCleanup(func() { _ = exec.Command("ip", "netns", "del", fabric).Run() })
		n, err = nmhost.New("e2e")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(n.Close)
		Expect(os.WriteFile(filepath.Join(n.ConfD(), overlay.KeyfileDropIn), []byte(layout.KeyfileDropInContent()), 0o644)).To(Succeed())
		// eth1's persistent profile, as MCO wrote it: address .20, gateway .254.
		Expect(os.WriteFile(filepath.Join(n.Lower(), "eth1-persistent.nmconnection"), []byte(
			"[connection]\nid=eth1-persistent\nuuid=22222222-3333-4444-8555-666666666666\ntype=ethernet\ninterface-name=eth1\n\n"+
				"[ipv4]\nmethod=manual\naddress1=192.0.2.20/24,192.0.2.254\n\n[ipv6]\nmethod=disabled\n"), 0o600)).To(Succeed())
		tmpfiles := filepath.Join(n.Dir, "tmpfiles.conf")
		Expect(os.WriteFile(tmpfiles, []byte(layout.TmpfilesContent()), 0o644)).To(Succeed())
		n.BootSetup = func(n *nmhost.Node) error {
			// The old cable may outlive the previous boot's namespace for a moment.
			_ = exec.Command("ip", "-n", fabric, "link", "del", "gw0").Run()
			for _, args := range [][]string{
				{"-n", fabric, "link", "add", "gw0", "type", "veth", "peer", "name", "eth1", "netns", strconv.Itoa(n.PID())},
				{"-n", fabric, "addr", "add", "192.0.2.254/24", "dev", "gw0"},
				{"-n", fabric, "link", "set", "gw0", "up"},
			} {
				if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
					return fmt.Errorf("ip %v: %v: %s", args, err, out)
				}
			}
			_, err := n.Run(ctx, "systemd-tmpfiles", "--create", tmpfiles)
			return err
		}
		bootNode()
		startHandler()
		DeferCleanup(func() { stopHandler() })
	})
	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Println(n.NMLog())
		}
	})

	It("applies a policy; its profile lives only in the tmpfs layer", func() {
		create("uplink", `{"interfaces":[{"name":"eth1","type":"ethernet","state":"up","ipv4":{"enabled":true,"address":[{"ip":"192.0.2.10","prefix-length":24}]}}],
			"routes":{"config":[{"destination":"0.0.0.0/0","next-hop-address":"192.0.2.254","next-hop-interface":"eth1","metric":100}]}}`)
		Eventually(enactment("uplink"), "30s").Should(HavePrefix("Available boot-1"))
		Expect(addrs()).To(ContainSubstring("192.0.2.10/24"))
		entries, _ := os.ReadDir(n.Lower())
		Expect(entries).To(HaveLen(1), "nothing added to the persistent dir")
		Expect(addrs()).NotTo(ContainSubstring("192.0.2.20/"), "the policy's profile took the interface")
		out, err := n.Run(ctx, helper, "status", "-o", "json")
		Expect(err).NotTo(HaveOccurred())
		var changes []overlay.ProfileChange
		Expect(json.Unmarshal([]byte(out), &changes)).To(Succeed())
		Expect(changes).To(ContainElement(SatisfyAll(HaveField("Interface", "eth1"), HaveField("Change", overlay.Added))))
	})

	It("rolls back a policy that takes the default gateway away", func() {
		create("bad-gateway", `{"routes":{"config":[{"destination":"0.0.0.0/0","next-hop-address":"192.0.2.99","next-hop-interface":"eth1","metric":10}]}}`)
		Eventually(enactment("bad-gateway"), "60s").Should(SatisfyAll(HavePrefix("Failing"), ContainSubstring("probe default-gateway failed")))
		Expect(enactment("uplink")()).To(HavePrefix("Available boot-1"), "a policy already in effect stays so")
		Eventually(func() string { out, _ := n.Run(ctx, "ip", "-4", "route"); return out }, "15s").Should(
			SatisfyAll(ContainSubstring("default via 192.0.2.254"), Not(ContainSubstring("192.0.2.99"))))
		Expect(k8s.Delete(ctx, &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "bad-gateway"}})).To(Succeed())
		Eventually(enactment("uplink"), "30s").Should(HavePrefix("Available"))
	})

	It("re-converges after a reboot", func() {
		stopHandler()
		n.Shutdown()
		bootNode()
		Expect(addrs()).NotTo(ContainSubstring("192.0.2.10"), "the tmpfs layer is gone after the reboot")
		Eventually(addrs, "15s").Should(ContainSubstring("192.0.2.20/24"), "the persistent profile is back")
		mu.Lock()
		boot = "boot-2"
		mu.Unlock()
		startHandler()
		Eventually(enactment("uplink"), "30s").Should(HavePrefix("Available boot-2"))
		Expect(addrs()).To(ContainSubstring("192.0.2.10/24"))
	})

	It("removes a deleted policy's change: the node is back on its persistent configuration", func() {
		Expect(k8s.Delete(ctx, &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "uplink"}})).To(Succeed())
		Eventually(enactment("uplink"), "30s").Should(Equal("<none>"))
		Eventually(addrs, "15s").Should(SatisfyAll(ContainSubstring("192.0.2.20/24"), Not(ContainSubstring("192.0.2.10"))),
			"eth1 is back on its persistent profile")
		out, err := n.Run(ctx, helper, "status")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).NotTo(ContainSubstring("eth1"))
	})
})
