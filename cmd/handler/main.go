// Command handler is the per-node daemon (DaemonSet): it applies the policies that select
// its node through NetworkManager, in one transaction per node, and reports enactments.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nmoverlay/nmoverlay/api"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/overlay"
	"github.com/nmoverlay/nmoverlay/reconciler/networkmanager"
	"github.com/nmoverlay/nmoverlay/reconciler/node"
	"github.com/nmoverlay/nmoverlay/reconciler/probe"
	"github.com/nmoverlay/nmoverlay/reconciler/state"
)

// bootIDFile names the running boot.
const bootIDFile = "/proc/sys/kernel/random/boot_id"

func main() {
	nodeName := flag.String("node", os.Getenv("NODE_NAME"), "the node this handler runs on (NODE_NAME)")
	bus := flag.String("bus", "", "D-Bus address of NetworkManager's bus (default: the system bus)")
	layoutFile := flag.String("layout", overlay.LayoutFile, "nm-overlay layout file")
	dnsHost := flag.String("dns-probe-host", "", "name the DNS probe resolves (default: the API server's host name, if it is a name)")
	flag.Parse()
	ctrl.SetLogger(zap.New())
	if err := run(*nodeName, *bus, *layoutFile, *dnsHost); err != nil {
		fmt.Fprintln(os.Stderr, "handler:", err)
		os.Exit(1)
	}
}

func run(nodeName, bus, layoutFile, dnsHost string) error {
	if nodeName == "" {
		return fmt.Errorf("no node name: set NODE_NAME or --node")
	}
	layout, err := overlay.LoadLayout(layoutFile)
	if err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	nm, err := networkmanager.Connect(ctx, bus)
	if err != nil {
		return err
	}
	defer nm.Close()

	scheme, err := api.NewScheme()
	if err != nil {
		return err
	}
	cfg := ctrl.GetConfigOrDie()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Cache: node.CacheOptions(nodeName)})
	if err != nil {
		return err
	}
	h := &node.Handler{
		Client:    mgr.GetClient(),
		NodeName:  nodeName,
		Engine:    node.NetworkManager{Client: nm},
		APIReader: mgr.GetAPIReader(),
		Events:    mgr.GetEventRecorder("nmoverlay-handler"),
		Probes:    probes(cfg, nm, mgr.GetAPIReader(), nodeName, dnsHost),
		BootID: func() (string, error) {
			b, err := os.ReadFile(bootIDFile)
			return strings.TrimSpace(string(b)), err
		},
		Degraded: func() (string, error) {
			d, err := overlay.ReadDegraded(layout)
			if err != nil || d == nil {
				return "", err
			}
			return d.Reason, nil
		},
	}
	if err := h.SetupWithManager(mgr); err != nil {
		return err
	}
	changes, err := nm.Changes(ctx)
	if err != nil {
		return err
	}
	if err := mgr.Add(&node.Reporter{
		Client: mgr.GetClient(), NodeName: nodeName, Show: nm.Show, Changes: changes, NMVersion: nm.Version,
		Overlay: func() (*v1beta1.OverlayStatus, error) { return overlayStatus(layout) },
	}); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// probes are the checks between apply and commit; each is used only if it passes before
// the apply (a gateway that was already unreachable does not block every policy).
func probes(cfg *rest.Config, nm *networkmanager.Client, reader client.Reader, nodeName, dnsHost string) probe.Set {
	set := probe.Set{Probes: []probe.Probe{
		probe.Ping("default-gateway", func(ctx context.Context) (netip.Addr, error) { return defaultGateway(ctx, nm) }),
		probe.APIServer(cfg),
		probe.NodeReady(reader, nodeName),
	}}
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

// defaultGateway is the default route's next hop NetworkManager reports now.
func defaultGateway(ctx context.Context, nm *networkmanager.Client) (netip.Addr, error) {
	s, err := nm.Show(ctx)
	if err != nil {
		return netip.Addr{}, err
	}
	return state.DefaultGateway(s), nil
}

// overlayStatus is what NodeNetworkState says of the node's keyfile overlay: why it is
// degraded, and every profile that lives only in the tmpfs layer, owned by a policy or not.
func overlayStatus(layout overlay.Layout) (*v1beta1.OverlayStatus, error) {
	st := &v1beta1.OverlayStatus{}
	d, err := overlay.ReadDegraded(layout)
	if err != nil {
		return nil, err
	}
	if d != nil {
		st.Degraded = d.Reason
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
