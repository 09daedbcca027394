package localcluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/deploy"
	"github.com/nmoverlay/nmoverlay/internal/machineconfigs"
	"github.com/nmoverlay/nmoverlay/internal/paths"
	"github.com/nmoverlay/nmoverlay/test/fabric"
)

// Workloads names what nmoverlay runs: the operator's Deployment (deploy/) and what it
// deploys (deploy/operand/), the handler's DaemonSet and the controller's Deployment, in
// their namespace, and the image they run as published (what an administrator's
// kustomization replaces).
type Workloads struct{ Namespace, Operator, Handler, Controller, Image string }

// DeployWorkloads reads the names from deploy/.
func DeployWorkloads() (Workloads, error) {
	install, err := deploy.Objects(deploy.Options{})
	if err != nil {
		return Workloads{}, err
	}
	operand, err := deploy.Operand(deploy.Options{})
	if err != nil {
		return Workloads{}, err
	}
	var w Workloads
	for _, o := range install {
		switch o.GetKind() {
		case "Namespace":
			w.Namespace = o.GetName()
		case "Deployment":
			w.Operator = o.GetName()
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			if len(containers) > 0 {
				w.Image, _, _ = unstructured.NestedString(containers[0].(map[string]any), "image")
			}
		}
	}
	for _, o := range operand {
		switch o.GetKind() {
		case "DaemonSet":
			w.Handler = o.GetName()
		case "Deployment":
			w.Controller = o.GetName()
		}
	}
	if w.Namespace == "" || w.Operator == "" || w.Handler == "" || w.Controller == "" || w.Image == "" {
		return w, fmt.Errorf("deploy/ has no namespace, operator, DaemonSet or Deployment: %+v", w)
	}
	return w, nil
}

// Kustomization is what an administrator writes to install deploy/ (at deployDir) with
// the image the nodes hold in place of the published one.
func (c *Cluster) Kustomization(deployDir string, w Workloads) (dir, content string, err error) {
	return c.KustomizationOf("install", deployDir, c.Image, w)
}

// KustomizationOf writes, in a directory of its own (name), the kustomization that
// installs the manifests at deployDir (deploy/ of this tree or of another version) with
// image in place of the published one.
func (c *Cluster) KustomizationOf(name, deployDir, image string, w Workloads) (dir, content string, err error) {
	dir = filepath.Join(c.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	abs, err := filepath.Abs(deployDir)
	if err != nil {
		return "", "", err
	}
	rel, err := filepath.Rel(dir, abs)
	if err != nil {
		return "", "", err
	}
	newName, tag := splitTag(image)
	published, _ := splitTag(w.Image)
	content = fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %s
images:
- name: %s
  newName: %s
  newTag: %s
`, rel, published, newName, tag)
	return dir, content, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(content), 0o644)
}

// splitTag splits name:tag (a registry's port is not a tag).
func splitTag(ref string) (name, tag string) {
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i], ref[i+1:]
	}
	return ref, ""
}

// Kubectl runs kubectl as the administrator and returns what it printed.
func (c *Cluster) Kubectl(ctx context.Context, kubectl string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", c.Kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// WaitOperator waits until the operator's Deployment is available at its current
// generation.
func (c *Cluster) WaitOperator(ctx context.Context, w Workloads) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		d := &appsv1.Deployment{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: w.Operator}, d); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		last = fmt.Sprintf("operator %d/%d available", d.Status.AvailableReplicas, d.Status.Replicas)
		return d.Status.ObservedGeneration == d.Generation && d.Spec.Replicas != nil && d.Status.AvailableReplicas == *d.Spec.Replicas &&
			d.Status.UpdatedReplicas == *d.Spec.Replicas, nil
	})
	if err != nil {
		return fmt.Errorf("the operator is not running (%s): %w", last, err)
	}
	return nil
}

// WaitInstalled waits until the handler's pod is ready on every node and the controller's
// Deployment is available, at their current generation.
func (c *Cluster) WaitInstalled(ctx context.Context, w Workloads) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		ds := &appsv1.DaemonSet{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: w.Handler}, ds); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		d := &appsv1.Deployment{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: w.Controller}, d); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		st := ds.Status
		last = fmt.Sprintf("handler %d/%d ready, %d updated; controller %d/%d available",
			st.NumberReady, st.DesiredNumberScheduled, st.UpdatedNumberScheduled, d.Status.AvailableReplicas, d.Status.Replicas)
		return st.ObservedGeneration == ds.Generation && st.DesiredNumberScheduled == int32(len(c.Nodes)) &&
			st.NumberReady == st.DesiredNumberScheduled && st.UpdatedNumberScheduled == st.DesiredNumberScheduled &&
			d.Status.ObservedGeneration == d.Generation && d.Spec.Replicas != nil && d.Status.AvailableReplicas == *d.Spec.Replicas, nil
	})
	if err != nil {
		return fmt.Errorf("nmoverlay not running (%s): %w", last, err)
	}
	return nil
}

// ApplyMachineConfig does on the node what MCO does with a MachineConfig: it writes the
// rendered files and units into the node's root, reboots it and waits until it is Ready.
func (c *Cluster) ApplyMachineConfig(ctx context.Context, n *Node) error {
	if err := machineconfigs.WriteToRoot(n.Root, machineconfigs.Options{Pools: []string{"worker"}}); err != nil {
		return err
	}
	return c.Reboot(ctx, n)
}

// ApplyMachineConfigFile does on the node what MCO does with the MachineConfig in file (as
// `nmoverlay render` writes it): its Ignition config written into the node's root, then a
// reboot.
func (c *Cluster) ApplyMachineConfigFile(ctx context.Context, n *Node, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var mc machineconfigs.MachineConfig
	if err := yaml.Unmarshal(b, &mc); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if mc.Kind != machineconfigs.Kind || len(mc.Spec.Config) == 0 {
		return fmt.Errorf("%s: not a MachineConfig with spec.config", file)
	}
	if err := machineconfigs.ApplyIgnition(n.Root, mc.Spec.Config); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return c.Reboot(ctx, n)
}

// Reboot reboots the node (systemd's reboot, a new boot ID) and waits until its kubelet
// has it Ready again.
func (c *Cluster) Reboot(ctx context.Context, n *Node) error {
	if err := n.Machine.Reboot(ctx); err != nil {
		return err
	}
	return c.WaitReady(ctx, n)
}

// Scrape asks the handler on node n for its metrics across the fabric, as Prometheus does:
// HTTPS to the node's address, with token as its bearer token (none: ""). The handler's
// serving certificate is self-signed (controller-runtime makes one when given none), so it
// is not verified here; Prometheus on OpenShift is given the service CA's.
func (c *Cluster) Scrape(n *Node, port int, token string) (status int, body string, err error) {
	addr := net.JoinHostPort(n.Address, strconv.Itoa(port))
	// The connection is made in the fabric (a socket stays in the netns it was made in);
	// the request is written here.
	var conn net.Conn
	if err := fabric.InNetNS("/var/run/netns/"+c.fabric, func() error {
		var err error
		conn, err = net.DialTimeout("tcp", addr, 5*time.Second)
		return err
	}); err != nil {
		return 0, "", err
	}
	tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // see above
	defer tc.Close()
	_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if err := req.Write(tc); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(tc), req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// Metric reads one of the handler's metrics (a gauge, a counter, or a histogram's _sum or
// _count) with Scrape. ok is false when the handler has not exported it (yet).
func (c *Cluster) Metric(n *Node, port int, token, name string) (value float64, ok bool, err error) {
	status, body, err := c.Scrape(n, port, token)
	if err != nil {
		return 0, false, err
	}
	if status != http.StatusOK {
		return 0, false, fmt.Errorf("metrics: HTTP %d: %s", status, strings.TrimSpace(body))
	}
	for _, line := range strings.Split(body, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == name {
			v, err := strconv.ParseFloat(f[1], 64)
			return v, err == nil, err
		}
	}
	return 0, false, nil
}

// Diagnose is what an administrator would look at on node n when something did not
// happen: its pods as the API server has them, the last lines of the handler's log (the
// kubelet keeps it under /var/log/pods), and of the kubelet's journal.
func (c *Cluster) Diagnose(ctx context.Context, n *Node, w Workloads) string {
	var b strings.Builder
	pods := &corev1.PodList{}
	if err := c.Client.List(ctx, pods, client.InNamespace(w.Namespace)); err == nil {
		for _, p := range pods.Items {
			if p.Spec.NodeName != n.Name {
				continue
			}
			fmt.Fprintf(&b, "pod %s: %s", p.Name, p.Status.Phase)
			for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
				fmt.Fprintf(&b, "; %s ready=%t restarts=%d", cs.Name, cs.Ready, cs.RestartCount)
			}
			b.WriteString("\n")
		}
	}
	for _, cmd := range []string{
		"tail -n 40 /var/log/pods/" + w.Namespace + "_" + w.Handler + "-*/handler/*.log",
		"journalctl -b -u " + KubeletUnit + " --no-pager -n 20",
		"journalctl -b -u " + paths.HelperService + " -u " + paths.EnableService + " --no-pager -n 20",
	} {
		out, err := n.Run(ctx, "sh", "-c", cmd)
		fmt.Fprintf(&b, "%s$ %s\n%s\n", n.Name, cmd, out)
		if err != nil {
			fmt.Fprintf(&b, "(%v)\n", err)
		}
	}
	return b.String()
}
