// Package demo is nmoverlay's main job walked through on a local cluster (localcluster):
// nmoverlay installed with kubectl apply -k (the handler a pod on every node, the
// controller's two replicas), the MachineConfig rolled out with a reboot per node, a
// policy per node applied, what it left on a node (the tmpfs layer only), a reboot and the
// policy re-applied, the handler's metrics scraped with a token, a policy that breaks the
// gateway rolled back, the policies deleted and the nodes back on their persistent
// profiles. `make demo` prints it; the boot tier runs the same steps and asserts the
// Report. Every step checks its own outcome and fails the run when it was not reached.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/machineconfigs"
	"github.com/nmoverlay/nmoverlay/internal/overlay"
	"github.com/nmoverlay/nmoverlay/internal/paths"
	"github.com/nmoverlay/nmoverlay/internal/serving"
	"github.com/nmoverlay/nmoverlay/internal/topology"
	"github.com/nmoverlay/nmoverlay/test/fabric"
	lc "github.com/nmoverlay/nmoverlay/test/localcluster"
)

// The demo's policies.
const (
	BadGatewayPolicy = "demo-bad-gateway"
	Bridge           = "br-demo"
	routeDestination = "203.0.113.0/24"
	badGateway       = "192.0.2.99"
	// scraper is the service account the demo scrapes metrics as (Prometheus' stand-in).
	scraper = "metrics-scraper"
)

// BridgePolicy names node's policy: one policy per node, selected by its hostname, as the
// OpenShift documentation writes a static address per node.
func BridgePolicy(node string) string { return "demo-bridge-" + node }

// BridgeAddress is the static address node i's policy gives br-demo.
func BridgeAddress(i int) string { return fmt.Sprintf("198.51.100.%d", 1+i) }

// bridgeState moves the node's second NIC into a bridge with the node's own static
// address and a route, as kubernetes-nmstate writes it.
func bridgeState(address string) string {
	return fmt.Sprintf(`{"interfaces":[{"name":%q,"type":"linux-bridge","state":"up",
  "ipv4":{"enabled":true,"dhcp":false,"address":[{"ip":%q,"prefix-length":24}]},
  "bridge":{"options":{"stp":{"enabled":false}},"port":[{"name":%q}]}}],
 "routes":{"config":[{"destination":%q,"next-hop-address":"198.51.100.254","next-hop-interface":%q}]}}`,
		Bridge, address, lc.SecondNIC, routeDestination, Bridge)
}

// badGatewayState points the default route at an address nobody answers on.
var badGatewayState = fmt.Sprintf(`{"routes":{"config":[{"destination":"0.0.0.0/0","next-hop-address":%q,"next-hop-interface":%q,"metric":10}]}}`,
	badGateway, lc.Uplink)

// poll is how often a step looks again for the outcome it waits for.
const poll = 250 * time.Millisecond

// Options for Run.
type Options struct {
	Cluster lc.Options
	// Kubectl is the kubectl binary that installs nmoverlay and shows the objects, as an
	// administrator does.
	Kubectl string
	// Deploy is the directory of deploy/'s kustomization.
	Deploy string
	Out    io.Writer
	// Topology is where the picture of the first node's network is written ("": a
	// temporary file, removed).
	Topology string
}

// Report is what the run measured and saw, step by step.
type Report struct {
	Steps []Step
	// StartCluster: the control plane up and both nodes Ready; Operator: kubectl apply -k
	// until the operator was available; Deployed: the NMState created until it was
	// Available (every handler and the controller ready); Installed: kubectl apply -k until
	// then; MachineConfig: the MachineConfig written and every node rebooted and Ready.
	StartCluster, Operator, Deployed, Installed, MachineConfig time.Duration
	// Pods maps each of nmoverlay's pods to its node; Leader is the pod holding the
	// controller's lease.
	Pods   map[string]string
	Leader string
	// Applied: the policies created to Available on every node; Addresses maps each node
	// to the address its policy gave the bridge.
	Applied   time.Duration
	Addresses map[string]string
	// Split is, per node, where its policy's time went from creation to Available.
	Split map[string]ApplySplit
	// Denial is what the API server told one node's handler (its pod's own token) that
	// tried to delete another node's enactment; HandlerUser is who that token is.
	Denial, HandlerUser string
	// UpperLayer is what `nm-overlay status` listed on the first node after the apply;
	// LowerLayer the files of the persistent dir.
	UpperLayer []overlay.ProfileChange
	LowerLayer []string
	// Topology is the first node's picture (SVG) after the apply.
	Topology string
	// Reboot: the reboot was asked for until the policy was Available in the new boot;
	// Reconverge is the handler's own figure (nmoverlay_boot_reconvergence_seconds),
	// scraped with a token; Unauthenticated is the HTTP status of a scrape without one.
	BootIDs [2]string
	Reboot  time.Duration
	// Gate is the reboot as the API showed it, with the reboot gate on.
	Gate            GateTimeline
	Reconverge      time.Duration
	Unauthenticated int
	// PeerBridges is kubernetes_nmstate_network_interfaces{type="linux-bridge"} of the
	// first node, scraped from its handler.
	PeerBridges float64
	// BadGateway is the failing enactment's message; DefaultRouteAfter the node's
	// default route once it was rolled back.
	BadGateway        string
	DefaultRouteAfter string
	// Removed: the NMState deleted until its handlers and controller were gone;
	// Redeployed: it created again until every policy was Available with new handlers.
	Removed, Redeployed time.Duration
	// Deleted: policies deleted until every node was back on its persistent profiles;
	// UpperAfterDelete is what the tmpfs layer held then.
	Deleted          time.Duration
	UpperAfterDelete []overlay.ProfileChange
	// NodesAfterDelete maps each node to the profile its second NIC runs.
	NodesAfterDelete map[string]string
}

// ApplySplit is where one node's policy spent its time, from its creation to Available.
type ApplySplit struct {
	// Granted and Available: from the policy's creation until its enactment on the node
	// carried its rollout slot, and until it was Available (the API watched every 20 ms).
	Granted, Available time.Duration
	// Started: from the policy's creation until the handler began the apply (its "applied"
	// line's time, as the kubelet logged it, less the apply).
	Started time.Duration
	// The handler's own figures (its "applied" log line): the whole apply, and in it the
	// probes before the change, the change (activation), the probes after it, the commit.
	Apply, ProbesBefore, Change, ProbesAfter, Commit time.Duration
	// Log is what the handler logged from the policy's creation until it was Available.
	Log []string
}

func (s ApplySplit) String() string {
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
	return fmt.Sprintf("granted after %s, applying from %s, Available after %s; the apply took %s (probes before %s, change %s, probes after %s, commit %s)",
		r(s.Granted), r(s.Started), r(s.Available), r(s.Apply), r(s.ProbesBefore), r(s.Change), r(s.ProbesAfter), r(s.Commit))
}

// Step is one step of the walk-through and how long it took.
type Step struct {
	Title    string
	Duration time.Duration
}

type run struct {
	o      Options
	c      *lc.Cluster
	k8s    client.Client
	w      lc.Workloads
	report *Report
	// nmstateFile is the NMState manifest the install step wrote.
	nmstateFile string
}

// Run starts the cluster, walks through the scenario and takes everything down again.
func Run(ctx context.Context, o Options) (*Report, error) {
	r := &run{o: o, report: &Report{}}
	err := r.steps(ctx)
	if r.c != nil {
		cleanErr := r.step("clean up: power the nodes off, stop the control plane, remove the fabric", func() error {
			r.c.Close()
			if left := r.c.Leftovers(); len(left) > 0 {
				return fmt.Errorf("left behind: %s", strings.Join(left, "; "))
			}
			r.printf("no process, network namespace, interface, cgroup or directory of the demo is left\n")
			return nil
		})
		if err == nil {
			err = cleanErr
		}
	}
	return r.report, err
}

func (r *run) printf(format string, args ...any) { fmt.Fprintf(r.o.Out, format, args...) }

// step runs one step, printing its title and its time.
func (r *run) step(title string, f func() error) error {
	r.printf("\n\033[1m==> %s\033[0m\n", title)
	start := time.Now()
	err := f()
	d := time.Since(start).Round(10 * time.Millisecond)
	r.report.Steps = append(r.report.Steps, Step{Title: title, Duration: d})
	if err != nil {
		r.printf("    FAILED after %s: %v\n", d, err)
		return fmt.Errorf("%s: %w", title, err)
	}
	r.printf("    (%s)\n", d)
	return nil
}

// show runs a command on a node and prints it with its output.
func (r *run) show(ctx context.Context, n *lc.Node, args ...string) string {
	out, err := n.Run(ctx, args...)
	r.printf("%s$ %s\n", n.Name, strings.Join(args, " "))
	if out != "" {
		r.printf("%s\n", indent(out))
	}
	if err != nil {
		r.printf("    (%v)\n", err)
	}
	return out
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// kubectl shows objects as an administrator sees them.
func (r *run) kubectl(ctx context.Context, args ...string) error {
	_, err := r.kubectlAs(ctx, "", r.c.Kubeconfig, args...)
	return err
}

// kubectlAs runs kubectl with a kubeconfig, printing who runs it (who: "" for the
// administrator).
func (r *run) kubectlAs(ctx context.Context, who, kubeconfig string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, r.o.Kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	r.printf("%s$ kubectl %s\n%s\n", who, strings.Join(args, " "), indent(string(out)))
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

func (r *run) steps(ctx context.Context) error {
	if r.o.Kubectl == "" {
		return fmt.Errorf("no kubectl given (hack/kube-assets.sh builds one)")
	}
	if len(r.o.Cluster.Nodes) != 2 {
		return fmt.Errorf("the demo runs on two nodes, not %d", len(r.o.Cluster.Nodes))
	}
	var err error
	if r.w, err = lc.DeployWorkloads(); err != nil {
		return err
	}
	for _, s := range []struct {
		title string
		f     func(context.Context) error
	}{
		{"render the MachineConfig for the worker pool (Ignition 3.2.0)", r.render},
		{fmt.Sprintf("start kube-apiserver, etcd, kube-controller-manager and kube-scheduler, a fabric network (gateway %s, where the API server answers); boot %s with systemd-nspawn, each with containerd, a kubelet and kube-proxy",
			fabric.Gateway, strings.Join(r.o.Cluster.Nodes, " and ")), r.start},
		{"install nmoverlay as an administrator does: a kustomization naming the image, kubectl apply -k (the CRDs and the operator), then the NMState", r.install},
		{"roll the MachineConfig out as MCO does: its files written, each node rebooted in turn; nm-overlay (put there by the handler's init container) sets up the overlay at boot", r.machineConfig},
	} {
		if err := r.step(s.title, func() error { return s.f(ctx) }); err != nil {
			return err
		}
	}
	nodeA, nodeB := r.c.Nodes[0], r.c.Nodes[1]
	for _, s := range []struct {
		title string
		f     func(context.Context) error
	}{
		{fmt.Sprintf("day 2: a policy per node (bridge %s on %s with the node's own static address, a route), selected by hostname", Bridge, lc.SecondNIC), r.apply},
		{fmt.Sprintf("per-node authority: %s's handler (its pod's own service account token, bound to its pod on %s) may not touch %s's enactment",
			nodeA.Name, nodeA.Name, nodeB.Name), r.authority},
		{fmt.Sprintf("%s: the policy's profiles live in the tmpfs layer only; the persistent dir is as MCO wrote it", nodeA.Name), r.layers},
		{fmt.Sprintf("%s's network drawn as nmoverlay topology draws it, from its NodeNetworkState and enactments", nodeA.Name), r.topology},
		{fmt.Sprintf("reboot %s: the tmpfs layer is gone; the kubelet restarts the handler, which re-applies every policy in the new boot; meanwhile the reboot gate keeps a new pod off the node", nodeA.Name), r.reboot},
		{fmt.Sprintf("scrape %s's handler as Prometheus does: HTTPS on port %d with a token allowed to get /metrics; without one, refused", nodeA.Name, serving.HandlerMetricsPort), r.scrape},
		{fmt.Sprintf("policy %s points %s's default route at %s, where nobody answers: the gateway probe fails and the node rolls back", BadGatewayPolicy, nodeA.Name, badGateway), r.badGateway},
		{"delete the NMState: the garbage collector removes the handlers and the controller, the nodes keep their network and the policies stay; create it again", r.removeNMState},
		{"delete the policies: every node is back on its persistent profiles, without a reboot", r.delete},
	} {
		if err := r.step(s.title, func() error { return s.f(ctx) }); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) render(context.Context) error {
	mcs, err := machineconfigs.Render(machineconfigs.Options{Pools: []string{"worker"}})
	if err != nil {
		return err
	}
	yaml, err := machineconfigs.Marshal(mcs)
	if err != nil {
		return err
	}
	r.printf("%d bytes of YAML for `oc apply -f -`; on each node it writes:\n", len(yaml))
	for _, f := range paths.DefaultLayout().MachineConfigFiles() {
		r.printf("    %s\n", f)
	}
	return nil
}

func (r *run) start(ctx context.Context) error {
	start := time.Now()
	c, err := lc.Start(ctx, r.o.Cluster)
	r.c = c
	if err != nil {
		return err
	}
	r.k8s = c.Client
	r.report.StartCluster = time.Since(start)
	return r.kubectl(ctx, "get", "nodes", "-o", "wide")
}

func (r *run) install(ctx context.Context) error {
	start := time.Now()
	dir, kustomization, err := r.c.Kustomization(r.o.Deploy, r.w)
	if err != nil {
		return err
	}
	r.printf("$ cat %s\n%s\n", filepath.Join(dir, "kustomization.yaml"), indent(kustomization))
	if err := r.kubectl(ctx, "apply", "-k", dir); err != nil {
		return err
	}
	if err := r.c.WaitOperator(ctx, r.w); err != nil {
		return err
	}
	r.report.Operator = time.Since(start)
	r.printf("the operator ready %s after kubectl apply; it deploys nothing until the NMState exists\n", r.report.Operator.Round(10*time.Millisecond))
	if err := r.kubectl(ctx, "-n", r.w.Namespace, "get", "pods"); err != nil {
		return err
	}
	r.nmstateFile = filepath.Join(dir, "nmstate.yaml")
	if err := os.WriteFile(r.nmstateFile, []byte(NMStateManifest), 0o644); err != nil {
		return err
	}
	r.printf("$ cat %s\n%s\n", r.nmstateFile, indent(NMStateManifest))
	created := time.Now()
	if err := r.kubectl(ctx, "apply", "-f", r.nmstateFile); err != nil {
		return err
	}
	if err := r.c.WaitInstalled(ctx, r.w); err != nil {
		return err
	}
	if err := wait.PollUntilContextTimeout(ctx, poll, time.Minute, true, func(ctx context.Context) (bool, error) {
		nm := &nmstatev1.NMState{}
		if err := r.k8s.Get(ctx, client.ObjectKey{Name: nmstatev1.NMStateName}, nm); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return isTrue(nm.Status.Conditions, nmstatev1.NMStateAvailable), nil
	}); err != nil {
		return fmt.Errorf("the NMState is not Available: %w", err)
	}
	r.report.Deployed = time.Since(created)
	if err := r.kubectl(ctx, "get", "nmstate"); err != nil {
		return err
	}
	r.report.Installed = time.Since(start)
	r.printf("every pod ready and the NMState Available %s after it was created (%s after kubectl apply -k)\n",
		r.report.Deployed.Round(10*time.Millisecond), r.report.Installed.Round(10*time.Millisecond))
	if err := r.kubectl(ctx, "-n", r.w.Namespace, "get", "pods", "-o", "wide"); err != nil {
		return err
	}
	pods := &corev1.PodList{}
	if err := r.k8s.List(ctx, pods, client.InNamespace(r.w.Namespace)); err != nil {
		return err
	}
	r.report.Pods = map[string]string{}
	for _, p := range pods.Items {
		r.report.Pods[p.Name] = p.Spec.NodeName
	}
	out, err := r.kubectlAs(ctx, "", r.c.Kubeconfig, "-n", r.w.Namespace, "get", "lease", controllerLease, "-o", "jsonpath={.spec.holderIdentity}")
	if err != nil {
		return err
	}
	// The holder is the pod's name, then "_" and a UUID.
	r.report.Leader, _, _ = strings.Cut(strings.TrimSpace(out), "_")
	if _, ok := r.report.Pods[r.report.Leader]; !ok {
		return fmt.Errorf("the controller's lease is held by %q, not one of its pods", out)
	}
	r.printf("the controller's leader: %s\n", r.report.Leader)
	for _, n := range r.c.Nodes {
		if r.show(ctx, n, "ls", "-l", "/usr/local/bin/nm-overlay") == "" {
			return fmt.Errorf("%s: the init container did not install nm-overlay", n.Name)
		}
	}
	return nil
}

// NMStateManifest is the NMState an administrator creates, as kubernetes-nmstate's
// documentation writes it, with nmoverlay's reboot gate on.
const NMStateManifest = `apiVersion: nmstate.io/v1
kind: NMState
metadata:
  name: nmstate
spec:
  rebootGate: Taint
`

// controllerLease is the controller's leader election lease (cmd/controller).
const controllerLease = "nmoverlay-controller.nmstate.io"

func (r *run) machineConfig(ctx context.Context) error {
	start := time.Now()
	rebooted := map[string]time.Time{}
	for _, n := range r.c.Nodes {
		rebooted[n.Name] = time.Now()
		before, err := n.BootID(ctx)
		if err != nil {
			return err
		}
		if err := r.c.ApplyMachineConfig(ctx, n); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		after, err := n.BootID(ctx)
		if err != nil {
			return err
		}
		r.printf("%s: rebooted (boot %s… → %s…) and Ready\n", n.Name, before[:8], after[:8])
	}
	for _, n := range r.c.Nodes {
		r.printf("%s$ nm-overlay verify\n", n.Name)
		out, err := n.Run(ctx, "nm-overlay", "verify")
		r.printf("%s\n", indent(out))
		if err != nil {
			return fmt.Errorf("%s: nm-overlay verify: %w", n.Name, err)
		}
	}
	if err := r.c.WaitInstalled(ctx, r.w); err != nil {
		return err
	}
	// The rollout is done when nmoverlay runs again in every node's new boot: a node is
	// Ready before the kubelet has restarted its pods, and the DaemonSet's status says
	// ready until it has seen them go.
	if err := r.waitRestarted(ctx, rebooted); err != nil {
		return err
	}
	r.report.MachineConfig = time.Since(start)
	r.show(ctx, r.c.Nodes[0], "nmcli", "-f", "NAME,DEVICE,FILENAME", "connection", "show")
	return nil
}

func (r *run) apply(ctx context.Context) error {
	start := time.Now()
	watched := r.watchEnactments(ctx, start)
	for i, n := range r.c.Nodes {
		p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: BridgePolicy(n.Name)}}
		p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": n.Name}
		p.Spec.DesiredState = shared.State{Raw: []byte(bridgeState(BridgeAddress(i)))}
		if err := r.k8s.Create(ctx, p); err != nil {
			return err
		}
	}
	for _, n := range r.c.Nodes {
		if err := r.waitPolicy(ctx, BridgePolicy(n.Name), shared.PolicyAvailable, 2*time.Minute); err != nil {
			return err
		}
	}
	r.report.Applied = time.Since(start)
	r.printf("Available on every node after %s\n", r.report.Applied.Round(10*time.Millisecond))
	r.report.Split = watched()
	for _, n := range r.c.Nodes {
		split := r.report.Split[n.Name]
		if err := r.handlerFigures(ctx, n, BridgePolicy(n.Name), start, &split); err != nil {
			r.printf("    (%s: the handler's figures: %v)\n", n.Name, err)
		}
		r.report.Split[n.Name] = split
		r.printf("    %s: %s\n", n.Name, split)
		for _, l := range split.Log {
			r.printf("        %s\n", l)
		}
	}
	r.controllerLog(ctx, start)
	if err := r.kubectl(ctx, "get", "nncp,nnce"); err != nil {
		return err
	}
	r.report.Addresses = map[string]string{}
	for i, n := range r.c.Nodes {
		if err := r.expectAddress(ctx, n, Bridge, BridgeAddress(i)+"/24"); err != nil {
			return err
		}
		r.report.Addresses[n.Name] = BridgeAddress(i)
	}
	r.show(ctx, r.c.Nodes[0], "ip", "route", "show", routeDestination)
	return nil
}

// watchEnactments looks at the demo policies' enactments every 20 ms from start; the
// function it returns stops it and tells, per node, when its enactment was granted and
// when Available.
func (r *run) watchEnactments(ctx context.Context, start time.Time) func() map[string]ApplySplit {
	splits := map[string]ApplySplit{}
	pass := func(ctx context.Context) {
		list := &v1beta1.NodeNetworkConfigurationEnactmentList{}
		if err := r.k8s.List(ctx, list); err != nil {
			return
		}
		for _, e := range list.Items {
			node := e.Labels[shared.NodeLabel]
			if e.Labels[shared.PolicyLabel] != BridgePolicy(node) {
				continue
			}
			s := splits[node]
			if _, ok := e.Annotations[shared.RolloutSlotAnnotation]; ok && s.Granted == 0 {
				s.Granted = time.Since(start)
			}
			if isTrue(e.Status.Conditions, shared.EnactmentAvailable) && s.Available == 0 {
				s.Available = time.Since(start)
			}
			splits[node] = s
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			pass(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	// Stopped once the policies are Available: a last pass sees what the polling had not
	// yet (a List can take longer than the controller's write of the policy's status, on
	// a loaded machine), so every node's Available is timed, at worst a little late.
	return func() map[string]ApplySplit { cancel(); <-done; pass(context.Background()); return splits }
}

// waitRestarted waits until each of nmoverlay's pods runs, Ready, in a container started
// after its node's reboot, and the controller's lease is held and renewed by one of them.
func (r *run) waitRestarted(ctx context.Context, rebooted map[string]time.Time) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, poll, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := r.k8s.List(ctx, pods, client.InNamespace(r.w.Namespace)); err != nil {
			return false, err
		}
		started := map[string]time.Time{} // the pods running again: their containers' latest start
		for _, p := range pods.Items {
			since, ok := rebooted[p.Spec.NodeName]
			ready := isTrueCondition(p.Status.Conditions)
			for _, c := range p.Status.ContainerStatuses {
				if c.State.Running == nil || c.State.Running.StartedAt.Time.Before(since.Truncate(time.Second)) {
					ready = false
				}
			}
			if ok && !ready {
				last = "pod " + p.Name + " not yet running again in its node's new boot"
				return false, nil
			}
			if ready {
				for _, c := range p.Status.ContainerStatuses {
					if t := c.State.Running.StartedAt.Time; t.After(started[p.Name]) {
						started[p.Name] = t
					}
				}
			}
		}
		out, err := r.kubectlAs(ctx, "", r.c.Kubeconfig, "-n", r.w.Namespace, "get", "lease", controllerLease, "-o",
			"jsonpath={.spec.holderIdentity} {.spec.renewTime}")
		if err != nil {
			return false, nil
		}
		identity, renewed, _ := strings.Cut(strings.TrimSpace(out), " ")
		holder, _, _ := strings.Cut(identity, "_")
		renewTime, err := time.Parse(time.RFC3339Nano, renewed)
		last = "the controller's lease held by " + holder + ", renewed " + renewed
		// Renewed by the holder's process that runs now, not left by the one before its restart.
		at, running := started[holder]
		return err == nil && running && renewTime.After(at), nil
	})
	if err != nil {
		return fmt.Errorf("nmoverlay not running again after the reboots (%s): %w", last, err)
	}
	return nil
}

func isTrueCondition(conds []corev1.PodCondition) bool {
	for _, c := range conds {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// controllerLog shows what the controller's leader logged of the rollout since start (its
// lease, its workers' start, its grants): where the wait for a grant went.
func (r *run) controllerLog(ctx context.Context, since time.Time) {
	out, err := r.kubectlAs(ctx, "", r.c.Kubeconfig, "-n", r.w.Namespace, "get", "lease", controllerLease, "-o", "jsonpath={.spec.holderIdentity}")
	if err != nil {
		return
	}
	leader, _, _ := strings.Cut(strings.TrimSpace(out), "_")
	pod := &corev1.Pod{}
	if err := r.k8s.Get(ctx, client.ObjectKey{Namespace: r.w.Namespace, Name: leader}, pod); err != nil {
		return
	}
	for _, n := range r.c.Nodes {
		if n.Name != pod.Spec.NodeName {
			continue
		}
		log, _ := n.Run(ctx, "sh", "-c", "cat /var/log/pods/"+r.w.Namespace+"_"+leader+"_*/*/*.log")
		r.printf("the controller's leader %s (on %s, started %s before the policies) logged:\n", leader, n.Name,
			since.Sub(pod.CreationTimestamp.Time).Round(time.Second))
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, "lease") || strings.Contains(l, "Starting workers") || strings.Contains(l, "rollout slots granted") {
				r.printf("    %s\n", l[:min(len(l), 200)])
			}
		}
	}
}

// handlerFigures reads the handler's "applied" log line for policy on node n (the
// kubelet keeps its log under /var/log/pods, each line stamped with its time) into s, and
// what it logged from start until the policy was Available.
func (r *run) handlerFigures(ctx context.Context, n *lc.Node, policy string, start time.Time, s *ApplySplit) error {
	var line map[string]any
	var at time.Time
	// The container runtime writes and stamps a line when it reads it from the handler's
	// output, which can be after the enactment the handler wrote next was seen Available:
	// the file is read again for a few seconds, and the applied line taken up to 2 s past.
	for try := 0; line == nil && try < 10; try++ {
		if try > 0 {
			time.Sleep(500 * time.Millisecond)
		}
		out, err := n.Run(ctx, "sh", "-c", "cat /var/log/pods/"+r.w.Namespace+"_"+r.w.Handler+"-*/handler/*.log")
		if err != nil {
			return err
		}
		s.Log = nil
		for _, l := range strings.Split(out, "\n") {
			stamp, rest, _ := strings.Cut(l, " ")
			t, err := time.Parse(time.RFC3339Nano, stamp)
			i := strings.Index(rest, "{")
			if err != nil || i < 0 || t.Before(start) || s.Available > 0 && t.After(start.Add(s.Available+2*time.Second)) {
				continue
			}
			var m map[string]any
			if json.Unmarshal([]byte(rest[i:]), &m) != nil {
				continue
			}
			msg, _ := m["msg"].(string)
			if s.Available == 0 || !t.After(start.Add(s.Available)) {
				s.Log = append(s.Log, fmt.Sprintf("+%s %s", t.Sub(start).Round(10*time.Millisecond), msg))
			}
			if msg == "applied" && strings.Contains(rest, `"`+policy+`/`) {
				line, at = m, t
			}
		}
	}
	if line == nil {
		return fmt.Errorf("no \"applied\" line for %s", policy)
	}
	for key, d := range map[string]*time.Duration{"duration": &s.Apply, "probesBefore": &s.ProbesBefore, "change": &s.Change,
		"probesAfter": &s.ProbesAfter, "commit": &s.Commit} {
		if v, ok := line[key].(string); ok {
			*d, _ = time.ParseDuration(v)
		}
	}
	s.Started = at.Add(-s.Apply).Sub(start)
	return nil
}

func (r *run) authority(ctx context.Context) error {
	nodeA, nodeB := r.c.Nodes[0], r.c.Nodes[1]
	kubeconfig, err := r.handlerKubeconfig(ctx, nodeA)
	if err != nil {
		return err
	}
	who := nodeA.Name + " handler"
	out, err := r.kubectlAs(ctx, who, kubeconfig, "auth", "whoami")
	if err != nil {
		return err
	}
	r.report.HandlerUser = out
	if !strings.Contains(out, "system:serviceaccount:"+r.w.Namespace+":") || !strings.Contains(out, nodeA.Name) {
		return fmt.Errorf("the token is not the handler's service account bound to %s: %s", nodeA.Name, out)
	}
	victim := shared.EnactmentKey(nodeB.Name, BridgePolicy(nodeB.Name))
	out, err = r.kubectlAs(ctx, who, kubeconfig, "delete", "nnce", victim)
	if err == nil {
		return fmt.Errorf("%s's handler deleted %s", nodeA.Name, victim)
	}
	r.report.Denial = out
	if !strings.Contains(out, nodeA.Name) || !strings.Contains(out, nodeB.Name) {
		return fmt.Errorf("the denial does not name both nodes: %s", out)
	}
	if _, err := r.enactment(ctx, nodeB.Name, BridgePolicy(nodeB.Name)); err != nil {
		return fmt.Errorf("%s after the denied delete: %w", victim, err)
	}
	return nil
}

// handlerKubeconfig is a kubeconfig holding the token the kubelet gave the handler's pod
// on node n (its projected service account volume), to act as that handler from here.
func (r *run) handlerKubeconfig(ctx context.Context, n *lc.Node) (string, error) {
	pods := &corev1.PodList{}
	if err := r.k8s.List(ctx, pods, client.InNamespace(r.w.Namespace)); err != nil {
		return "", err
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != n.Name || p.Labels["app.kubernetes.io/name"] != r.w.Handler {
			continue
		}
		token, err := n.Run(ctx, "sh", "-c", "cat /var/lib/kubelet/pods/"+string(p.UID)+"/volumes/kubernetes.io~projected/*/token")
		if err != nil {
			return "", fmt.Errorf("the token of pod %s: %w", p.Name, err)
		}
		r.printf("the token the kubelet mounted into pod %s (on %s)\n", p.Name, n.Name)
		return r.c.TokenKubeconfig(n.Name+"-handler", token)
	}
	return "", fmt.Errorf("no handler pod on %s", n.Name)
}

func (r *run) layers(ctx context.Context) error {
	nodeA := r.c.Nodes[0]
	r.show(ctx, nodeA, "nm-overlay", "status")
	upper, err := status(ctx, nodeA)
	if err != nil {
		return err
	}
	r.report.UpperLayer = upper
	if !holdsProfile(upper, Bridge) {
		return fmt.Errorf("the tmpfs layer holds no profile of %s: %v", Bridge, upper)
	}
	lower := r.show(ctx, nodeA, "ls", paths.NMDefaultKeyfile)
	r.report.LowerLayer = strings.Fields(lower)
	if strings.Contains(lower, Bridge) {
		return fmt.Errorf("a profile of %s reached the persistent dir: %s", Bridge, lower)
	}
	return nil
}

// topology draws the first node's network, once its NodeNetworkState shows the policy's
// bridge and its profile in tmpfs, as `nmoverlay topology NODE -o FILE.svg` does.
func (r *run) topology(ctx context.Context) error {
	nodeA := r.c.Nodes[0]
	var picture topology.Node
	err := wait.PollUntilContextTimeout(ctx, poll, time.Minute, true, func(ctx context.Context) (bool, error) {
		nns := &v1beta1.NodeNetworkState{}
		enactments := &v1beta1.NodeNetworkConfigurationEnactmentList{}
		if r.k8s.Get(ctx, client.ObjectKey{Name: nodeA.Name}, nns) != nil ||
			r.k8s.List(ctx, enactments, client.MatchingLabels{shared.NodeLabel: nodeA.Name}) != nil {
			return false, nil
		}
		var err error
		if picture, err = topology.FromStatus(nns, enactments.Items); err != nil {
			return false, err
		}
		return picture.Ephemeral[Bridge] && len(picture.Policies[Bridge]) > 0, nil
	})
	if err != nil {
		return fmt.Errorf("%s's NodeNetworkState never showed %s's profile in tmpfs with its policy: %w", nodeA.Name, Bridge, err)
	}
	var svg strings.Builder
	if err := topology.SVG(&svg, picture); err != nil {
		return err
	}
	r.report.Topology = svg.String()
	file := r.o.Topology
	if file == "" {
		dir, err := os.MkdirTemp("", "nmoverlay-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		file = filepath.Join(dir, nodeA.Name+".svg")
	}
	if err := os.WriteFile(file, []byte(r.report.Topology), 0o644); err != nil {
		return err
	}
	r.printf("  wrote %s: %d interfaces; %s (dashed: its profile in tmpfs) by %s over %s\n", file, len(picture.Current.Interfaces),
		Bridge, strings.Join(picture.Policies[Bridge], ", "), lc.SecondNIC)
	return nil
}

func (r *run) reboot(ctx context.Context) error {
	nodeA := r.c.Nodes[0]
	before, err := nodeA.BootID(ctx)
	if err != nil {
		return err
	}
	policy := BridgePolicy(nodeA.Name)
	r.showLeader(ctx, nodeA.Name)
	start := time.Now()
	gate := r.watchGate(ctx, nodeA.Name, policy, before, start)
	defer gate.stop()
	if err := nodeA.Reboot(ctx); err != nil {
		return err
	}
	booted := time.Since(start)
	after, err := nodeA.BootID(ctx)
	if err != nil {
		return err
	}
	if after == before {
		return fmt.Errorf("the boot ID did not change (%s)", after)
	}
	r.report.BootIDs = [2]string{before, after}
	if err := wait.PollUntilContextTimeout(ctx, poll, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		e, err := r.enactment(ctx, nodeA.Name, policy)
		if err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return e.Status.BootID == after && isTrue(e.Status.Conditions, shared.EnactmentAvailable), nil
	}); err != nil {
		r.printf("%s", r.c.Diagnose(ctx, nodeA, r.w))
		return fmt.Errorf("the enactment never became Available in boot %s: %w", after, err)
	}
	r.report.Reboot = time.Since(start)
	r.printf("boot %s… → %s…: systemd booted in %s; the policy was Available again %s after the reboot began\n",
		before[:8], after[:8], booted.Round(10*time.Millisecond), r.report.Reboot.Round(10*time.Millisecond))
	if err := r.expectAddress(ctx, nodeA, Bridge, BridgeAddress(0)+"/24"); err != nil {
		return err
	}
	// The gate (spec.rebootGate: Taint): the workload created while the taint held runs
	// once the policy is back.
	var t GateTimeline
	if err := wait.PollUntilContextTimeout(ctx, poll, time.Minute, true, func(context.Context) (bool, error) {
		t, err = gate.timeline()
		return err != nil || t.PodRunning != 0, err
	}); err != nil {
		return fmt.Errorf("pod %s: %w (seen: %+v)", GatePod, err, t)
	}
	gate.stop()
	t, _ = gate.timeline()
	r.report.Gate = t
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	r.printf("the kubelet posted the new boot ID %s after the reboot began; the gate's taint was on the Node %s later\n", ms(t.BootPosted), ms(t.Race()))
	r.printf("pod %s, selecting %s by hostname, created once the taint was seen (%s): the scheduler said %q\n", GatePod, nodeA.Name, ms(t.PodCreated), t.Unschedulable)
	r.printf("the policy Available at %s, the taint gone at %s, the pod bound at %s and running at %s\n",
		ms(t.Available), ms(t.Untainted), ms(t.PodBound), ms(t.PodRunning))
	r.printf("the window in which a new pod could start without the policy's network: %s without the gate (new boot ID to Available), %s with it (new boot ID to taint)\n",
		ms(t.Ungated()), ms(t.Race()))
	if err := t.check(); err != nil {
		return err
	}
	if err := r.kubectl(ctx, "get", "pods", "-o", "wide", "--all-namespaces", "--field-selector", "spec.nodeName="+nodeA.Name); err != nil {
		return err
	}
	if err := r.k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: GatePod, Namespace: metav1.NamespaceDefault}}, client.GracePeriodSeconds(0)); err != nil {
		return err
	}
	return r.kubectl(ctx, "get", "nnce", "-l", shared.NodeLabel+"="+nodeA.Name)
}

func (r *run) scrape(ctx context.Context) error {
	nodeA := r.c.Nodes[0]
	for _, args := range [][]string{
		{"-n", "default", "create", "serviceaccount", scraper},
		{"create", "clusterrolebinding", scraper, "--clusterrole=nmoverlay-metrics-reader", "--serviceaccount=default:" + scraper},
	} {
		if err := r.kubectl(ctx, args...); err != nil {
			return err
		}
	}
	token, err := r.kubectlAs(ctx, "", r.c.Kubeconfig, "-n", "default", "create", "token", scraper, "--duration=10m")
	if err != nil {
		return err
	}
	token = strings.TrimSpace(token)
	// Scraped across the fabric; the fabric may still hold the uplink's neighbour entry
	// of the previous boot, so errors are retried.
	const metric = "nmoverlay_boot_reconvergence_seconds"
	var scrapeErr error
	if err := wait.PollUntilContextTimeout(ctx, poll, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		v, ok, err := r.c.Metric(nodeA, serving.HandlerMetricsPort, token, metric)
		r.report.Reconverge, scrapeErr = time.Duration(v*float64(time.Second)), err
		return ok && err == nil, nil
	}); err != nil {
		return fmt.Errorf("reading the handler's re-convergence metric: %w (last error: %v)", err, scrapeErr)
	}
	r.printf("GET https://%s:%d/metrics with %s's token: %s %.3f (the handler re-applied every policy %s after it started in the new boot)\n",
		nodeA.Address, serving.HandlerMetricsPort, scraper, metric, r.report.Reconverge.Seconds(), r.report.Reconverge.Round(time.Millisecond))
	// kubernetes-nmstate's gauge of the node's interfaces, as a dashboard built on the peer
	// reads it: the policy's bridge among them.
	series := fmt.Sprintf(`kubernetes_nmstate_network_interfaces{node=%q,type="linux-bridge"}`, nodeA.Name)
	v, ok, err := r.c.Metric(nodeA, serving.HandlerMetricsPort, token, series)
	if err != nil || !ok || v < 1 {
		return fmt.Errorf("the handler's %s: %v (found %t, %v)", series, v, ok, err)
	}
	r.report.PeerBridges = v
	r.printf("  %s %g\n", series, v)
	status, body, err := r.c.Scrape(nodeA, serving.HandlerMetricsPort, "")
	if err != nil {
		return err
	}
	r.report.Unauthenticated = status
	r.printf("GET https://%s:%d/metrics without a token: HTTP %d %s\n", nodeA.Address, serving.HandlerMetricsPort, status, strings.TrimSpace(body))
	if status != http.StatusUnauthorized {
		return fmt.Errorf("a scrape without a token got HTTP %d, want %d", status, http.StatusUnauthorized)
	}
	return nil
}

func (r *run) badGateway(ctx context.Context) error {
	nodeA := r.c.Nodes[0]
	p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: BadGatewayPolicy}}
	p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": nodeA.Name}
	p.Spec.DesiredState = shared.State{Raw: []byte(badGatewayState)}
	if err := r.k8s.Create(ctx, p); err != nil {
		return err
	}
	if err := r.waitPolicy(ctx, BadGatewayPolicy, shared.PolicyDegraded, 2*time.Minute); err != nil {
		return err
	}
	e, err := r.enactment(ctx, nodeA.Name, BadGatewayPolicy)
	if err != nil {
		return err
	}
	c := meta.FindStatusCondition(e.Status.Conditions, shared.EnactmentFailing)
	if c == nil || c.Status != metav1.ConditionTrue {
		return fmt.Errorf("enactment %s is not Failing: %v", e.Name, e.Status.Conditions)
	}
	r.report.BadGateway = c.Message
	if err := r.kubectl(ctx, "get", "nncp"); err != nil {
		return err
	}
	r.printf("enactment %s: %s\n", e.Name, r.report.BadGateway)
	route := r.show(ctx, nodeA, "ip", "route", "show", "default")
	r.report.DefaultRouteAfter = route
	if !strings.Contains(route, "via "+fabric.Gateway) || strings.Contains(route, badGateway) {
		return fmt.Errorf("the default route was not rolled back: %q", route)
	}
	// The bridge policy was in the same transaction and is still in effect.
	if err := r.expectAddress(ctx, nodeA, Bridge, BridgeAddress(0)+"/24"); err != nil {
		return err
	}
	return r.deletePolicy(ctx, BadGatewayPolicy)
}

// removeNMState deletes the NMState and creates it again: the garbage collector removes
// the handlers and the controller with it, the nodes keep the network they have, the
// policies stay; the new handlers find every policy in effect.
func (r *run) removeNMState(ctx context.Context) error {
	start := time.Now()
	if err := r.kubectl(ctx, "delete", "nmstate", nmstatev1.NMStateName); err != nil {
		return err
	}
	var left string
	if err := wait.PollUntilContextTimeout(ctx, poll, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := r.k8s.List(ctx, pods, client.InNamespace(r.w.Namespace)); err != nil {
			return false, err
		}
		left = ""
		for _, p := range pods.Items {
			if name := p.Labels["app.kubernetes.io/name"]; name == r.w.Handler || name == r.w.Controller {
				left += " " + p.Name
			}
		}
		for name, o := range map[string]client.Object{r.w.Handler: &appsv1.DaemonSet{}, r.w.Controller: &appsv1.Deployment{}} {
			if err := r.k8s.Get(ctx, client.ObjectKey{Namespace: r.w.Namespace, Name: name}, o); err == nil {
				left += " " + name
			} else if client.IgnoreNotFound(err) != nil {
				return false, err
			}
		}
		return left == "", nil
	}); err != nil {
		return fmt.Errorf("still there after the NMState was deleted:%s: %w", left, err)
	}
	r.report.Removed = time.Since(start)
	r.printf("the handlers and the controller removed %s after the NMState was deleted\n", r.report.Removed.Round(10*time.Millisecond))
	if err := r.kubectl(ctx, "-n", r.w.Namespace, "get", "pods"); err != nil {
		return err
	}
	if err := r.kubectl(ctx, "get", "nncp"); err != nil {
		return err
	}
	// Nobody applies or reverts anything now: the nodes keep what was committed.
	for i, n := range r.c.Nodes {
		if err := r.expectAddress(ctx, n, Bridge, BridgeAddress(i)+"/24"); err != nil {
			return fmt.Errorf("without handlers: %w", err)
		}
	}
	r.printf("%s: %s still has %s/24: without a handler nothing is applied or reverted\n", r.c.Nodes[0].Name, Bridge, BridgeAddress(0))

	created := time.Now()
	if err := r.kubectl(ctx, "apply", "-f", r.nmstateFile); err != nil {
		return err
	}
	if err := r.c.WaitInstalled(ctx, r.w); err != nil {
		return err
	}
	for _, n := range r.c.Nodes {
		if err := r.waitPolicy(ctx, BridgePolicy(n.Name), shared.PolicyAvailable, time.Minute); err != nil {
			return err
		}
	}
	r.report.Redeployed = time.Since(created)
	r.printf("created again: every pod ready and the policies Available %s later\n", r.report.Redeployed.Round(10*time.Millisecond))
	return r.kubectl(ctx, "get", "nmstate,nncp")
}

func (r *run) delete(ctx context.Context) error {
	start := time.Now()
	for _, n := range r.c.Nodes {
		if err := r.deletePolicy(ctx, BridgePolicy(n.Name)); err != nil {
			return err
		}
	}
	r.report.NodesAfterDelete = map[string]string{}
	for _, n := range r.c.Nodes {
		var active string
		if err := wait.PollUntilContextTimeout(ctx, poll, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			out, err := n.Run(ctx, "nmcli", "-g", "GENERAL.CONNECTION", "device", "show", lc.SecondNIC)
			active = out
			return err == nil && out == lc.SecondNIC+"-persistent", nil
		}); err != nil {
			return fmt.Errorf("%s: %s runs %q, not its persistent profile: %w", n.Name, lc.SecondNIC, active, err)
		}
		r.report.NodesAfterDelete[n.Name] = active
		if err := r.expectAddress(ctx, n, lc.SecondNIC, n.SecondNICAddress+"/24"); err != nil {
			return err
		}
	}
	r.report.Deleted = time.Since(start)
	nodeA := r.c.Nodes[0]
	r.show(ctx, nodeA, "nmcli", "-f", "NAME,DEVICE,FILENAME", "connection", "show")
	r.show(ctx, nodeA, "nm-overlay", "status")
	upper, err := status(ctx, nodeA)
	if err != nil {
		return err
	}
	r.report.UpperAfterDelete = upper
	if holdsProfile(upper, Bridge) {
		return fmt.Errorf("the tmpfs layer still holds %s: %v", Bridge, upper)
	}
	return r.kubectl(ctx, "get", "nncp,nnce")
}

func (r *run) enactment(ctx context.Context, node, policy string) (*v1beta1.NodeNetworkConfigurationEnactment, error) {
	e := &v1beta1.NodeNetworkConfigurationEnactment{}
	return e, r.k8s.Get(ctx, client.ObjectKey{Name: shared.EnactmentKey(node, policy)}, e)
}

// waitPolicy waits until the controller reports the condition on the policy's current
// generation.
func (r *run) waitPolicy(ctx context.Context, name, condition string, timeout time.Duration) error {
	var last []metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, poll, timeout, true, func(ctx context.Context) (bool, error) {
		p := &nmstatev1.NodeNetworkConfigurationPolicy{}
		if err := r.k8s.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			return false, err
		}
		last = p.Status.Conditions
		c := meta.FindStatusCondition(p.Status.Conditions, condition)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == p.Generation, nil
	})
	if err != nil {
		return fmt.Errorf("policy %s not %s: %w (conditions %v)", name, condition, err, last)
	}
	return nil
}

func (r *run) deletePolicy(ctx context.Context, name string) error {
	p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := r.k8s.Delete(ctx, p); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, poll, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := r.k8s.Get(ctx, client.ObjectKeyFromObject(p), p)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

func (r *run) expectAddress(ctx context.Context, n *lc.Node, dev, addr string) error {
	var out string
	err := wait.PollUntilContextTimeout(ctx, poll, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		out, _ = n.Run(ctx, "ip", "-4", "-o", "addr", "show", "dev", dev)
		return strings.Contains(out, " "+addr+" "), nil
	})
	if err != nil {
		return fmt.Errorf("%s: %s has no %s (%q)", n.Name, dev, addr, out)
	}
	r.printf("%s: %s has %s\n", n.Name, dev, addr)
	return nil
}

func isTrue(conds []metav1.Condition, t string) bool {
	c := meta.FindStatusCondition(conds, t)
	return c != nil && c.Status == metav1.ConditionTrue
}

// status is `nm-overlay status` on the node, parsed.
func status(ctx context.Context, n *lc.Node) ([]overlay.ProfileChange, error) {
	out, err := n.Run(ctx, "nm-overlay", "status", "-o", "json")
	if err != nil {
		return nil, err
	}
	var changes []overlay.ProfileChange
	if err := json.Unmarshal([]byte(out), &changes); err != nil {
		return nil, fmt.Errorf("nm-overlay status -o json: %w: %s", err, out)
	}
	return changes, nil
}

func holdsProfile(changes []overlay.ProfileChange, iface string) bool {
	for _, c := range changes {
		if c.Interface == iface && c.Change == overlay.Added {
			return true
		}
	}
	return false
}
