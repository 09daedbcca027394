// Command handler is the per-node daemon (DaemonSet): it applies the policies that select
// its node through NetworkManager, in one transaction per node, and reports enactments.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/overlay"
	"github.com/nmoverlay/nmoverlay/reconciler/networkmanager"
	"github.com/nmoverlay/nmoverlay/reconciler/node"
	"github.com/nmoverlay/nmoverlay/reconciler/state"
)

// bootIDFile names the running boot.
const bootIDFile = "/proc/sys/kernel/random/boot_id"

func main() {
	nodeName := flag.String("node", os.Getenv("NODE_NAME"), "the node this handler runs on (NODE_NAME)")
	bus := flag.String("bus", "", "D-Bus address of NetworkManager's bus (default: the system bus)")
	layoutFile := flag.String("layout", overlay.LayoutFile, "nm-overlay layout file")
	flag.Parse()
	ctrl.SetLogger(zap.New())
	if err := run(*nodeName, *bus, *layoutFile); err != nil {
		fmt.Fprintln(os.Stderr, "handler:", err)
		os.Exit(1)
	}
}

func run(nodeName, bus, layoutFile string) error {
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

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, nmstatev1.AddToScheme, v1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Scheme: scheme, Cache: node.CacheOptions(nodeName)})
	if err != nil {
		return err
	}
	h := &node.Handler{
		Client:    mgr.GetClient(),
		NodeName:  nodeName,
		Engine:    engine{nm},
		APIReader: mgr.GetAPIReader(),
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
	return mgr.Start(ctx)
}

// engine applies a node's whole state, pruning what no policy names any more.
type engine struct{ nm *networkmanager.Client }

func (e engine) Apply(ctx context.Context, desired state.State) (node.Transaction, error) {
	tx, err := e.nm.Apply(ctx, desired, networkmanager.ApplyOptions{Prune: true})
	if err != nil {
		return nil, err
	}
	return tx, nil
}
