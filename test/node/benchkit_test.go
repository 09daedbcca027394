//go:build node

package node_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/test/fabric"
	"github.com/nmoverlay/nmoverlay/test/kit"
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
	c := &benchCluster{dir: b.TempDir()}
	c.kubeconfig = filepath.Join(c.dir, "kubeconfig")
	var err error
	b.Cleanup(func() { _ = kit.RemoveBinaries() })
	if c.helper, err = kit.Binary("cmd/nm-overlay"); err != nil {
		b.Fatal(err)
	}
	if c.handler, err = kit.Binary("cmd/handler"); err != nil {
		b.Fatal(err)
	}
	a, err := kit.StartAPI()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = a.Stop() })
	stopController, err := a.StartController() // it grants the nodes their rollout slots
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = stopController() })
	c.cfg, c.k8s = a.Config, a.Client
	for _, name := range nodes {
		if _, err := kit.ReadyNode(context.Background(), c.k8s, name, nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := fabric.Kubeconfig(a.Env, "nmoverlay-handler", c.kubeconfig); err != nil {
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
