// Package localcluster is a cluster on one machine made of real parts: kube-apiserver and
// etcd (envtest) answering on a fabric network namespace; systemd-nspawn nodes booted from
// a Debian root on which the rendered MachineConfig was laid down, with nm-overlay and the
// handler as systemd units, their uplinks on the fabric's bridge; the cluster controller as
// a process. `make demo` and the boot tier's demo test run on it.
package localcluster

import (
	"bufio"
	"context"
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

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nmoverlay/nmoverlay/api"
	"github.com/nmoverlay/nmoverlay/deploy"
	"github.com/nmoverlay/nmoverlay/machineconfigs"
	"github.com/nmoverlay/nmoverlay/overlay"
	"github.com/nmoverlay/nmoverlay/test/fabric"
	"github.com/nmoverlay/nmoverlay/test/nspawn"
)

// Node interface names. Every node calls its uplink Uplink (moved in from the host at each
// boot, so nodes boot one at a time) and has a node-local second NIC, SecondNIC.
const (
	Uplink    = "eno1"
	SecondNIC = "eth1"
	// bridge in the fabric netns: the nodes' switch, holding their gateway.
	fabricBridge = "fab0"
	// HandlerUnit runs the handler on a node as the DaemonSet's pod would.
	HandlerUnit = "nmoverlay-handler.service"
	// HandlerMetricsPort serves the handler's metrics on the node's addresses (as the
	// DaemonSet's hostNetwork pod does); read across the fabric, as Prometheus would.
	HandlerMetricsPort = 8089
	handlerBinary      = "/usr/local/bin/nmoverlay-handler"
	handlerKubeconfig  = "/etc/nmoverlay-handler/kubeconfig"
)

const handlerUnit = `[Unit]
Description=nmoverlay handler (what the DaemonSet's pod runs)
Wants=NetworkManager.service
After=NetworkManager.service nm-overlay.service

[Service]
ExecStart=` + handlerBinary + ` --node %s --kubeconfig ` + handlerKubeconfig + ` --metrics-bind-address :%d --health-probe-bind-address 0
Restart=always
RestartSec=1

[Install]
WantedBy=multi-user.target
`

// secondNICUnit makes the node's second NIC before NetworkManager starts, as hardware would:
// a veth whose peer stays in the node (a segment of its own).
const secondNICUnit = `[Unit]
Description=the node's second NIC
DefaultDependencies=no
Before=NetworkManager.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/sbin/ip link add ` + SecondNIC + ` type veth peer name ` + SecondNIC + `p
ExecStart=/usr/sbin/ip link set ` + SecondNIC + `p up
`

// profile is a persistent keyfile, as MCO lays it down in the lower layer.
func profile(id, uuid, ifname, addr, gateway string) string {
	if gateway != "" {
		addr += "," + gateway
	}
	return fmt.Sprintf(`[connection]
id=%s
uuid=%s
type=ethernet
interface-name=%s

[ipv4]
method=manual
address1=%s

[ipv6]
method=disabled
`, id, uuid, ifname, addr)
}

// Binaries are what the nodes and the control plane run.
type Binaries struct{ Helper, Handler, Controller string }

// Options describe the cluster.
type Options struct {
	Rootfs   string   // a Debian root filesystem with systemd and NetworkManager (hack/rootfs.sh)
	CRDs     string   // deploy/crds
	Nodes    []string // node names, booted in this order
	Binaries Binaries
	// Log receives the controller's log; nil discards it.
	Log io.Writer
}

// Node is one nspawn node.
type Node struct {
	*nspawn.Machine
	Name string
	// Address is the uplink's persistent address (without prefix).
	Address string
	// SecondNICAddress is the persistent address of SecondNIC.
	SecondNICAddress string
	// HandlerKubeconfig holds the node's handler credentials (its token, bound to its
	// stand-in Pod) for the API server's loopback address: act as that handler from here.
	HandlerKubeconfig string
	fabricPeer        string
}

// Cluster is the control plane, the fabric and the nodes.
type Cluster struct {
	Client client.Client
	Nodes  []*Node
	// Kubeconfig is an administrator's kubeconfig for the API server (loopback).
	Kubeconfig string
	fabric     string
	dir        string
	cleanups   []func()
	// markers are paths in the command line of every process the cluster started.
	markers   []string
	caData    []byte
	apiServer string
	// Where deploy/ puts the handler and the controller, and as whom they run.
	namespace, handlerSA, controllerSA string
}

// Start brings the whole cluster up; Close takes all of it down, also after a failed Start.
func Start(ctx context.Context, o Options) (c *Cluster, err error) {
	if len(o.Nodes) == 0 || len(o.Nodes) > 50 {
		return nil, fmt.Errorf("nodes: want 1..50, got %d", len(o.Nodes))
	}
	dir, err := os.MkdirTemp("", "nmoverlay-localcluster-")
	if err != nil {
		return nil, err
	}
	c = &Cluster{dir: dir, fabric: fmt.Sprintf("nmo-fab-%d", os.Getpid())}
	c.onClose(func() { os.RemoveAll(dir) })
	defer func() {
		if err != nil {
			c.Close()
			c = nil
		}
	}()

	env := &envtest.Environment{CRDDirectoryPaths: []string{o.CRDs}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		return c, fmt.Errorf("starting kube-apiserver and etcd: %w", err)
	}
	c.onClose(func() { _ = env.Stop() })
	c.markers = append(c.markers, env.ControlPlane.APIServer.CertDir, env.ControlPlane.Etcd.DataDir)
	scheme, err := api.NewScheme()
	if err != nil {
		return c, err
	}
	if c.Client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return c, err
	}
	admin, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return c, err
	}
	kc, err := admin.KubeConfig()
	if err != nil {
		return c, err
	}
	c.Kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	if err := os.WriteFile(c.Kubeconfig, kc, 0o600); err != nil {
		return c, err
	}

	c.caData, c.apiServer = cfg.CAData, cfg.Host
	if err := c.installDeploy(ctx); err != nil {
		return c, fmt.Errorf("installing deploy/: %w", err)
	}
	if err := c.startFabric(cfg.Host); err != nil {
		return c, err
	}
	if err := c.startController(ctx, o, cfg.Host); err != nil {
		return c, err
	}
	// What the DaemonSet puts on every node, read once.
	helper, err := os.ReadFile(o.Binaries.Helper)
	if err != nil {
		return c, err
	}
	handler, err := os.ReadFile(o.Binaries.Handler)
	if err != nil {
		return c, err
	}
	for i, name := range o.Nodes {
		n, err := c.addNode(ctx, o.Rootfs, name, i, helper, handler)
		if err != nil {
			return c, fmt.Errorf("node %s: %w", name, err)
		}
		c.Nodes = append(c.Nodes, n)
	}
	return c, nil
}

// onClose registers f to run at Close, after everything registered later.
func (c *Cluster) onClose(f func()) { c.cleanups = append(c.cleanups, f) }

// Close stops everything Start started, in reverse order, and removes its files.
func (c *Cluster) Close() {
	for i := len(c.cleanups) - 1; i >= 0; i-- {
		c.cleanups[i]()
	}
	c.cleanups = nil
}

// Leftovers lists what a closed cluster left behind: processes it started (found by the
// paths in their command lines), the fabric netns, a node's uplink on the host, its files.
func (c *Cluster) Leftovers() []string {
	var left []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		cmdline := strings.ReplaceAll(string(b), "\x00", " ")
		for _, m := range append([]string{c.dir}, c.markers...) {
			if m != "" && strings.Contains(cmdline, m) {
				left = append(left, fmt.Sprintf("process %s: %s", filepath.Base(filepath.Dir(p)), cmdline))
				break
			}
		}
	}
	if _, err := os.Stat("/var/run/netns/" + c.fabric); err == nil {
		left = append(left, "network namespace "+c.fabric)
	}
	if _, err := net.InterfaceByName(Uplink); err == nil {
		left = append(left, "host interface "+Uplink)
	}
	for _, m := range append([]string{c.dir}, c.markers...) {
		if _, err := os.Stat(m); m != "" && err == nil {
			left = append(left, "directory "+m)
		}
	}
	return left
}

func ip(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// startFabric makes the fabric netns: a bridge with the nodes' gateway, where the API
// server answers. The nodes reach it only through their uplinks.
func (c *Cluster) startFabric(apiServer string) error {
	_ = exec.Command("ip", "netns", "del", c.fabric).Run() // a crashed run's leftover
	if err := ip("netns", "add", c.fabric); err != nil {
		return err
	}
	c.onClose(func() { _ = exec.Command("ip", "netns", "del", c.fabric).Run() })
	for _, args := range [][]string{
		{"-n", c.fabric, "link", "set", "lo", "up"},
		{"-n", c.fabric, "link", "add", fabricBridge, "type", "bridge"},
		{"-n", c.fabric, "addr", "add", fabric.Gateway + "/24", "dev", fabricBridge},
		{"-n", c.fabric, "link", "set", fabricBridge, "up"},
	} {
		if err := ip(args...); err != nil {
			return err
		}
	}
	stop, err := fabric.ServeAPI(c.fabric, apiServer)
	if err != nil {
		return err
	}
	c.onClose(stop)
	return nil
}

// installDeploy applies what `kubectl apply -k deploy/` applies (CRDs, namespace, service
// accounts, RBAC, admission policies) but the workloads: no kubelet runs here, so the nodes
// run the handler as a unit and the controller runs as a process here, each as its
// service account with a token bound to a stand-in Pod, as their pods would.
func (c *Cluster) installDeploy(ctx context.Context) error {
	objs, err := deploy.Objects(deploy.Options{})
	if err != nil {
		return err
	}
	for _, o := range objs {
		sa, _, _ := unstructured.NestedString(o.Object, "spec", "template", "spec", "serviceAccountName")
		switch o.GetKind() {
		case "Namespace":
			c.namespace = o.GetName()
		case "DaemonSet":
			c.handlerSA = sa
			continue
		case "Deployment":
			c.controllerSA = sa
			continue
		}
		if err := c.Client.Patch(ctx, o, client.Apply, client.FieldOwner("localcluster"), client.ForceOwnership); err != nil {
			return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	if c.namespace == "" || c.handlerSA == "" || c.controllerSA == "" {
		return fmt.Errorf("no namespace, handler DaemonSet or controller Deployment with a service account in deploy/")
	}
	return nil
}

// boundToken is a token of service account sa bound to a stand-in Pod named pod on node
// (none: ""). The API server puts the Pod's node in the token's user info
// (authentication.kubernetes.io/node-name), which the admission policies hold the
// handler to.
func (c *Cluster) boundToken(ctx context.Context, sa, pod, node string) (string, error) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: c.namespace},
		Spec: corev1.PodSpec{ServiceAccountName: sa, NodeName: node,
			Containers: []corev1.Container{{Name: "stand-in", Image: deploy.ImageName}}},
	}
	if err := c.Client.Create(ctx, p); err != nil {
		return "", fmt.Errorf("stand-in pod %s: %w", pod, err)
	}
	day := int64(24 * 3600)
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &day,
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID}}}
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: c.namespace}}
	if err := c.Client.SubResource("token").Create(ctx, account, tr); err != nil {
		return "", fmt.Errorf("token for %s: %w", sa, err)
	}
	return tr.Status.Token, nil
}

// startController runs the cluster controller as its own process, as its Deployment
// would: its service account, leader election in its namespace.
func (c *Cluster) startController(ctx context.Context, o Options, apiServer string) error {
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	token, err := c.boundToken(ctx, c.controllerSA, c.controllerSA+"-0", "")
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(c.dir, "controller.kubeconfig")
	if err := fabric.WriteKubeconfig(kubeconfig, apiServer, c.caData, &clientcmdapi.AuthInfo{Token: token}); err != nil {
		return err
	}
	cmd := exec.Command(o.Binaries.Controller, "--kubeconfig", kubeconfig, "--leader-elect=true", "--leader-election-namespace", c.namespace,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the controller: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	c.onClose(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return nil
}

// addNode prepares a node's root as MCO and the DaemonSet would leave it, registers its
// Node, and boots it.
func (c *Cluster) addNode(ctx context.Context, rootfs, name string, i int, helper, handler []byte) (*Node, error) {
	m, err := nspawn.New(rootfs, name)
	if err != nil {
		return nil, err
	}
	n := &Node{Machine: m, Name: name, Address: fmt.Sprintf("192.0.2.%d", 11+i),
		SecondNICAddress: fmt.Sprintf("198.51.100.%d", 11+i), fabricPeer: fmt.Sprintf("nmo-gw%d-%d", i, os.Getpid()%10000)}
	// nspawn moves the uplink back to the host when the machine stops: delete it after.
	c.onClose(func() { _ = exec.Command("ip", "link", "del", Uplink).Run() })
	c.onClose(m.Close)
	c.markers = append(c.markers, m.Root)

	m.Interfaces = []string{Uplink}
	m.BeforeBoot = n.cable(c.fabric)
	token, err := c.boundToken(ctx, c.handlerSA, c.handlerSA+"-"+name, name)
	if err != nil {
		return nil, err
	}
	// The node's handler reaches the API server across the fabric.
	if err := fabric.WriteKubeconfig(filepath.Join(m.Root, handlerKubeconfig), "https://"+fabric.APIAddr, c.caData, &clientcmdapi.AuthInfo{Token: token}); err != nil {
		return nil, err
	}
	n.HandlerKubeconfig = filepath.Join(c.dir, name+"-handler-here.kubeconfig")
	if err := fabric.WriteKubeconfig(n.HandlerKubeconfig, c.apiServer, c.caData, &clientcmdapi.AuthInfo{Token: token}); err != nil {
		return nil, err
	}
	uuid := func(k int) string { return fmt.Sprintf("5a1b2c3d-%04x-4e5f-8a9b-%012x", i, k) }
	files := []struct {
		path, content string
		mode          os.FileMode
	}{
		// What MCO owns: the persistent profiles of the node's NICs.
		{filepath.Join(overlay.NMDefaultKeyfile, Uplink+".nmconnection"), profile(Uplink+"-persistent", uuid(1), Uplink, n.Address+"/24", fabric.Gateway), 0o600},
		{filepath.Join(overlay.NMDefaultKeyfile, SecondNIC+".nmconnection"), profile(SecondNIC+"-persistent", uuid(2), SecondNIC, n.SecondNICAddress+"/24", ""), 0o600},
		// The hardware: NetworkManager leaves veth devices to whoever made them (its udev
		// rules); these stand in for real NICs.
		{"/etc/systemd/system/second-nic.service", secondNICUnit, 0o644},
		{"/etc/NetworkManager/conf.d/50-localcluster-nics.conf",
			"[device-localcluster-nics]\nmatch-device=interface-name:" + Uplink + ";interface-name:" + SecondNIC + "\nmanaged=1\n\n" +
				// The second NIC's peer is the far end of its cable, not the node's.
				"[device-localcluster-cable]\nmatch-device=interface-name:" + SecondNIC + "p\nmanaged=0\n", 0o644},
		// What the DaemonSet puts on the node: the helper and the handler (its pod).
		{overlay.HelperBinary, string(helper), 0o755},
		{handlerBinary, string(handler), 0o755},
		{"/etc/systemd/system/" + HandlerUnit, fmt.Sprintf(handlerUnit, name, HandlerMetricsPort), 0o644},
		{"/etc/hostname", name + "\n", 0o644},
	}
	for _, f := range files {
		if err := n.WriteFile(f.path, f.content, f.mode); err != nil {
			return nil, err
		}
	}
	for link, target := range map[string]string{
		"/etc/systemd/system/NetworkManager.service.wants/second-nic.service": "/etc/systemd/system/second-nic.service",
		"/etc/systemd/system/multi-user.target.wants/" + HandlerUnit:          "/etc/systemd/system/" + HandlerUnit,
	} {
		p := filepath.Join(m.Root, link)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.Symlink(target, p); err != nil {
			return nil, err
		}
	}
	// The MachineConfig, applied as MCO applies it: its files and units, offline.
	if err := machineconfigs.WriteToRoot(m.Root, machineconfigs.Options{Pools: []string{"worker"}}); err != nil {
		return nil, err
	}

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "node-role.kubernetes.io/worker": ""}}}
	if err := c.Client.Create(ctx, node); err != nil {
		return nil, err
	}
	// No kubelet here: the node is Ready as far as the API server knows, also while it
	// reboots (as a real node is for its first 40 s down).
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(), Reason: "KubeletReady"}}
	if err := c.Client.Status().Update(ctx, node); err != nil {
		return nil, err
	}
	if err := m.Boot(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// cable plugs the node's uplink into the fabric's bridge before each boot (a veth goes
// away with the machine's network namespace when it stops).
func (n *Node) cable(fabricNS string) func() error {
	return func() error {
		_ = exec.Command("ip", "-n", fabricNS, "link", "del", n.fabricPeer).Run() // the previous boot's cable
		_ = exec.Command("ip", "link", "del", Uplink).Run()                       // one never plugged in
		for _, args := range [][]string{
			{"link", "add", Uplink, "type", "veth", "peer", "name", n.fabricPeer, "netns", fabricNS},
			{"-n", fabricNS, "link", "set", n.fabricPeer, "master", fabricBridge},
			{"-n", fabricNS, "link", "set", n.fabricPeer, "up"},
		} {
			if err := ip(args...); err != nil {
				return err
			}
		}
		return nil
	}
}

// WriteFile writes into the node's root filesystem (while it is off, as Ignition would).
func (n *Node) WriteFile(path, content string, mode os.FileMode) error {
	p := filepath.Join(n.Root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), mode)
}

// Run runs a command on the node and returns its output, trimmed.
func (n *Node) Run(ctx context.Context, args ...string) (string, error) {
	out, err := n.Exec(ctx, args[0], args[1:]...)
	return strings.TrimSpace(out), err
}

// BootID is the node's current boot ID.
func (n *Node) BootID(ctx context.Context) (string, error) {
	return n.Run(ctx, "cat", "/proc/sys/kernel/random/boot_id")
}

// Metric reads one of the handler's metrics (a gauge, a counter, or a histogram's _sum or
// _count) from its metrics endpoint, across the fabric. ok is false when the handler has
// not exported it (yet).
func (c *Cluster) Metric(n *Node, name string) (value float64, ok bool, err error) {
	addr := net.JoinHostPort(n.Address, strconv.Itoa(HandlerMetricsPort))
	// The connection is made in the fabric (a socket stays in the netns it was made in);
	// the request is written here.
	var conn net.Conn
	if err := fabric.InNetNS("/var/run/netns/"+c.fabric, func() error {
		var err error
		conn, err = net.DialTimeout("tcp", addr, 5*time.Second)
		return err
	}); err != nil {
		return 0, false, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, false, err
	}
	if err := req.Write(conn); err != nil {
		return 0, false, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, false, fmt.Errorf("metrics: %s", resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, false, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == name {
			v, err := strconv.ParseFloat(f[1], 64)
			return v, err == nil, err
		}
	}
	return 0, false, nil
}
