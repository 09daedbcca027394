//go:build node

package node_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/node"
	"github.com/nmoverlay/nmoverlay/test/kit"
	"github.com/nmoverlay/nmoverlay/test/nmhost"
)

// Upstream kubernetes-nmstate's handler, FIELD-NOTES section 6: about 56 MiB RSS with no
// real interfaces; its DaemonSet requests 100 MiB.
const peerHandlerRSSMiB, peerHandlerRequestMiB = 56.0, 100.0

// node200 is a node with 200 interfaces (100 veth pairs) and the handler as its own
// process, one policy applied and the node's state reported with every interface.
type node200 struct {
	*overlayNode
	k8s      client.Client
	name     string
	pid      int
	bin      string // the handler's binary
	stateRaw func() string
}

func startNode200(b *testing.B, nodeName string) *node200 {
	ctx := context.Background()
	c := newBenchCluster(b, nodeName)
	k8s, dir, handlerBin, kubeconfig := c.k8s, c.dir, c.handler, c.kubeconfig
	n := c.node(b, nodeName, func(n *nmhost.Node) error {
		_, err := n.Run(ctx, "sh", "-c", `for i in $(seq 1 100); do ip link add v$i type veth peer name v${i}p; done`)
		return err
	})
	policy := nodeName + "-uplink"
	p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: policy}}
	p.Spec.DesiredState = shared.State{Raw: []byte(`{"interfaces":[{"name":"eth1","type":"ethernet","state":"up","ipv4":{"enabled":true,"address":[{"ip":"192.0.2.10","prefix-length":24}]}}],
		"routes":{"config":[{"destination":"0.0.0.0/0","next-hop-address":"192.0.2.254","next-hop-interface":"eth1","metric":100}]}}`)}
	if err := k8s.Create(ctx, p); err != nil {
		b.Fatal(err)
	}
	proc, err := n.startHandlerProcess(handlerBin, kubeconfig, nodeName, filepath.Join(dir, "handler.log"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = proc.Process.Kill(); _ = proc.Wait() })
	nd := &node200{overlayNode: n, k8s: k8s, name: nodeName, pid: proc.Process.Pid, bin: handlerBin}
	nd.stateRaw = func() string {
		nns := &v1beta1.NodeNetworkState{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: nodeName}, nns); err != nil {
			return ""
		}
		return string(nns.Status.CurrentState.Raw)
	}
	waitUntil(b, 2*time.Minute, func() (bool, error) {
		e := &v1beta1.NodeNetworkConfigurationEnactment{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: shared.EnactmentKey(nodeName, policy)}, e); err != nil {
			return false, err
		}
		return node.IsTrue(e, shared.EnactmentAvailable, "") && strings.Count(nd.stateRaw(), `"name":"v`) >= 200, nil
	}, func() string { l, _ := os.ReadFile(filepath.Join(dir, "handler.log")); return string(l) })
	return nd
}

// at200 is the handler's memory at rest on 200 interfaces, once BenchmarkHandlerRSS200 ran:
// BenchmarkScale compares its own against it.
var at200 *handlerMemory

// BenchmarkHandlerRSS200: the handler process's memory in steady state on a node with 200
// interfaces, after applying a policy and reporting the node's state, next to the node's
// NetworkManager measured in the same run. Run with -benchtime 1x.
func BenchmarkHandlerRSS200(b *testing.B) {
	n := startNode200(b, "rss")
	time.Sleep(15 * time.Second) // steady state: nothing left to do
	pid := n.pid
	// Sampled over 10 s: what the heap holds depends on where the collector is in its cycle
	// (each read of the node's state leaves garbage until the next collection).
	var samples, anon, file []float64
	for range 20 {
		samples = append(samples, kit.ProcStatusKiB(pid, "VmRSS")/1024)
		anon = append(anon, kit.ProcStatusKiB(pid, "RssAnon")/1024)
		file = append(file, kit.ProcStatusKiB(pid, "RssFile")/1024)
		time.Sleep(500 * time.Millisecond)
	}
	median := func(v []float64) float64 { v = slices.Clone(v); slices.Sort(v); return v[len(v)/2] }
	rss, hwm, nmRSS := median(samples), kit.ProcStatusKiB(pid, "VmHWM")/1024, kit.ProcStatusKiB(n.NMPID(), "VmRSS")/1024
	fmt.Printf("handler process, steady state on a node with 200 interfaces (one policy applied, state reported): RSS %.1f MiB (median of %d samples over 10 s, %.1f to %.1f; %.1f MiB anonymous, %.1f MiB of the binary and files), peak %.1f MiB\n",
		rss, len(samples), slices.Min(samples), slices.Max(samples), median(anon), median(file), hwm)
	mib := func(metric string) float64 {
		v, err := n.handlerMetric(metric)
		if err != nil {
			b.Fatal(err)
		}
		return v / (1 << 20)
	}
	fmt.Printf("  Go's own: heap in use %.1f MiB, idle %.1f MiB (of it returned to the kernel %.1f MiB), stacks %.1f MiB, runtime %.1f MiB\n",
		mib("go_memstats_heap_inuse_bytes"), mib("go_memstats_heap_idle_bytes"), mib("go_memstats_heap_released_bytes"),
		mib("go_memstats_stack_inuse_bytes"), mib("go_memstats_sys_bytes")-mib("go_memstats_heap_sys_bytes")-mib("go_memstats_stack_sys_bytes"))
	at200 = &handlerMemory{rss: rss, anon: median(anon), heap: mib("go_memstats_heap_inuse_bytes")}
	fmt.Printf("  same node's NetworkManager: RSS %.1f MiB (handler/NetworkManager %.2fx)\n", nmRSS, rss/nmRSS)
	fmt.Printf("  binary %.1f MiB\n", fileMiB(b, n.bin))
	for _, floor := range []struct{ cmd, links string }{
		{"test/node/rssfloor/manager", "controller-runtime's manager, client and cache (what the handler links)"},
		{"test/node/rssfloor/client", "controller-runtime's client and cache only"},
		{"test/node/rssfloor/clientgo", "client-go's REST client and informers and core/v1, no controller-runtime"},
	} {
		bin, err := kit.Binary(floor.cmd)
		if err != nil {
			b.Fatal(err)
		}
		floorRSS, anon, file := idleRSS(b, bin)
		fmt.Printf("  floor: a process linking %s and doing nothing: RSS %.1f MiB (%.1f anonymous, %.1f of its binary's pages; binary %.1f MiB); the handler %.2fx\n",
			floor.links, floorRSS, anon, file, fileMiB(b, bin), rss/floorRSS)
	}
	fmt.Printf("  peer: upstream kubernetes-nmstate handler %.0f MiB RSS with no real interfaces (FIELD-NOTES section 6; %.2fx), requests %.0f MiB\n",
		peerHandlerRSSMiB, rss/peerHandlerRSSMiB, peerHandlerRequestMiB)
	b.ReportMetric(rss, "MiB-rss")
	b.ReportMetric(hwm, "MiB-peak")
	b.ReportMetric(rss/nmRSS, "handler/NM")
}

// idleRSS runs bin, a program that does nothing, and reads its memory once it is idle:
// RSS, anonymous and file-backed, in MiB.
func idleRSS(b *testing.B, bin string) (rss, anon, file float64) {
	cmd := exec.Command(bin)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	time.Sleep(2 * time.Second)
	pid := cmd.Process.Pid
	return kit.ProcStatusKiB(pid, "VmRSS") / 1024, kit.ProcStatusKiB(pid, "RssAnon") / 1024, kit.ProcStatusKiB(pid, "RssFile") / 1024
}

func fileMiB(b *testing.B, path string) float64 {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return float64(fi.Size()) / (1 << 20)
}
