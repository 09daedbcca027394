//go:build boot

package boot_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nmoverlay/nmoverlay/api"
	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/overlay"
	"github.com/nmoverlay/nmoverlay/test/fabric"
	"github.com/nmoverlay/nmoverlay/test/nspawn"
)

// handlerUnit runs the handler on the node as the DaemonSet's pod would: after
// NetworkManager, with the node's name, restarted when it fails.
const handlerUnit = `[Unit]
Description=nmoverlay handler (stands in for the DaemonSet pod)
Wants=NetworkManager.service
After=NetworkManager.service nm-overlay.service

[Service]
ExecStart=/usr/local/bin/nmoverlay-handler --node %s --kubeconfig /etc/nmoverlay-test/kubeconfig --metrics-bind-address 0 --health-probe-bind-address 0
Restart=always
RestartSec=1

[Install]
WantedBy=multi-user.target
`

// nic is the node's uplink, a veth moved into the machine at each boot.
const nic = "bn1"

const nicProfile = `[connection]
id=bn1-persistent
uuid=22222222-3333-4444-8555-666666666666
type=ethernet
interface-name=bn1

[ipv4]
method=manual
address1=192.0.2.20/24,192.0.2.254

[ipv6]
method=disabled
`

// The handler on a systemd node: booted by systemd-nspawn with the MachineConfig, the
// helper and the handler as a unit, its bn1 cabled to a fabric where the API server is.
// A policy lands in the tmpfs layer; a reboot (systemd's, with a new boot ID) drops it,
// and the handler puts it back.
var _ = Describe("the handler on a systemd node", Ordered, func() {
	const nodeName = "hnode"
	var (
		m   *nspawn.Machine
		k8s client.Client
		ctx = context.Background()
	)
	enactment := func() (string, string) {
		e := &v1beta1.NodeNetworkConfigurationEnactment{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: nodeName + ".boot-uplink"}, e); err != nil {
			return "<none>", ""
		}
		for _, c := range e.Status.Conditions {
			if c.Status == metav1.ConditionTrue {
				return c.Type, e.Status.BootID
			}
		}
		return "<no condition>", e.Status.BootID
	}
	available := func() string {
		t, boot := enactment()
		if t != shared.EnactmentAvailable {
			return ""
		}
		return boot
	}
	ip := func(args ...string) {
		out, err := exec.Command("ip", args...).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "ip %v: %s", args, out)
	}

	BeforeAll(func() {
		assets := os.Getenv("KUBEBUILDER_ASSETS")
		Expect(assets).NotTo(BeEmpty(), "KUBEBUILDER_ASSETS is unset: run make test-boot")
		dir := GinkgoT().TempDir()
		handlerBin := filepath.Join(dir, "handler")
		build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", handlerBin, "github.com/nmoverlay/nmoverlay/cmd/handler")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))

		env := &envtest.Environment{CRDDirectoryPaths: []string{"../../deploy/crds"}, ErrorIfCRDPathMissing: true}
		cfg, err := env.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(env.Stop)
		scheme, err := api.NewScheme()
		Expect(err).NotTo(HaveOccurred())
		k8s, err = client.New(cfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
		Expect(k8s.Create(ctx, n)).To(Succeed())
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		Expect(k8s.Status().Update(ctx, n)).To(Succeed())

		// The fabric; at each boot the node's NIC is cabled to its gateway.
		fab := fmt.Sprintf("bfab-%d", os.Getpid())
		ip("netns", "add", fab)
		DeferCleanup(func() {
			_ = exec.Command("ip", "netns", "del", fab).Run()
			_ = exec.Command("ip", "link", "del", nic).Run()
		})
		ip("-n", fab, "link", "set", "lo", "up")
		stop, err := fabric.ServeAPI(fab, cfg.Host)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)

		m = newNode(nodeName)
		// Its test NIC's profile is on the fabric's subnet: this node has the uplink instead.
		Expect(os.Remove(filepath.Join(m.Root, overlay.NMDefaultKeyfile, "persist0.nmconnection"))).To(Succeed())
		m.Interfaces = []string{nic}
		m.BeforeBoot = func() error {
			_ = exec.Command("ip", "-n", fab, "link", "del", "gw0").Run() // the previous boot's cable
			_ = exec.Command("ip", "link", "del", nic).Run()              // a cable never plugged in
			for _, args := range [][]string{
				{"link", "add", nic, "type", "veth", "peer", "name", "gw0", "netns", fab},
				{"-n", fab, "addr", "add", fabric.Gateway + "/24", "dev", "gw0"},
				{"-n", fab, "link", "set", "gw0", "up"},
			} {
				if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
					return fmt.Errorf("ip %v: %v: %s", args, err, out)
				}
			}
			return nil
		}
		writeFile(m, filepath.Join(overlay.NMDefaultKeyfile, "bn1-persistent.nmconnection"), nicProfile, 0o600)
		// NetworkManager leaves veth devices to whoever made them (its udev rules); bn1
		// stands in for a real NIC here.
		writeFile(m, "/etc/NetworkManager/conf.d/50-test-"+nic+".conf", "[device-test-uplink]\nmatch-device=interface-name:"+nic+"\nmanaged=1\n", 0o644)
		applyMachineConfig(m, true)
		b, err := os.ReadFile(handlerBin)
		Expect(err).NotTo(HaveOccurred())
		writeFile(m, "/usr/local/bin/nmoverlay-handler", string(b), 0o755)
		Expect(fabric.Kubeconfig(env, "nmoverlay-handler", filepath.Join(dir, "kubeconfig"))).To(Succeed())
		kc, err := os.ReadFile(filepath.Join(dir, "kubeconfig"))
		Expect(err).NotTo(HaveOccurred())
		writeFile(m, "/etc/nmoverlay-test/kubeconfig", string(kc), 0o600)
		writeFile(m, "/etc/systemd/system/nmoverlay-handler.service", fmt.Sprintf(handlerUnit, nodeName), 0o644)
		Expect(os.MkdirAll(filepath.Join(m.Root, "/etc/systemd/system/multi-user.target.wants"), 0o755)).To(Succeed())
		Expect(os.Symlink("/etc/systemd/system/nmoverlay-handler.service",
			filepath.Join(m.Root, "/etc/systemd/system/multi-user.target.wants/nmoverlay-handler.service"))).To(Succeed())
		Expect(m.Boot(ctx)).To(Succeed())
	})
	AfterEach(func() {
		if CurrentSpecReport().Failed() && m != nil {
			for _, args := range [][]string{{"ip", "addr"}, {"ip", "route"}, {"nmcli", "device"}, {"nmcli", "-f", "NAME,DEVICE,FILENAME", "connection", "show"},
				{"journalctl", "-b", "-u", "nmoverlay-handler", "--no-pager", "-n", "30"}, {"journalctl", "-b", "-u", "NetworkManager", "--no-pager", "-n", "40"}} {
				out, _ := m.Exec(ctx, args[0], args[1:]...)
				GinkgoWriter.Printf("$ %v\n%s\n", args, out)
			}
		}
	})

	It("applies a policy; its profile lives only in the node's tmpfs layer", func() {
		p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "boot-uplink"}}
		p.Spec.DesiredState = shared.State{Raw: []byte(`{"interfaces":[{"name":"bn1","type":"ethernet","state":"up",
			"ipv4":{"enabled":true,"address":[{"ip":"192.0.2.10","prefix-length":24}]}}],
			"routes":{"config":[{"destination":"0.0.0.0/0","next-hop-address":"192.0.2.254","next-hop-interface":"bn1"}]}}`)}
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Eventually(available, "90s").ShouldNot(BeEmpty())
		bootID := run(m, "cat", "/proc/sys/kernel/random/boot_id")
		Expect(available()).To(Equal(bootID), "the enactment records the node's boot")
		Expect(run(m, "ip", "-4", "-o", "addr", "show", "bn1")).To(ContainSubstring("192.0.2.10/24"))
		Expect(run(m, "ls", layout.Upper())).To(ContainSubstring(".nmconnection"))
		Expect(run(m, "ls", overlay.NMDefaultKeyfile)).NotTo(ContainSubstring("boot-uplink"))
	})

	It("re-applies it after systemd reboots the node", func() {
		before := available()
		Expect(m.Reboot(ctx)).To(Succeed())
		after := run(m, "cat", "/proc/sys/kernel/random/boot_id")
		Expect(after).NotTo(Equal(before), "a new boot")
		Eventually(available, "90s").Should(Equal(after))
		Expect(run(m, "ip", "-4", "-o", "addr", "show", "bn1")).To(ContainSubstring("192.0.2.10/24"))
		restarts, _ := strconv.Atoi(unitProp(m, "nmoverlay-handler.service", "NRestarts"))
		GinkgoWriter.Println("handler restarts in this boot:", restarts)
	})
})
