// Package demo is nmoverlay's main job walked through on a local cluster (localcluster):
// a policy applied to two nodes, what it left on a node (the tmpfs layer only), a reboot
// and the policy re-applied, a policy that breaks the gateway rolled back, a deleted policy
// and the nodes back on their persistent profiles. `make demo` prints it; the boot tier
// runs the same steps and asserts the Report. Every step checks its own outcome and fails
// the run when it was not reached.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/machineconfigs"
	"github.com/nmoverlay/nmoverlay/overlay"
	"github.com/nmoverlay/nmoverlay/test/fabric"
	lc "github.com/nmoverlay/nmoverlay/test/localcluster"
)

// The demo's policies.
const (
	BridgePolicy     = "demo-bridge"
	BadGatewayPolicy = "demo-bad-gateway"
	Bridge           = "br-demo"
	bridgeAddress    = "198.51.100.1"
	routeDestination = "203.0.113.0/24"
	badGateway       = "192.0.2.99"
)

// bridgeState moves each node's second NIC into a bridge with a static address and a route:
// one desiredState for every node it selects, as kubernetes-nmstate writes it. (Each
// node's second NIC is a segment of its own, so the nodes may share the address.)
var bridgeState = fmt.Sprintf(`{"interfaces":[{"name":%q,"type":"linux-bridge","state":"up",
  "ipv4":{"enabled":true,"dhcp":false,"address":[{"ip":%q,"prefix-length":24}]},
  "bridge":{"options":{"stp":{"enabled":false}},"port":[{"name":%q}]}}],
 "routes":{"config":[{"destination":%q,"next-hop-address":"198.51.100.254","next-hop-interface":%q}]}}`,
	Bridge, bridgeAddress, lc.SecondNIC, routeDestination, Bridge)

// badGatewayState points the default route at an address nobody answers on.
var badGatewayState = fmt.Sprintf(`{"routes":{"config":[{"destination":"0.0.0.0/0","next-hop-address":%q,"next-hop-interface":%q,"metric":10}]}}`,
	badGateway, lc.Uplink)

// poll is how often a step looks again for the outcome it waits for.
const poll = 250 * time.Millisecond

// Options for Run.
type Options struct {
	Cluster lc.Options
	// Kubectl is the kubectl binary that shows the objects, as an administrator sees them.
	Kubectl string
	Out     io.Writer
}

// Report is what the run measured and saw, step by step.
type Report struct {
	Steps []Step
	// StartCluster: the control plane up and both nodes booted.
	StartCluster time.Duration
	// Applied: policy created to Available on every node.
	Applied time.Duration
	// Denial is what the API server told one node's handler that tried to delete another
	// node's enactment.
	Denial string
	// UpperLayer is what `nm-overlay status` listed on the first node after the apply;
	// LowerLayer the files of the persistent dir.
	UpperLayer []overlay.ProfileChange
	LowerLayer []string
	// Reboot: the reboot was asked for until the policy was Available in the new boot;
	// Reconverge is the handler's own figure (nmoverlay_boot_reconvergence_seconds).
	BootIDs    [2]string
	Reboot     time.Duration
	Reconverge time.Duration
	// BadGateway is the failing enactment's message; DefaultRouteAfter the node's
	// default route once it was rolled back.
	BadGateway        string
	DefaultRouteAfter string
	// Deleted: policy deleted until every node was back on its persistent profiles;
	// UpperAfterDelete is what the tmpfs layer held then.
	Deleted          time.Duration
	UpperAfterDelete []overlay.ProfileChange
	// NodesAfterDelete maps each node to the profile its second NIC runs.
	NodesAfterDelete map[string]string
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
	report *Report
}

// Run starts the cluster, walks through the scenario and takes everything down again.
func Run(ctx context.Context, o Options) (*Report, error) {
	r := &run{o: o, report: &Report{}}
	err := r.steps(ctx)
	if r.c != nil {
		cleanErr := r.step("clean up: power the nodes off, stop the controller, the API server and etcd, remove the fabric", func() error {
			r.c.Close()
			if left := r.c.Leftovers(); len(left) > 0 {
				return fmt.Errorf("left behind: %s", strings.Join(left, "; "))
			}
			r.printf("no process, network namespace, interface or directory of the demo is left\n")
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
		return fmt.Errorf("no kubectl given (hack/kubectl.sh builds one)")
	}
	if len(r.o.Cluster.Nodes) != 2 {
		return fmt.Errorf("the demo runs on two nodes, not %d", len(r.o.Cluster.Nodes))
	}
	if err := r.step("render the MachineConfig for the worker pool (Ignition 3.2.0)", func() error {
		mcs, err := machineconfigs.Render(machineconfigs.Options{Pools: []string{"worker"}})
		if err != nil {
			return err
		}
		yaml, err := machineconfigs.Marshal(mcs)
		if err != nil {
			return err
		}
		r.printf("%d bytes of YAML for `oc apply -f -`; on each node it writes:\n", len(yaml))
		for _, f := range overlay.DefaultLayout().MachineConfigFiles() {
			r.printf("    %s\n", f)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := r.step(fmt.Sprintf("start kube-apiserver and etcd, a fabric network (gateway %s, where the API server answers) and the controller; boot %s with systemd-nspawn, the MachineConfig laid down, nm-overlay and the handler as units (deploy/'s RBAC and admission policies in force)",
		fabric.Gateway, strings.Join(r.o.Cluster.Nodes, " and ")), func() error {
		start := time.Now()
		c, err := lc.Start(ctx, r.o.Cluster)
		r.c = c
		if err != nil {
			return err
		}
		r.k8s = c.Client
		r.report.StartCluster = time.Since(start)
		for _, n := range c.Nodes {
			r.printf("%s$ nm-overlay verify\n", n.Name)
			out, err := n.Run(ctx, "nm-overlay", "verify")
			r.printf("%s\n", indent(out))
			if err != nil {
				return fmt.Errorf("%s: nm-overlay verify: %w", n.Name, err)
			}
		}
		r.show(ctx, c.Nodes[0], "nmcli", "-f", "NAME,DEVICE,FILENAME", "connection", "show")
		return nil
	}); err != nil {
		return err
	}
	nodeA, nodeB := r.c.Nodes[0], r.c.Nodes[1]

	if err := r.step(fmt.Sprintf("day 2: apply policy %s (bridge %s on %s, a static address, a route) to every worker", BridgePolicy, Bridge, lc.SecondNIC), func() error {
		start := time.Now()
		p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: BridgePolicy}}
		p.Spec.NodeSelector = map[string]string{"node-role.kubernetes.io/worker": ""}
		p.Spec.DesiredState = shared.State{Raw: []byte(bridgeState)}
		if err := r.k8s.Create(ctx, p); err != nil {
			return err
		}
		if err := r.waitPolicy(ctx, BridgePolicy, shared.PolicyAvailable, 2*time.Minute); err != nil {
			return err
		}
		r.report.Applied = time.Since(start)
		r.printf("Available on every node after %s\n", r.report.Applied.Round(10*time.Millisecond))
		if err := r.kubectl(ctx, "get", "nncp,nnce"); err != nil {
			return err
		}
		for _, n := range r.c.Nodes {
			if err := r.expectAddress(ctx, n, Bridge, bridgeAddress+"/24"); err != nil {
				return err
			}
		}
		r.show(ctx, nodeA, "ip", "route", "show", routeDestination)
		return nil
	}); err != nil {
		return err
	}

	if err := r.step(fmt.Sprintf("per-node authority: %s's handler (its service account token, bound to its pod on %s) may not touch %s's enactment",
		nodeA.Name, nodeA.Name, nodeB.Name), func() error {
		who := nodeA.Name + " handler"
		if _, err := r.kubectlAs(ctx, who, nodeA.HandlerKubeconfig, "auth", "whoami"); err != nil {
			return err
		}
		victim := shared.EnactmentKey(nodeB.Name, BridgePolicy)
		out, err := r.kubectlAs(ctx, who, nodeA.HandlerKubeconfig, "delete", "nnce", victim)
		if err == nil {
			return fmt.Errorf("%s's handler deleted %s", nodeA.Name, victim)
		}
		r.report.Denial = out
		if !strings.Contains(out, nodeA.Name) || !strings.Contains(out, nodeB.Name) {
			return fmt.Errorf("the denial does not name both nodes: %s", out)
		}
		if _, err := r.enactment(ctx, nodeB.Name, BridgePolicy); err != nil {
			return fmt.Errorf("%s after the denied delete: %w", victim, err)
		}
		return nil
	}); err != nil {
		return err
	}

	if err := r.step(fmt.Sprintf("%s: the policy's profiles live in the tmpfs layer only; the persistent dir is as MCO wrote it", nodeA.Name), func() error {
		r.show(ctx, nodeA, "nm-overlay", "status")
		upper, err := status(ctx, nodeA)
		if err != nil {
			return err
		}
		r.report.UpperLayer = upper
		if !holdsProfile(upper, Bridge) {
			return fmt.Errorf("the tmpfs layer holds no profile of %s: %v", Bridge, upper)
		}
		lower := r.show(ctx, nodeA, "ls", overlay.NMDefaultKeyfile)
		r.report.LowerLayer = strings.Fields(lower)
		if strings.Contains(lower, Bridge) {
			return fmt.Errorf("a profile of %s reached the persistent dir: %s", Bridge, lower)
		}
		return nil
	}); err != nil {
		return err
	}

	if err := r.step(fmt.Sprintf("reboot %s: the tmpfs layer is gone; the handler re-applies every policy in the new boot", nodeA.Name), func() error {
		before, err := nodeA.BootID(ctx)
		if err != nil {
			return err
		}
		start := time.Now()
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
			e, err := r.enactment(ctx, nodeA.Name, BridgePolicy)
			if err != nil {
				return false, client.IgnoreNotFound(err)
			}
			return e.Status.BootID == after && isTrue(e.Status.Conditions, shared.EnactmentAvailable), nil
		}); err != nil {
			return fmt.Errorf("the enactment never became Available in boot %s: %w", after, err)
		}
		r.report.Reboot = time.Since(start)
		// Scraped across the fabric as Prometheus would; the fabric may still hold the
		// uplink's neighbour entry of the previous boot, so errors are retried.
		var scrapeErr error
		if err := wait.PollUntilContextTimeout(ctx, poll, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			v, ok, err := r.c.Metric(nodeA, "nmoverlay_boot_reconvergence_seconds")
			r.report.Reconverge, scrapeErr = time.Duration(v*float64(time.Second)), err
			return ok && err == nil, nil
		}); err != nil {
			return fmt.Errorf("reading the handler's re-convergence metric: %w (last error: %v)", err, scrapeErr)
		}
		r.printf("boot %s… → %s…: systemd booted in %s; the policy was Available again %s after the reboot began; the handler re-applied it %s after it started (nmoverlay_boot_reconvergence_seconds)\n",
			before[:8], after[:8], booted.Round(10*time.Millisecond), r.report.Reboot.Round(10*time.Millisecond), r.report.Reconverge.Round(time.Millisecond))
		if err := r.expectAddress(ctx, nodeA, Bridge, bridgeAddress+"/24"); err != nil {
			return err
		}
		return r.kubectl(ctx, "get", "nnce", "-l", shared.NodeLabel+"="+nodeA.Name)
	}); err != nil {
		return err
	}

	if err := r.step(fmt.Sprintf("policy %s points %s's default route at %s, where nobody answers: the gateway probe fails and the node rolls back", BadGatewayPolicy, nodeA.Name, badGateway), func() error {
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
		if c := meta.FindStatusCondition(e.Status.Conditions, shared.EnactmentFailing); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("enactment %s is not Failing: %v", e.Name, e.Status.Conditions)
		} else {
			r.report.BadGateway = c.Message
		}
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
		if err := r.expectAddress(ctx, nodeA, Bridge, bridgeAddress+"/24"); err != nil {
			return err
		}
		return r.deletePolicy(ctx, BadGatewayPolicy)
	}); err != nil {
		return err
	}

	return r.step(fmt.Sprintf("delete policy %s: every node is back on its persistent profiles, without a reboot", BridgePolicy), func() error {
		start := time.Now()
		if err := r.deletePolicy(ctx, BridgePolicy); err != nil {
			return err
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
	})
}

func (r *run) enactment(ctx context.Context, node, policy string) (*v1beta1.NodeNetworkConfigurationEnactment, error) {
	e := &v1beta1.NodeNetworkConfigurationEnactment{}
	return e, r.k8s.Get(ctx, client.ObjectKey{Name: node + "." + policy}, e)
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
