//go:build integration

package integration_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/shared"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/test/kit"
)

// chromium is Debian's (hack/install-deps.sh), run as the tiers run: as root, headless,
// with no network of its own to reach.
const chromium = "/usr/bin/chromium"

// bigState is a baremetal worker of 200-odd interfaces: two NICs in a bond, 120 VLANs on
// it (each with its own address), a bridge on every fourth, Open vSwitch's br-ex over an
// OVS bond of two more NICs, a VRF, 64 VFs alike and 20 veth pairs.
func bigState() string {
	var its []string
	add := func(format string, a ...any) { its = append(its, fmt.Sprintf(format, a...)) }
	add(`{"name":"lo","type":"loopback","state":"up"}`)
	for _, nic := range []string{"eno1", "eno2", "eno3", "eno4"} {
		add(`{"name":%q,"type":"ethernet","state":"up","mtu":9000}`, nic)
	}
	add(`{"name":"eno5","type":"ethernet","state":"up","lldp":{"enabled":true,"neighbors":[[{"type":5,"system-name":"tor-7"},{"type":2,"port-id":"Ethernet48"}]]}}`)
	add(`{"name":"bond0","type":"bond","state":"up","mtu":9000,"link-aggregation":{"mode":"802.3ad","port":["eno1","eno2"]}}`)
	for i := range 120 {
		add(`{"name":"bond0.%d","type":"vlan","state":"up","mtu":9000,"vlan":{"base-iface":"bond0","id":%d},"ipv4":{"enabled":true,"address":[{"ip":"10.%d.%d.2","prefix-length":24}]}}`,
			100+i, 100+i, 1+i/200, i%200)
		if i%4 == 0 {
			add(`{"name":"br%d","type":"linux-bridge","state":"up","bridge":{"port":[{"name":"bond0.%d"}]}}`, 100+i, 100+i)
		}
	}
	add(`{"name":"br-ex","type":"ovs-bridge","state":"up","bridge":{"port":[{"name":"bond-ex","link-aggregation":{"mode":"balance-slb","port":[{"name":"eno3"},{"name":"eno4"}]}},{"name":"br-ex"}]}}`)
	add(`{"name":"br-ex","type":"ovs-interface","state":"up","ipv4":{"enabled":true,"address":[{"ip":"192.0.2.20","prefix-length":24}]}}`)
	add(`{"name":"vrf-red","type":"vrf","state":"up","vrf":{"route-table-id":100,"port":["eno5"]}}`)
	for i := range 64 {
		add(`{"name":"ens2f0v%d","type":"ethernet","state":"up","mtu":1500}`, i)
	}
	for i := range 20 {
		add(`{"name":"veth%da","type":"veth","state":"up","veth":{"peer":"veth%db"}}`, i, i)
		add(`{"name":"veth%db","type":"veth","state":"up","veth":{"peer":"veth%da"}}`, i, i)
	}
	return `{"interfaces":[` + strings.Join(its, ",\n") + `]}`
}

// nmoverlay topology on an API server of its own: the picture of a 200-interface node
// opened in a real browser, where no two labels overlap, every label is in its box, and
// the page shows what the node's state, enactments and drift say.
var _ = Describe("nmoverlay topology", Ordered, func() {
	var (
		c          client.Client
		ctx        = context.Background()
		bin, dir   string
		kubeconfig string
	)
	topology := func(args ...string) (stdout, stderr string, code int) {
		GinkgoHelper()
		cmd := exec.Command(bin, append([]string{"topology", "--kubeconfig", kubeconfig}, args...)...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return out.String(), errOut.String(), exit.ExitCode()
		}
		Expect(err).NotTo(HaveOccurred())
		return out.String(), errOut.String(), 0
	}
	nodeState := func(name, current string, drift []string, ephemeral ...string) {
		GinkgoHelper()
		nns := &v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: name}}
		Expect(c.Create(ctx, nns)).To(Succeed())
		nns.Status.CurrentState = shared.State{Raw: []byte(current)}
		nns.Status.HostNetworkManagerVersion = "1.52.1"
		nns.Status.LastSuccessfulUpdateTime = metav1.Now()
		nns.Status.Drift = drift
		nns.Status.Overlay = &v1beta1.OverlayStatus{}
		for _, it := range ephemeral {
			nns.Status.Overlay.Ephemeral = append(nns.Status.Overlay.Ephemeral,
				v1beta1.EphemeralProfile{File: it + ".nmconnection", Change: "added", Interface: it, Owned: true})
		}
		Expect(c.Status().Update(ctx, nns)).To(Succeed())
	}
	enactment := func(node, policy, desired string) {
		GinkgoHelper()
		e := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: shared.EnactmentKey(node, policy),
			Labels: map[string]string{shared.NodeLabel: node, shared.PolicyLabel: policy}}}
		e.Status.DesiredState = shared.State{Raw: []byte(desired)}
		Expect(c.Create(ctx, e)).To(Succeed())
	}

	BeforeAll(func() {
		_, err := os.Stat(chromium)
		Expect(err).NotTo(HaveOccurred(), "chromium is missing: run hack/install-deps.sh")
		a, err := kit.StartAPI()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(a.Stop)
		c = a.Client
		dir = GinkgoT().TempDir()
		kubeconfig, err = a.AdminKubeconfig(dir)
		Expect(err).NotTo(HaveOccurred())
		bin, err = kit.Binary("cmd/nmoverlay")
		Expect(err).NotTo(HaveOccurred())

		nodeState("worker-big", bigState(), []string{"storage-vlans: changed outside nmoverlay: bond0.101.ipv4.address: 10.1.1.2/24 missing (has none)"},
			"br100", "bond0.100", "bond0.101")
		enactment("worker-big", "storage-vlans", `{"interfaces":[{"name":"bond0.100","type":"vlan","state":"up","vlan":{"base-iface":"bond0","id":100}},
			{"name":"bond0.101","type":"vlan","state":"up","vlan":{"base-iface":"bond0","id":101}},
			{"name":"br100","type":"linux-bridge","state":"up","bridge":{"port":[{"name":"bond0.100"}]}}]}`)
		enactment("worker-big", "gone-vlan", `{"interfaces":[{"name":"bond0.999","type":"vlan","state":"absent"}]}`)
		nodeState("worker-small", `{"interfaces":[{"name":"eth0","type":"ethernet","state":"up","mtu":1500,
			"ipv4":{"enabled":true,"address":[{"ip":"192.0.2.30","prefix-length":24}]}}]}`, nil)
	})

	It("draws a 200-interface node that reads in a browser: no label overlaps, each in its box", func() {
		page := filepath.Join(dir, "worker-big.html")
		_, stderr, code := topology("-o", page, "worker-big")
		Expect(code).To(Equal(0), stderr)

		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
			chromedp.UserDataDir(filepath.Join(dir, "chromium")), chromedp.Flag("disable-quic", true), chromedp.WindowSize(1600, 1000))
		actx, cancel := chromedp.NewExecAllocator(ctx, opts...)
		DeferCleanup(cancel)
		bctx, cancel := chromedp.NewContext(actx)
		DeferCleanup(cancel)
		bctx, cancel = context.WithTimeout(bctx, 2*time.Minute)
		DeferCleanup(cancel)

		// What the browser laid out: every label's box on the page, the interface box it
		// is in, and its text.
		type label struct {
			Text              string
			X, Y, W, H        float64
			BX, BY, BW, BH    float64
			Names             string
			Class, GroupClass string
		}
		Expect(chromedp.Do(bctx, chromedp.Navigate("file://"+page), chromedp.WaitVisible(chromedp.CSS("svg")))).To(Succeed())
		labels, err := chromedp.Run(bctx, chromedp.Evaluate[[]label](`[...document.querySelectorAll("g.iface text")].map(t => {
				const r = t.getBoundingClientRect(), b = t.parentNode.querySelector("rect").getBoundingClientRect();
				return {Text: t.textContent, X: r.x, Y: r.y, W: r.width, H: r.height, BX: b.x, BY: b.y, BW: b.width, BH: b.height,
					Names: t.parentNode.dataset.names, Class: t.getAttribute("class"), GroupClass: t.parentNode.getAttribute("class")};
			})`))
		Expect(err).NotTo(HaveOccurred())
		size, err := chromedp.Run(bctx, chromedp.Evaluate[[]float64](`(r => [r.width, r.height])(document.querySelector("svg").getBoundingClientRect())`))
		Expect(err).NotTo(HaveOccurred())
		svgWidth, svgHeight := size[0], size[1]
		shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		Expect(err).NotTo(HaveOccurred())
		// NMOVERLAY_TOPOLOGY_SCREENSHOT keeps the screenshot, to look at.
		if keep := os.Getenv("NMOVERLAY_TOPOLOGY_SCREENSHOT"); keep != "" {
			Expect(os.WriteFile(keep, shot, 0o644)).To(Succeed())
		}
		GinkgoWriter.Printf("the page: %d labels, the picture %.0f×%.0f px\n", len(labels), svgWidth, svgHeight)

		By("no two labels overlap, and each is inside its interface's box")
		Expect(len(labels)).To(BeNumerically(">", 300))
		var overlaps, outside []string
		for i, a := range labels {
			if a.X < a.BX || a.Y < a.BY || a.X+a.W > a.BX+a.BW+0.5 || a.Y+a.H > a.BY+a.BH+0.5 {
				outside = append(outside, fmt.Sprintf("%q of %s", a.Text, a.Names))
			}
			for _, b := range labels[i+1:] {
				if a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H-0.5 && b.Y < a.Y+a.H-0.5 {
					overlaps = append(overlaps, fmt.Sprintf("%q of %s and %q of %s", a.Text, a.Names, b.Text, b.Names))
				}
			}
		}
		Expect(overlaps).To(BeEmpty())
		Expect(outside).To(BeEmpty())

		By("the page shows what the node says")
		// in finds the label of box (its names) starting with text.
		in := func(box, text string) (label, bool) {
			for _, l := range labels {
				if l.Names == box && strings.HasPrefix(l.Text, text) {
					return l, true
				}
			}
			return label{}, false
		}
		for _, want := range []struct{ box, text, class string }{
			{"bond0", "bond0  bond", "iface"},
			{"bond-ex", "bond-ex  ovs bond", "iface"},
			{"br-ex", "br-ex  ovs-bridge", "iface"},
			{"br-ex", "192.0.2.20/24", "iface"},
			{"eno5", "lldp tor-7 Ethernet48", "iface"},
			{"br100", "policy storage-vlans", "iface tmpfs"},
			{"bond0.101", "drift storage-vlans: bond0.101.ipv4.address:", "iface tmpfs drift"},
			{"bond0.102", "10.1.2.2/24", "iface"},
		} {
			l, ok := in(want.box, want.text)
			Expect(ok).To(BeTrue(), "the page lacks %q in %s", want.text, want.box)
			Expect(l.GroupClass).To(Equal(want.class), want.text)
		}
		collapsed := map[string]int{}
		byText := map[string]label{}
		for _, l := range labels {
			byText[l.Text] = l
			if strings.Contains(l.Text, " × ") {
				collapsed[l.Text] = len(strings.Fields(l.Names))
			}
		}
		Expect(collapsed).To(Equal(map[string]int{"ens2f0v0–63  64 × ethernet": 64, "veth0–19a, veth0–19b  40 × veth": 40}))
		Expect(byText).NotTo(HaveKey("lo  loopback"))
		Expect(byText).NotTo(HaveKey("policy gone-vlan"))
		// 200-odd interfaces in fewer boxes: the alike ones collapsed.
		boxes := map[string]bool{}
		for _, l := range labels {
			boxes[l.Names] = true
		}
		Expect(len(boxes)).To(BeNumerically("<", 200))

		By("the screenshot is the whole picture")
		img, err := png.Decode(bytes.NewReader(shot))
		Expect(err).NotTo(HaveOccurred())
		Expect(float64(img.Bounds().Dx())).To(BeNumerically(">=", svgWidth))
		Expect(float64(img.Bounds().Dy())).To(BeNumerically(">=", svgHeight))
	})

	It("draws every node on one page with --all, and the SVG alone", func() {
		page := filepath.Join(dir, "all.html")
		_, stderr, code := topology("--all", "-o", page)
		Expect(code).To(Equal(0), stderr)
		b, err := os.ReadFile(page)
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Count(string(b), "<svg ")).To(Equal(2))
		Expect(string(b)).To(ContainSubstring(`<a href="#worker-small">worker-small</a>`))

		svg, stderr, code := topology("worker-small")
		Expect(code).To(Equal(0), stderr)
		Expect(svg).To(HavePrefix("<svg "))
		Expect(svg).To(ContainSubstring(">192.0.2.30/24</text>"))
		Expect(svg).To(ContainSubstring("NetworkManager 1.52.1"))
	})

	It("says what is wrong in one line, exit status 1", func() {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"worker-none"}, "nmoverlay topology: no NodeNetworkState worker-none: no such node, or its handler has not reported its state yet\n"},
			{[]string{"--all", "-o", filepath.Join(dir, "all.svg")}, "nmoverlay topology: --all draws one HTML page: -o FILE.html\n"},
			{[]string{"-o", filepath.Join(dir, "x.png"), "worker-small"}, "nmoverlay topology: -o " + filepath.Join(dir, "x.png") + ": the file's name ends in .svg or .html\n"},
			{[]string{}, "nmoverlay topology: one NODE, or --all (see nmoverlay topology -h)\n"},
		} {
			_, stderr, code := topology(tc.args...)
			Expect(code).To(Equal(1), "%v", tc.args)
			Expect(stderr).To(Equal(tc.want))
		}
		cmd := exec.Command(bin, "topology", "--kubeconfig", filepath.Join(dir, "none"), "worker-small")
		out, err := cmd.CombinedOutput()
		Expect(err).To(HaveOccurred())
		Expect(strings.Count(string(out), "\n")).To(Equal(1), string(out))
		Expect(string(out)).To(HavePrefix("nmoverlay topology: no kubeconfig: "))
	})
})
