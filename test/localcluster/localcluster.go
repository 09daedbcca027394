// Package localcluster is a cluster on one machine made of real parts: kube-apiserver and
// etcd (envtest), kube-controller-manager and kube-scheduler answering on a fabric network
// namespace; systemd-nspawn nodes booted from a Debian root with containerd, a kubelet
// and kube-proxy, their uplinks on the fabric's bridge. nmoverlay is installed on it as an
// administrator installs it (kubectl apply -k deploy/), and the MachineConfig laid down
// as MCO lays it down (files, then a reboot). `make demo` and the boot tier run on it.
package localcluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nmoverlay/nmoverlay/api"
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
)

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

// Options describe the cluster.
type Options struct {
	Rootfs string   // the nodes' Debian root, with containerd (hack/node-rootfs.sh)
	Kube   string   // the Kubernetes binaries of one release (hack/kube-assets.sh)
	Images string   // the image archives the nodes import (hack/node-images.sh)
	Nodes  []string // node names, booted in this order
	// Log receives the control plane's logs; nil discards them.
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
	fabricPeer       string
}

// Cluster is the control plane, the fabric and the nodes.
type Cluster struct {
	// Client is the administrator's; it watches too.
	Client client.WithWatch
	Nodes  []*Node
	// Kubeconfig is an administrator's kubeconfig for the API server (loopback).
	Kubeconfig string
	// Image is nmoverlay's image as the nodes' containerd knows it.
	Image     string
	images    []string // every image the nodes import; the sandbox image last
	fabric    string
	dir       string
	pki       *pki
	env       *envtest.Environment
	apiServer string
	// markers are paths in the command line of every process the cluster started.
	markers  []string
	cleanups []func()
}

// Start brings the control plane and the nodes up, each node Ready; Close takes all of it
// down, also after a failed Start.
func Start(ctx context.Context, o Options) (c *Cluster, err error) {
	if len(o.Nodes) == 0 || len(o.Nodes) > 50 {
		return nil, fmt.Errorf("nodes: want 1..50, got %d", len(o.Nodes))
	}
	images, err := os.ReadFile(filepath.Join(o.Images, "images"))
	if err != nil {
		return nil, fmt.Errorf("the images to import (hack/node-images.sh): %w", err)
	}
	dir, err := os.MkdirTemp("", "nmoverlay-localcluster-")
	if err != nil {
		return nil, err
	}
	c = &Cluster{dir: dir, fabric: fmt.Sprintf("nmo-fab-%d", os.Getpid()), images: strings.Fields(string(images))}
	c.onClose(func() { os.RemoveAll(dir) })
	defer func() {
		if err != nil {
			c.Close()
			c = nil
		}
	}()
	if len(c.images) != 2 {
		return c, fmt.Errorf("%s: want nmoverlay's image and the sandbox image, got %q", o.Images, c.images)
	}
	c.Image = c.images[0]
	if c.pki, err = newPKI(filepath.Join(dir, "pki")); err != nil {
		return c, err
	}
	log := o.Log
	if log == nil {
		log = io.Discard
	}

	// The API server's graceful termination waits for its watchers' connections (kubelets,
	// pods) far longer than a test needs; after 5 s it is killed, as the kubelet kills a
	// static pod past its grace period. Etcd stops at once.
	env := &envtest.Environment{BinaryAssetsDirectory: o.Kube, ControlPlaneStopTimeout: 5 * time.Second}
	env.ControlPlane.APIServer = c.pki.apiServer(o.Kube)
	cfg, err := env.Start()
	if err != nil {
		return c, fmt.Errorf("starting kube-apiserver and etcd: %w", err)
	}
	c.onClose(func() { _ = env.Stop() })
	c.env = env
	c.markers = append(c.markers, env.ControlPlane.Etcd.DataDir)
	scheme, err := api.NewScheme()
	if err != nil {
		return c, err
	}
	if c.Client, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme}); err != nil {
		return c, err
	}
	c.apiServer = cfg.Host
	c.Kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	if err := c.userKubeconfig(env, envtest.User{Name: "admin", Groups: []string{"system:masters"}}, cfg.Host, c.Kubeconfig); err != nil {
		return c, err
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return c, err
	}
	if err := c.startFabric(cfg.Host, u.Port()); err != nil {
		return c, err
	}
	if err := c.startControllers(env, cfg, o.Kube, log); err != nil {
		return c, err
	}
	for i, name := range o.Nodes {
		n, err := c.addNode(ctx, env, o, name, i)
		if err != nil {
			return c, fmt.Errorf("node %s: %w", name, err)
		}
		c.Nodes = append(c.Nodes, n)
	}
	return c, nil
}

// SandboxImage is the pods' sandbox image, which the nodes have: a pause process, for
// stand-ins of workloads whose images are not here.
func (c *Cluster) SandboxImage() string { return c.images[len(c.images)-1] }

// TokenKubeconfig writes a kubeconfig named name that presents token to the API server
// (its loopback address), to act as whoever the token belongs to.
func (c *Cluster) TokenKubeconfig(name, token string) (string, error) {
	path := filepath.Join(c.dir, name+".kubeconfig")
	return path, fabric.WriteKubeconfig(path, c.apiServer, c.pki.caData, &clientcmdapi.AuthInfo{Token: strings.TrimSpace(token)})
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
	for _, n := range c.Nodes {
		for _, cg := range n.Cgroups() {
			if _, err := os.Stat(cg); err == nil {
				left = append(left, "cgroup "+cg)
			}
		}
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
func (c *Cluster) startFabric(apiServer, advertisedPort string) error {
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
	// Where the nodes' kubeconfigs point, and where the kubernetes Service's endpoint (the
	// advertised address and the API server's own port) leads.
	for _, port := range []string{fabric.APIPort, advertisedPort} {
		stop, err := fabric.ServeAPIOn(c.fabric, apiServer, port)
		if err != nil {
			return err
		}
		c.onClose(stop)
	}
	return nil
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
