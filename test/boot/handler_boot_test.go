//go:build boot

package boot_test

import (
	"context"
	"fmt"
	"os"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/overlay"
	"github.com/nmoverlay/nmoverlay/test/fabric"
	"github.com/nmoverlay/nmoverlay/test/localcluster"
)

// The handler on a systemd node: booted by systemd-nspawn with the MachineConfig, the
// helper and the handler as a unit, its uplink cabled to a fabric where the API server is
// (localcluster, one node). A policy lands in the tmpfs layer; a reboot (systemd's, with a
// new boot ID) drops it, and the handler puts it back.
var _ = Describe("the handler on a systemd node", Ordered, func() {
	const nodeName = "hnode"
	var (
		node *localcluster.Node
		k8s  client.Client
		ctx  = context.Background()
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

	BeforeAll(func() {
		Expect(os.Getenv("KUBEBUILDER_ASSETS")).NotTo(BeEmpty(), "KUBEBUILDER_ASSETS is unset: run make test-boot")
		c, err := localcluster.Start(ctx, localcluster.Options{
			Rootfs:   baseRootfs,
			CRDs:     "../../deploy/crds",
			Nodes:    []string{nodeName},
			Binaries: localcluster.Binaries{Helper: helper, Handler: handler, Controller: controller},
			Log:      GinkgoWriter,
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.Close)
		node, k8s = c.Nodes[0], c.Client
	})
	AfterEach(func() {
		if CurrentSpecReport().Failed() && node != nil {
			for _, args := range [][]string{{"ip", "addr"}, {"ip", "route"}, {"nmcli", "device"}, {"nmcli", "-f", "NAME,DEVICE,FILENAME", "connection", "show"},
				{"journalctl", "-b", "-u", localcluster.HandlerUnit, "--no-pager", "-n", "30"}, {"journalctl", "-b", "-u", "NetworkManager", "--no-pager", "-n", "40"}} {
				out, _ := node.Exec(ctx, args[0], args[1:]...)
				GinkgoWriter.Printf("$ %v\n%s\n", args, out)
			}
		}
	})

	It("applies a policy; its profile lives only in the node's tmpfs layer", func() {
		p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "boot-uplink"}}
		p.Spec.DesiredState = shared.State{Raw: []byte(fmt.Sprintf(`{"interfaces":[{"name":%q,"type":"ethernet","state":"up",
			"ipv4":{"enabled":true,"address":[{"ip":"192.0.2.10","prefix-length":24}]}}],
			"routes":{"config":[{"destination":"0.0.0.0/0","next-hop-address":%q,"next-hop-interface":%[1]q}]}}`,
			localcluster.Uplink, fabric.Gateway))}
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Eventually(available, "90s").ShouldNot(BeEmpty())
		bootID, err := node.BootID(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(available()).To(Equal(bootID), "the enactment records the node's boot")
		Expect(run(node.Machine, "ip", "-4", "-o", "addr", "show", localcluster.Uplink)).To(ContainSubstring("192.0.2.10/24"))
		Expect(run(node.Machine, "ls", layout.Upper())).To(ContainSubstring(".nmconnection"))
		Expect(run(node.Machine, "ls", overlay.NMDefaultKeyfile)).NotTo(ContainSubstring("boot-uplink"))
	})

	It("re-applies it after systemd reboots the node", func() {
		before := available()
		Expect(node.Reboot(ctx)).To(Succeed())
		after, err := node.BootID(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(after).NotTo(Equal(before), "a new boot")
		Eventually(available, "90s").Should(Equal(after))
		Expect(run(node.Machine, "ip", "-4", "-o", "addr", "show", localcluster.Uplink)).To(ContainSubstring("192.0.2.10/24"))
		restarts, _ := strconv.Atoi(unitProp(node.Machine, localcluster.HandlerUnit, "NRestarts"))
		GinkgoWriter.Println("handler restarts in this boot:", restarts)
	})
})
