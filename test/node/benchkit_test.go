//go:build node

package node_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nmoverlay/nmoverlay/api"
	"github.com/nmoverlay/nmoverlay/test/fabric"
	"github.com/nmoverlay/nmoverlay/test/nmhost"
)

// benchCluster is what the node-tier benchmarks share: the binaries built as make build
// does, a real API server (stopped at the benchmark's end) with its client, Ready Nodes,
// and a kubeconfig for a handler process.
type benchCluster struct {
	cfg                         *rest.Config
	k8s                         client.Client
	dir                         string
	helper, handler, kubeconfig string
}

func newBenchCluster(b *testing.B, nodes ...string) *benchCluster {
	b.Helper()
	ctrl.SetLogger(logr.Discard())
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		b.Fatal("KUBEBUILDER_ASSETS is unset: run make bench")
	}
	c := &benchCluster{dir: b.TempDir()}
	c.helper, c.handler, c.kubeconfig = filepath.Join(c.dir, "nm-overlay"), filepath.Join(c.dir, "handler"), filepath.Join(c.dir, "kubeconfig")
	for pkg, out := range map[string]string{"cmd/nm-overlay": c.helper, "cmd/handler": c.handler} {
		if err := goBuild("github.com/nmoverlay/nmoverlay/"+pkg, out); err != nil {
			b.Fatal(err)
		}
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{"../../deploy/crds"}, ErrorIfCRDPathMissing: true}
	var err error
	if c.cfg, err = env.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Stop() })
	scheme, err := api.NewScheme()
	if err != nil {
		b.Fatal(err)
	}
	if c.k8s, err = client.New(c.cfg, client.Options{Scheme: scheme}); err != nil {
		b.Fatal(err)
	}
	for _, name := range nodes {
		if err := readyNode(context.Background(), c.k8s, name); err != nil {
			b.Fatal(err)
		}
	}
	if err := fabric.Kubeconfig(env, "nmoverlay-handler", c.kubeconfig); err != nil {
		b.Fatal(err)
	}
	return c
}

// node boots an overlay node cabled to a fabric where the API server answers, and waits
// until it reaches the API server; extra runs inside it at each boot (more NICs). It is
// taken down at the benchmark's end.
func (c *benchCluster) node(b *testing.B, name string, extra func(*nmhost.Node) error) *overlayNode {
	b.Helper()
	n, err := newOverlayNode(name, c.helper, extra)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(n.close)
	stopFabric, err := fabric.ServeAPI(n.fabric, c.cfg.Host)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(stopFabric)
	if err := n.start(context.Background()); err != nil {
		b.Fatal(err)
	}
	waitUntil(b, time.Minute, func() (bool, error) { return n.reachesAPI() == nil, nil }, func() string { return "the node does not reach the API server" })
	return n
}
