//go:build node

package node_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/node"
	"github.com/nmoverlay/nmoverlay/internal/paths"
	"github.com/nmoverlay/nmoverlay/internal/probe"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/fabric"
	"github.com/nmoverlay/nmoverlay/test/nmhost"
)

// bootIDFile is where a test node names its boot, in its /run (a real node's boot ID is
// the kernel's, which these nodes share with the machine).
const bootIDFile = "/run/nmoverlay-test-boot-id"

// overlayNode is a node-tier host as an MCO rollout leaves it: the keyfile drop-in,
// eth1's persistent profile (192.0.2.20/24, gateway 192.0.2.254) in the lower dir, the
// tmpfiles config, and eth1 cabled at each boot to a gateway in a fabric netns.
type overlayNode struct {
	*nmhost.Node
	layout paths.Layout
	fabric string
	helper string // the nm-overlay binary
	// migration, when set, is the handler's (startHandler).
	migration *node.Migration

	mu   sync.Mutex
	boot int
}

// newOverlayNode makes the node (not booted); extra runs inside it at each boot after the
// cabling (more NICs).
func newOverlayNode(name, helper string, extra func(*nmhost.Node) error) (*overlayNode, error) {
	o := &overlayNode{layout: paths.DefaultLayout(), fabric: fmt.Sprintf("nmfabric-%s-%d", name, os.Getpid()), helper: helper}
	if out, err := exec.Command("ip", "netns", "add", o.fabric).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ip netns add: %v: %s", err, out)
	}
	n, err := nmhost.New(name)
	if err != nil {
		o.close()
		return nil, err
	}
	o.Node = n
	files := map[string]string{
		filepath.Join(n.ConfD(), paths.KeyfileDropIn): o.layout.KeyfileDropInContent(),
		filepath.Join(n.Lower(), "eth1-persistent.nmconnection"): "[connection]\nid=eth1-persistent\nuuid=22222222-3333-4444-8555-666666666666\n" +
			"type=ethernet\ninterface-name=eth1\n\n[ipv4]\nmethod=manual\naddress1=192.0.2.20/24,192.0.2.254\n\n[ipv6]\nmethod=disabled\n",
		filepath.Join(n.Dir, "tmpfiles.conf"): o.layout.TmpfilesContent(),
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			o.close()
			return nil, err
		}
	}
	n.BootSetup = func(n *nmhost.Node) error {
		// The old cable may outlive the previous boot's namespace for a moment.
		_ = exec.Command("ip", "-n", o.fabric, "link", "del", "gw0").Run()
		for _, args := range [][]string{
			{"-n", o.fabric, "link", "add", "gw0", "type", "veth", "peer", "name", "eth1", "netns", strconv.Itoa(n.PID())},
			{"-n", o.fabric, "addr", "add", fabric.Gateway + "/24", "dev", "gw0"},
			{"-n", o.fabric, "link", "set", "gw0", "up"},
		} {
			if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
				return fmt.Errorf("ip %v: %v: %s", args, err, out)
			}
		}
		if _, err := n.Run(context.Background(), "systemd-tmpfiles", "--create", filepath.Join(n.Dir, "tmpfiles.conf")); err != nil {
			return err
		}
		if extra != nil {
			return extra(n)
		}
		return nil
	}
	return o, nil
}

// start boots the node as systemd would: namespaces, nm-overlay setup, NetworkManager.
func (o *overlayNode) start(ctx context.Context) error {
	if err := o.Boot(ctx); err != nil {
		return err
	}
	if out, err := o.Run(ctx, o.helper, "setup"); err != nil {
		return fmt.Errorf("nm-overlay setup: %v: %s", err, out)
	}
	if err := o.StartNM(ctx, o.layout.NMEnvFile()); err != nil {
		return fmt.Errorf("%v\n%s", err, o.NMLog())
	}
	o.mu.Lock()
	o.boot++
	o.mu.Unlock()
	id, _ := o.bootID()
	_, err := o.Run(ctx, "sh", "-c", "echo "+id+" > "+bootIDFile)
	return err
}

// reboot shuts the node down and starts it again: the tmpfs layer is gone.
func (o *overlayNode) reboot(ctx context.Context) error {
	o.Shutdown()
	return o.start(ctx)
}

// bootID names the running boot, as /proc/sys/kernel/random/boot_id would.
func (o *overlayNode) bootID() (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return fmt.Sprintf("boot-%d", o.boot), nil
}

func (o *overlayNode) degraded() (string, error) {
	b, err := os.ReadFile(o.PathInNode(o.layout.DegradedMarker()))
	if os.IsNotExist(err) {
		return "", nil
	}
	return string(b), err
}

func (o *overlayNode) close() {
	if o.Node != nil {
		o.Node.Close()
	}
	_ = exec.Command("ip", "netns", "del", o.fabric).Run()
}

// probes are the handler's probes on this node: the gateway pinged from inside the node's
// network namespace, the API server, the Node's readiness.
func (o *overlayNode) probes(nm *networkmanager.Client, cfg *rest.Config, reader client.Reader, nodeName string) probe.Set {
	gateway := probe.Ping("default-gateway", func(ctx context.Context) (netip.Addr, error) {
		s, err := nm.Show(ctx)
		return state.DefaultGateway(s), err
	})
	return probe.Set{Timeout: 3 * time.Second, Probes: []probe.Probe{
		probe.Func{ProbeName: "default-gateway", Fn: func(ctx context.Context) error {
			return fabric.InNetNS(o.NetNSPath(), func() error { return gateway.Check(ctx) })
		}},
		probe.APIServer(cfg),
		probe.NodeReady(reader, nodeName),
	}}
}

// startHandler runs the real handler for nodeName against the node's NetworkManager until
// the returned stop is called.
func (o *overlayNode) startHandler(cfg *rest.Config, k8s client.Client, nodeName string) (stop func() error, err error) {
	ctx := context.Background()
	nm, err := o.ConnectNM(ctx)
	if err != nil {
		return nil, err
	}
	skip := true // a restarted handler (the reboot) registers its controller again in this process
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: k8s.Scheme(), Cache: node.CacheOptions(nodeName),
		Metrics: metricsserver.Options{BindAddress: "0"}, Controller: config.Controller{SkipNameValidation: &skip}})
	if err != nil {
		nm.Close()
		return nil, err
	}
	engine := networkmanager.Backend{Client: nm, Options: networkmanager.ApplyOptions{RollbackTimeout: 30 * time.Second}}
	h := &node.Handler{Client: mgr.GetClient(), NodeName: nodeName, APIReader: mgr.GetAPIReader(),
		Backend:  engine,
		BootID:   o.bootID,
		Degraded: o.degraded,
		Probes:   o.probes(nm, cfg, mgr.GetAPIReader(), nodeName),
		// As cmd/handler: the reporter reads between transactions.
		Transactions: &node.Transactions{},
	}
	if o.migration != nil {
		o.migration.Planner = engine
		h.Migration = o.migration
	}
	if o.OVS != nil {
		// As cmd/handler: the bridge mappings in the same transaction, and in the
		// NodeNetworkState, which a reporter keeps.
		engine.OVSDBSocket = o.PathInNode(nmhost.OVSDBSocket)
		h.Backend = engine
		changes, err := nm.Changes(ctx)
		if err != nil {
			nm.Close()
			return nil, err
		}
		if err := mgr.Add(&node.Reporter{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), NodeName: nodeName, Changes: changes, MinInterval: time.Second, MaxInterval: time.Second,
			Transactions: h.Transactions, Show: engine.Show, NMVersion: nm.Version, NMCapabilities: func() ([]string, error) {
				caps, err := nm.Capabilities()
				return caps.Names(), err
			}}); err != nil {
			nm.Close()
			return nil, err
		}
	}
	if err := h.SetupWithManager(mgr); err != nil {
		nm.Close()
		return nil, err
	}
	hctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		defer nm.Close()
		done <- mgr.Start(hctx)
	}()
	return func() error { cancel(); return <-done }, nil
}

// reachesAPI: a TCP connection from inside the node to the API server across the fabric.
func (o *overlayNode) reachesAPI() error {
	_, err := o.Run(context.Background(), "bash", "-c", "exec 3<>/dev/tcp/"+strings.Replace(fabric.APIAddr, ":", "/", 1))
	return err
}

// startHandlerProcess runs cmd/handler inside the node as the DaemonSet would, logging to
// logPath; the boot ID comes from the node's /run.
func (o *overlayNode) startHandlerProcess(bin, kubeconfig, nodeName, logPath string, extra ...string) (*exec.Cmd, error) {
	cmd := o.Command(context.Background(), bin, append([]string{"--node", nodeName, "--kubeconfig", kubeconfig,
		"--boot-id-file", bootIDFile, "--metrics-bind-address", handlerMetricsAddr, "--metrics-secure=false", "--health-probe-bind-address", "0"}, extra...)...)
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	return cmd, cmd.Start()
}

// withNICs is a boot setup that gives the node NICs by these names: veths whose peer end,
// <name>p, is up in the node and cabled to nothing, so that each has a carrier.
func withNICs(ctx context.Context, names ...string) func(*nmhost.Node) error {
	return func(n *nmhost.Node) error {
		for _, nic := range names {
			if _, err := n.Run(ctx, "ip", "link", "add", nic, "type", "veth", "peer", "name", nic+"p"); err != nil {
				return err
			}
			if _, err := n.Run(ctx, "ip", "link", "set", nic+"p", "up"); err != nil {
				return err
			}
		}
		return nil
	}
}

// handlerMetricsAddr is where a handler process serves its metrics, inside its node.
const handlerMetricsAddr = "127.0.0.1:8089"

// handlerMetric reads one sample ("name{labels}") from the node's handler process.
func (o *overlayNode) handlerMetric(sample string) (float64, error) {
	_, body, err := o.handlerGet(handlerMetricsAddr, "/metrics")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, sample+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, nil // not observed yet
}

// handlerGet is an HTTP GET of path from the node's handler process at addr, inside the
// node (where the kubelet's probes and a scrape come from): the status and the body.
func (o *overlayNode) handlerGet(addr, path string) (int, string, error) {
	return o.handlerGetWithin(addr, path, 5*time.Second)
}

// handlerGetWithin is handlerGet for a response that takes up to timeout (a profile).
func (o *overlayNode) handlerGetWithin(addr, path string, timeout time.Duration) (int, string, error) {
	var conn net.Conn
	err := fabric.InNetNS(o.NetNSPath(), func() error {
		var err error
		conn, err = net.DialTimeout("tcp", addr, 2*time.Second)
		return err
	})
	if err != nil {
		return 0, "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, addr); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// engineOn boots the node and connects the handler's engine to its NetworkManager, as
// engine-level specs use it; the connection closes with the spec's clean-up.
func (o *overlayNode) engineOn(ctx context.Context) (*networkmanager.Client, networkmanager.Backend) {
	GinkgoHelper()
	Expect(o.start(ctx)).To(Succeed())
	nm, err := o.ConnectNM(ctx)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(nm.Close)
	return nm, networkmanager.Backend{Client: nm, Options: networkmanager.ApplyOptions{RollbackTimeout: 30 * time.Second}}
}
