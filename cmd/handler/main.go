// Command handler is the per-node daemon (DaemonSet): it applies the policies that select
// its node through NetworkManager, in one transaction per node, and reports enactments.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/nmoverlay/nmoverlay/api"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/backend"
	"github.com/nmoverlay/nmoverlay/internal/netplan"
	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/node"
	"github.com/nmoverlay/nmoverlay/internal/overlay"
	"github.com/nmoverlay/nmoverlay/internal/ovsdb"
	"github.com/nmoverlay/nmoverlay/internal/paths"
	"github.com/nmoverlay/nmoverlay/internal/probe"
	"github.com/nmoverlay/nmoverlay/internal/rebootgate"
	"github.com/nmoverlay/nmoverlay/internal/serving"
	"github.com/nmoverlay/nmoverlay/internal/version"
)

// options are the handler's flags.
type options struct {
	nodeName, bus, layoutFile, dnsHost, bootIDFile, metricsAddr, probeAddr string
	pprofAddr, migrationPlan                                               string
	backend, hostRoot, rebootGate                                          string
	disabledProbes                                                         []string
	probeTimeout, activationTimeout, rebootGateTimeout, nmReadyGrace       time.Duration
	reapplyDrift, metricsSecure                                            bool
	metricsTLS                                                             *serving.TLS
}

func main() {
	var o options
	flag.StringVar(&o.nodeName, "node", os.Getenv("NODE_NAME"), "the node this handler runs on (NODE_NAME, from the downward API)")
	flag.StringVar(&o.bus, "bus", "", "D-Bus address of NetworkManager's bus (default: the system bus, DBUS_SYSTEM_BUS_ADDRESS)")
	flag.StringVar(&o.layoutFile, "layout", paths.LayoutFile, "nm-overlay layout file, as the MachineConfig wrote it")
	flag.StringVar(&o.dnsHost, "dns-probe-host", "", "name the DNS probe resolves (default: the API server's host name, if it is a name)")
	flag.StringVar(&o.bootIDFile, "boot-id-file", "",
		"file naming the running boot: every policy is re-applied when it changes (default: the boot ID nm-overlay "+
			"recorded when it set the overlay up, else "+paths.KernelBootIDFile+")")
	flag.Func("disable-probes", "comma-separated probes not to run after an apply: "+
		nmstatev1.ProbeDefaultGateway+", "+nmstatev1.ProbeDNS+" (the API server and Node Ready probes cannot be disabled)",
		func(v string) error {
			for _, p := range strings.Split(v, ",") {
				if p != nmstatev1.ProbeDefaultGateway && p != nmstatev1.ProbeDNS {
					return fmt.Errorf("%q cannot be disabled: only %s and %s can", p, nmstatev1.ProbeDefaultGateway, nmstatev1.ProbeDNS)
				}
				o.disabledProbes = append(o.disabledProbes, p)
			}
			return nil
		})
	flag.StringVar(&o.backend, "backend", nmstatev1.BackendNetworkManager, "how policies are applied: "+nmstatev1.BackendNetworkManager+
		" (nmstate's schema, nmoverlay's engine over NetworkManager) or "+netplan.Name+" (netplan's schema, through netplan's generator and NetworkManager)")
	flag.StringVar(&o.hostRoot, "host-root", "/", "the host's root dir as this process sees it (the "+netplan.Name+
		" backend reads the node's netplan configuration and writes /run/netplan there, and runs netplan chrooted into it when it is not /)")
	flag.StringVar(&o.metricsAddr, "metrics-bind-address", serving.HandlerMetricsAddr, `address serving Prometheus metrics ("0" disables)`)
	flag.BoolVar(&o.metricsSecure, "metrics-secure", true, serving.SecureFlagHelp)
	o.metricsTLS = serving.TLSFlags(flag.CommandLine)
	flag.StringVar(&o.probeAddr, "health-probe-bind-address", serving.HandlerHealthAddr, `address serving /healthz and /readyz ("0" disables)`)
	flag.DurationVar(&o.nmReadyGrace, "networkmanager-ready-grace", 10*time.Second,
		"how long NetworkManager may not answer on D-Bus before the handler is not ready (a restart takes a second or two)")
	flag.StringVar(&o.pprofAddr, "pprof-bind-address", "", `address serving Go's profiles (net/http/pprof), for a memory or CPU question ("" disables)`)
	flag.DurationVar(&o.probeTimeout, "probe-timeout", 45*time.Second,
		"how long the probes (all at once) may take to pass after an apply before it is rolled back")
	flag.DurationVar(&o.activationTimeout, "activation-timeout", networkmanager.DefaultActivationTimeout,
		"how long an apply waits for its interfaces to activate, DHCP leases included, before it is rolled back naming those that did not")
	flag.StringVar(&o.migrationPlan, "migration-plan", "",
		"while the node is not on the overlay, keep at this path (the host's "+paths.MigrationPlan+") the plan of its move from "+
			"kubernetes-nmstate: the persistent profiles the policies in force wrote, which nm-overlay moves out at the next boot "+
			"(\"\" disables; the operator sets it while the NMState asks for a migration)")
	flag.BoolVar(&o.reapplyDrift, "reapply-drift", false,
		"re-apply every policy whose committed state is changed outside nmoverlay (default: only policies annotated "+
			node.DriftAnnotation+"="+node.DriftReapply+"; the others are reported Failing)")
	flag.StringVar(&o.rebootGate, "reboot-gate", nmstatev1.RebootGateNone, nmstatev1.RebootGateTaint+
		": lift this node's reboot gate (the "+rebootgate.TaintKey+" taint the cluster controller adds after a reboot) "+
		"should the controller not: once every policy is Available in the new boot, or a while after a policy failed "+
		"in it or --reboot-gate-timeout passed (the NMState's spec.rebootGate); "+nmstatev1.RebootGateNone+": not")
	flag.DurationVar(&o.rebootGateTimeout, "reboot-gate-timeout", rebootgate.DefaultTimeout, "the cluster controller's --reboot-gate-timeout")
	printVersion := serving.VersionFlag()
	setupLogging := serving.Logging(flag.CommandLine)
	flag.Parse()
	setupLogging()
	serving.Announce("handler", *printVersion)
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "handler:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	nodeName := o.nodeName
	if nodeName == "" {
		return fmt.Errorf("no node name: set NODE_NAME or --node")
	}
	if o.rebootGate != nmstatev1.RebootGateTaint && o.rebootGate != nmstatev1.RebootGateNone {
		return fmt.Errorf("--reboot-gate %q: not %s or %s", o.rebootGate, nmstatev1.RebootGateTaint, nmstatev1.RebootGateNone)
	}
	layout, err := overlay.LoadLayout(o.layoutFile)
	if err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	nm, err := connectNM(ctx, o.bus)
	if err != nil {
		return err
	}
	defer nm.Close()

	mgr, cfg, conns, err := newManager(o)
	if err != nil {
		return err
	}
	if err := serving.AddChecks(mgr, map[string]healthz.Checker{
		"networkmanager": serving.Answering("NetworkManager", nm.Ping, o.nmReadyGrace, time.Now)}); err != nil {
		return err
	}
	engine, err := newBackend(o, nm, layout)
	if err != nil {
		return err
	}
	h := newHandler(o, mgr, cfg, conns, nm, layout, engine)
	// A write into the lower dir while mounted makes the node refuse policies and report
	// it at once, not at the next policy change.
	lowerChanged, err := overlay.WatchLower(ctx, layout)
	if err != nil {
		return err
	}
	// The degraded marker going away (nm-overlay enable moved NetworkManager onto the
	// overlay) makes a refusing node apply its policies at once.
	markerChanged, err := overlay.WatchMarker(ctx, layout)
	if err != nil {
		// No run dir: no overlay set up at all. A refusing node then looks again every 30 s.
		ctrl.Log.Info("not watching the degraded marker", "node", nodeName, "error", err.Error())
	}
	wake := make(chan event.GenericEvent, 1)
	netChanged := make(chan struct{}, 1)
	// The drift check and the reporter both read the node after a change: one read serves
	// both.
	reads := &node.Reads{Show: h.Backend.Show}
	h.Wake, h.NetworkChanged, h.Show, h.ReapplyDrift = wake, netChanged, reads.Read, o.reapplyDrift
	h.Transactions = &node.Transactions{}
	if o.migrationPlan != "" {
		planner, ok := engine.(backend.PersistentPlanner)
		if !ok {
			return fmt.Errorf("--migration-plan: the %s backend cannot tell which persistent profiles policies wrote", engine.Name())
		}
		h.Migration = &node.Migration{Planner: planner, Lower: layout.Lower, PlanPath: o.migrationPlan, APIServer: probe.APIServerAddress(ctx, cfg.Host)}
	}
	if o.rebootGate == nmstatev1.RebootGateTaint {
		h.RebootGate = &node.RebootGate{Timeout: o.rebootGateTimeout}
	}
	if err := h.SetupWithManager(mgr); err != nil {
		return err
	}
	nmChanges, err := h.Backend.Changes(ctx)
	if err != nil {
		return err
	}
	// NetworkManager's changes go to the reporter and, for drift, to the handler; a
	// change of the lower dir to both as well.
	changes := make(chan struct{}, 1)
	// A change of the drift reported, or of the migration's plan, is written without
	// waiting out the spacing of writes, as one of the overlay is: an enactment already
	// says it, and the NodeNetworkState is to agree.
	overlayChanged := make(chan struct{}, 1)
	h.DriftChanged = func() {
		select {
		case overlayChanged <- struct{}{}:
		default:
		}
	}
	if h.Migration != nil {
		h.Migration.Changed = h.DriftChanged // a new plan is reported at once
	}
	// changes and overlayChanged are never closed: DriftChanged may still send; the
	// reporter ends with ctx
	go forwardChanges(nmChanges, reads.Changed, lowerChanged, markerChanged, netChanged, wake, changes, overlayChanged, nodeName, layout.Lower)
	if err := mgr.Add(&node.Reporter{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), NodeName: nodeName, Show: reads.Read, Changes: changes, Urgent: overlayChanged,
		NMVersion: nm.Version, Backend: h.Backend.Name(),
		NMCapabilities: func() ([]string, error) {
			caps, err := nm.Capabilities()
			return caps.Names(), err
		},
		EngineVersion: version.Engine(h.Backend.Name()), Cache: mgr.GetCache(),
		Overlay:      func() (*v1beta1.OverlayStatus, error) { return overlayStatus(layout, o.migrationPlan) },
		Drift:        h.Drifted,
		Transactions: h.Transactions,
	}); err != nil {
		return err
	}
	if err := mgr.Add(manager.RunnableFunc(trimAfterBursts)); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// newManager makes the controller manager, its cache limited to the node's objects, with
// health and readiness checks. Its clients dial through the returned apiConns.
func newManager(o options) (ctrl.Manager, *rest.Config, apiConns, error) {
	scheme, err := api.NewScheme()
	if err != nil {
		return nil, nil, apiConns{}, err
	}
	cfg := ctrl.GetConfigOrDie()
	conns := apiConns{local: &node.LocalAddrs{}}
	conns.dialer = connrotation.NewDialer(conns.local.Dial((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext))
	cfg.Dial = conns.dialer.DialContext
	metrics, err := serving.Metrics(o.metricsAddr, o.metricsSecure, o.metricsTLS)
	if err != nil {
		return nil, nil, apiConns{}, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Cache: node.CacheOptions(o.nodeName),
		Metrics: metrics, HealthProbeBindAddress: o.probeAddr, PprofBindAddress: o.pprofAddr})
	if err != nil {
		return nil, nil, apiConns{}, err
	}
	return mgr, cfg, conns, nil
}

// apiConns are the clients' connections to the API server: one dialer for every client,
// so that an apply can drop the connections it may have killed, and their local
// addresses, so that it knows at once those whose address it removed.
type apiConns struct {
	dialer *connrotation.Dialer
	local  *node.LocalAddrs
}

// newHandler makes the node handler: its engine, probes, and what it reads of the boot
// and of the overlay. The channels it is woken by are set by the caller.
func newHandler(o options, mgr ctrl.Manager, cfg *rest.Config, conns apiConns, nm *networkmanager.Client, layout paths.Layout,
	backend backend.Backend) *node.Handler {
	return &node.Handler{
		Client:   mgr.GetClient(),
		NodeName: o.nodeName,
		// An apply can kill the API server connections: dropped when they no longer answer.
		Backend: node.Reconnecting{Backend: backend, CloseAll: conns.dialer.CloseAll, Alive: alive(cfg, mgr.GetHTTPClient()),
			Gone: conns.local.Gone},
		Events:    mgr.GetEventRecorder("nmoverlay-handler"),
		APIReader: mgr.GetAPIReader(),
		Probes:    probes(cfg, mgr.GetAPIReader(), o.nodeName, o.dnsHost, o.probeTimeout, o.disabledProbes),
		BootID: func() (string, error) {
			var b []byte
			var err error
			if o.bootIDFile != "" {
				b, err = os.ReadFile(o.bootIDFile)
			} else if b, err = os.ReadFile(layout.BootIDFile()); errors.Is(err, fs.ErrNotExist) {
				// No overlay set up in this boot (the node refuses policies then), or a
				// helper from before it recorded the boot.
				b, err = os.ReadFile(paths.KernelBootIDFile)
			}
			return strings.TrimSpace(string(b)), err
		},
		Degraded: func() (string, error) { return overlay.InUse(layout) },
	}
}

// newBackend is the backend --backend names.
func newBackend(o options, nm *networkmanager.Client, layout paths.Layout) (backend.Backend, error) {
	// NetworkManager rolls the checkpoint back by itself if this process dies; its
	// timeout must outlast activation (DHCP included) and the probes (which share one
	// deadline), or it fires while the probes still wait.
	opts := networkmanager.ApplyOptions{ActivationTimeout: o.activationTimeout, RollbackTimeout: o.activationTimeout + o.probeTimeout + 30*time.Second,
		CheckpointRecord: layout.CheckpointRecord()}
	switch o.backend {
	case nmstatev1.BackendNetworkManager:
		return networkmanager.Backend{Client: nm, Options: opts, OVSDBSocket: ovsdb.DefaultSocket}, nil
	case netplan.Name:
		return &netplan.Backend{NM: nm, Options: opts, Host: netplan.NewHost(o.hostRoot, layout.NetplanScratch())}, nil
	}
	return nil, fmt.Errorf("--backend %q: not %s or %s", o.backend, nmstatev1.BackendNetworkManager, netplan.Name)
}

// connectNM connects to NetworkManager, waiting for one that restarts: `nm-overlay enable`
// moves it onto the overlay right after this pod's init container installed the helper.
func connectNM(ctx context.Context, bus string) (*networkmanager.Client, error) {
	var nm *networkmanager.Client
	var last error
	// The connection lives as long as ctx: not the poll's context, which ends with the poll.
	err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(context.Context) (bool, error) {
		nm, last = networkmanager.Connect(ctx, bus)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return nil, last
	}
	return nm, err
}

// forwardChanges notes NetworkManager's changes (changed: a read that started before one
// answers no one) and passes them to the handler (netChanged) and the reporter (changes),
// and a change of the lower dir or of the degraded marker to the handler (wake) and the
// reporter (overlayChanged: reported without waiting out the spacing of its writes). It
// ends when a source is closed.
func forwardChanges(nmChanges <-chan struct{}, changed func(), lowerChanged, markerChanged <-chan struct{}, netChanged chan<- struct{}, wake chan<- event.GenericEvent,
	changes, overlayChanged chan<- struct{}, nodeName, lowerDir string) {
	wakeHandler := func() {
		select {
		case wake <- event.GenericEvent{Object: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}}:
		default:
		}
	}
	signal := func(c chan<- struct{}) {
		select {
		case c <- struct{}{}:
		default:
		}
	}
	for {
		select {
		case _, ok := <-nmChanges:
			if !ok {
				return
			}
			changed()
			signal(netChanged)
			signal(changes)
		case _, ok := <-lowerChanged:
			if !ok {
				return
			}
			ctrl.Log.Info("the persistent keyfile dir changed while the overlay is mounted", "node", nodeName, "dir", lowerDir)
			wakeHandler()
			signal(overlayChanged)
		case _, ok := <-markerChanged:
			if !ok {
				return
			}
			wakeHandler()
			signal(overlayChanged)
		}
	}
}

// probes are the checks between apply and commit; each is used only if it passes before
// the apply (a gateway that was already unreachable does not block every policy).
// timeout bounds how long the probes may take to pass after an apply (a bridge's forwarding
// delay, a bond's negotiation); the network is rolled back after it.
func probes(cfg *rest.Config, reader client.Reader, nodeName, dnsHost string, timeout time.Duration, disabled []string) probe.Set {
	set := probe.Set{Timeout: timeout, Probes: []probe.Probe{probe.APIServer(cfg), probe.NodeReady(reader, nodeName)}}
	if !slices.Contains(disabled, nmstatev1.ProbeDefaultGateway) {
		set.Probes = append([]probe.Probe{probe.Ping(nmstatev1.ProbeDefaultGateway, func(context.Context) (netip.Addr, error) {
			return networkmanager.KernelDefaultGateway()
		})}, set.Probes...)
	}
	if slices.Contains(disabled, nmstatev1.ProbeDNS) {
		return set
	}
	if dnsHost == "" {
		if u, err := url.Parse(cfg.Host); err == nil {
			if _, err := netip.ParseAddr(u.Hostname()); err != nil && u.Hostname() != "" {
				dnsHost = u.Hostname()
			}
		}
	}
	if dnsHost != "" {
		set.Probes = append(set.Probes, probe.DNS(dnsHost, nil))
	}
	return set
}

// alive asks the API server its version over the manager's own connections (the ones its
// watches use): an answer proves them alive.
func alive(cfg *rest.Config, hc *http.Client) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/version", nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /version: %s", resp.Status)
		}
		return nil
	}
}

// overlayStatus is what NodeNetworkState says of the node's keyfile overlay: why it is
// degraded, and every profile that lives only in the tmpfs layer, owned by a policy or not.
func overlayStatus(layout paths.Layout, migrationPlan string) (*v1beta1.OverlayStatus, error) {
	st := &v1beta1.OverlayStatus{}
	if migrationPlan != "" {
		var err error
		if st.Migration, err = node.MigrationStatus(migrationPlan, paths.MigratedDir); err != nil {
			return nil, err
		}
	}
	why, err := overlay.InUse(layout)
	if err != nil {
		return nil, err
	}
	if why != "" {
		st.Degraded = why
		return st, nil
	}
	changes, err := overlay.Status(layout)
	if err != nil {
		return nil, err
	}
	for _, c := range changes {
		st.Ephemeral = append(st.Ephemeral, v1beta1.EphemeralProfile{File: c.File, Change: string(c.Change), ID: c.ID,
			Interface: c.Interface, Owned: c.User[networkmanager.OwnerKey] == networkmanager.OwnerValue})
	}
	return st, nil
}
