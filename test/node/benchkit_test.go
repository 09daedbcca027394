//go:build node

package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
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

// handlerPprofAddr is where a benchmark's handler process serves Go's profiles, inside its
// node.
const handlerPprofAddr = "127.0.0.1:6060"

// profileSeconds is how long a benchmark profiles its handler during an apply: the
// scale bench's apply takes 7-9 s here.
const profileSeconds = 30

// profileHandler starts a CPU profile and an execution trace (from which wall-clock
// profiles of blocking are made: go tool trace -pprof=net|sync|syscall|sched) of the
// node's handler, for seconds, into benchOutDir. The function it returns waits for
// both, once, and says where they are.
func (o *overlayNode) profileHandler(b *testing.B, name string, seconds int) func() {
	dir := benchOutDir(b)
	var wg sync.WaitGroup
	for file, path := range map[string]string{
		name + ".cpu.pprof": fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds),
		name + ".trace":     fmt.Sprintf("/debug/pprof/trace?seconds=%d", seconds),
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.saveHandlerProfile(b, path, file, time.Duration(seconds+30)*time.Second)
		}()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			wg.Wait()
			fmt.Printf("  the handler's CPU profile and execution trace, %ds from the policy's creation: %s/%s.{cpu.pprof,trace}\n", seconds, dir, name)
		})
	}
}

// saveHandlerProfile saves one of the handler's profiles (path: /debug/pprof/...) as file
// in benchOutDir.
func (o *overlayNode) saveHandlerProfile(b *testing.B, path, file string, timeout time.Duration) {
	status, body, err := o.handlerGetWithin(handlerPprofAddr, path, timeout)
	if err != nil || status != 200 {
		fmt.Printf("  profile %s: %d %v\n", file, status, err)
		return
	}
	if err := os.WriteFile(filepath.Join(benchOutDir(b), file), []byte(body), 0o644); err != nil {
		fmt.Printf("  profile %s: %v\n", file, err)
	}
}

// benchOutDir is where benchmarks leave their profiles: $NMOVERLAY_BENCH_OUT, or
// nmoverlay-bench in the temporary directory.
func benchOutDir(b *testing.B) string {
	dir := os.Getenv("NMOVERLAY_BENCH_OUT")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "nmoverlay-bench")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	return dir
}

// handlerMemory is a handler process's memory at one moment, in MiB: its RSS, the
// anonymous part of it, and Go's heap in use.
type handlerMemory struct{ rss, anon, heap float64 }

func (o *overlayNode) handlerMemoryNow(pid int) handlerMemory {
	heap, _ := o.handlerMetric("go_memstats_heap_inuse_bytes")
	return handlerMemory{rss: kit.ProcStatusKiB(pid, "VmRSS") / 1024, anon: kit.ProcStatusKiB(pid, "RssAnon") / 1024, heap: heap / (1 << 20)}
}

// handlerMemoryAtRest samples the handler's memory 20 times over 10 s and takes the
// median: what the heap holds depends on where the collector is in its cycle. Go's heap is
// read once, at the end: a scrape is work, which the handler would not see as rest.
func (o *overlayNode) handlerMemoryAtRest(pid int) handlerMemory {
	var rss, anon []float64
	for range 20 {
		rss, anon = append(rss, kit.ProcStatusKiB(pid, "VmRSS")/1024), append(anon, kit.ProcStatusKiB(pid, "RssAnon")/1024)
		time.Sleep(500 * time.Millisecond)
	}
	median := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	return handlerMemory{rss: median(rss), anon: median(anon), heap: o.handlerMemoryNow(pid).heap}
}

// handlerMemoryPeak samples the handler's memory every 500 ms until the function it
// returns is called, which gives each figure's highest sample (RSS: the kernel's own
// high-water mark) and NetworkManager's highest RSS over the same time.
func (o *overlayNode) handlerMemoryPeak(pid int) func() (handler handlerMemory, nmRSS float64) {
	stop, done := make(chan struct{}), make(chan struct{})
	var peak handlerMemory
	var nm float64
	go func() {
		defer close(done)
		for {
			m := o.handlerMemoryNow(pid)
			peak = handlerMemory{rss: max(peak.rss, m.rss), anon: max(peak.anon, m.anon), heap: max(peak.heap, m.heap)}
			nm = max(nm, kit.ProcStatusKiB(o.NMPID(), "VmRSS")/1024)
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return func() (handlerMemory, float64) {
		close(stop)
		<-done
		peak.rss = max(peak.rss, kit.ProcStatusKiB(pid, "VmHWM")/1024)
		return peak, nm
	}
}

func (m handlerMemory) String() string {
	return fmt.Sprintf("RSS %.1f MiB, anonymous %.1f MiB, Go heap in use %.1f MiB", m.rss, m.anon, m.heap)
}
