//go:build node

package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/fabric"
	"github.com/nmoverlay/nmoverlay/test/kit"
	"github.com/nmoverlay/nmoverlay/test/nmhost"
)

// processNode is an overlay node whose handler runs as it does on a real node: its own
// process (cmd/handler) inside the node's namespaces, on the node's NetworkManager,
// reaching a real API server only across the fabric.
type processNode struct {
	*overlayNode
	name string
	k8s  client.Client
	// handler process
	bin, kubeconfig, log string
	args                 []string
	proc                 *exec.Cmd
}

// newProcessNode sets the node, the API server and the fabric up and starts the handler
// with args; run it in a BeforeAll (it registers the clean-up).
func newProcessNode(name string, args ...string) *processNode {
	GinkgoHelper()
	return newProcessNodeWith(name, nil, args...)
}

// newProcessNodeWith is newProcessNode with more at each boot: extra runs once the node's
// namespaces exist, with the fabric's name (more NICs cabled to it).
func newProcessNodeWith(name string, extra func(n *nmhost.Node, fabric string) error, args ...string) *processNode {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	p := &processNode{name: name, args: args, kubeconfig: filepath.Join(dir, "kubeconfig"), log: filepath.Join(dir, "handler.log")}
	var err error
	p.bin, err = kit.Binary("cmd/handler")
	Expect(err).NotTo(HaveOccurred())

	a, err := kit.StartAPI()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(a.Stop)
	stopController, err := a.StartController() // it grants the node its rollout slots
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(stopController)
	cfg, env := a.Config, a.Env
	p.k8s = a.Client
	_, err = kit.ReadyNode(context.Background(), p.k8s, name, nil)
	Expect(err).NotTo(HaveOccurred())
	Expect(fabric.Kubeconfig(env, "nmoverlay-handler", p.kubeconfig)).To(Succeed())

	var boot func(*nmhost.Node) error
	if extra != nil {
		boot = func(n *nmhost.Node) error { return extra(n, p.fabric) }
	}
	p.overlayNode, err = newOverlayNode(name, helper, boot)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(p.close)
	stopFabric, err := fabric.ServeAPI(p.fabric, cfg.Host)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(stopFabric)
	Expect(p.start(context.Background())).To(Succeed())
	Eventually(p.reachesAPI, "15s").Should(Succeed(), "the node reaches the API server across the fabric")
	p.startHandler()
	DeferCleanup(p.killHandler)
	return p
}

func (p *processNode) startHandler() {
	GinkgoHelper()
	var err error
	p.proc, err = p.startHandlerProcess(p.bin, p.kubeconfig, p.name, p.log, p.args...)
	Expect(err).NotTo(HaveOccurred())
}

// killHandler ends the process as a node power-off would: SIGKILL, no clean shutdown.
func (p *processNode) killHandler() {
	_ = p.proc.Process.Kill()
	_ = p.proc.Wait()
}

// handlerLog is what the handler process wrote so far.
func (p *processNode) handlerLog() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// printOnFailure prints the handler's and NetworkManager's logs after a failed spec.
func (p *processNode) printOnFailure() {
	if CurrentSpecReport().Failed() {
		GinkgoWriter.Printf("handler log:\n%s\nNetworkManager log:\n%s\n", p.handlerLog(), p.NMLog())
	}
}

// enactment is "<True condition> <boot>: <message>" of the policy's enactment on the node.
func (p *processNode) enactment(policy string) func() string {
	return enactmentSummary(p.k8s, p.name, policy)
}

// enactmentSummary is kit.EnactmentSummary.
var enactmentSummary = kit.EnactmentSummary

func (p *processNode) create(name, desired string) {
	GinkgoHelper()
	pol := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	pol.Spec.DesiredState = shared.State{Raw: []byte(desired)}
	Expect(p.k8s.Create(context.Background(), pol)).To(Succeed())
}

// cableToFabric cables more NICs of a node to ports in its fabric: each port (a veth
// in the fabric, up) to its NIC in the node, a cable left from the previous boot replaced.
func cableToFabric(node *nmhost.Node, fabricNS string, nics map[string]string) error {
	for port, nic := range nics {
		_ = exec.Command("ip", "-n", fabricNS, "link", "del", port).Run()
		for _, args := range [][]string{
			{"-n", fabricNS, "link", "add", port, "type", "veth", "peer", "name", nic, "netns", strconv.Itoa(node.PID())},
			{"-n", fabricNS, "link", "set", port, "up"},
		} {
			if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
				return fmt.Errorf("ip %v: %v: %s", args, err, out)
			}
		}
	}
	return nil
}

// enactmentOf is the policy's enactment on the node, as the API server has it.
func (p *processNode) enactmentOf(policy string) *v1beta1.NodeNetworkConfigurationEnactment {
	GinkgoHelper()
	e := &v1beta1.NodeNetworkConfigurationEnactment{}
	Expect(p.k8s.Get(context.Background(), client.ObjectKey{Name: shared.EnactmentKey(p.name, policy)}, e)).To(Succeed())
	return e
}

// reportedState is the node's NodeNetworkState's current state, read as it is written (not
// parsed as a desired state); empty while there is none.
func reportedState(k8s client.Client, nodeName string) state.State {
	nns := &v1beta1.NodeNetworkState{}
	var s state.State
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: nodeName}, nns); err == nil {
		_ = json.Unmarshal(nns.Status.CurrentState.Raw, &s)
	}
	return s
}

// sbinTool finds a daemon the test runs, also where root's PATH may lack /usr/sbin.
func sbinTool(name string) string {
	GinkgoHelper()
	path, err := exec.LookPath(name)
	if err != nil {
		path, err = exec.LookPath("/usr/sbin/" + name)
	}
	Expect(err).NotTo(HaveOccurred(), "%s is missing: run hack/install-deps.sh", name)
	return path
}
