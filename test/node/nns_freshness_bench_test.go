//go:build node

package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/node"
	"github.com/nmoverlay/nmoverlay/test/kit"
)

// Upstream kubernetes-nmstate polls the node's state every 60 s (FIELD-NOTES section 6):
// an out-of-band change shows in its NodeNetworkState after up to 60 s plus its write.
const peerNNSPollSeconds = 60.0

// BenchmarkNNSFreshness200: on the node with 200 interfaces, how long an out-of-band
// change (the MTU of an interface no policy manages, set with ip link) takes to show in
// the NodeNetworkState, what it costs the handler, and how many NodeNetworkState writes an
// idle node makes in a minute. Run with -benchtime 1x.
func BenchmarkNNSFreshness200(b *testing.B) {
	n := startNode200(b, "fresh")
	f := nnsFreshness(b, n.overlayNode, n.pid, n.k8s, n.name, "v1")
	fmt.Printf("NodeNetworkState freshness on a node with 200 interfaces: %s\n", f)
	fmt.Printf("  peer: upstream kubernetes-nmstate polls every %.0f s: up to %.0f s (%.0fx the worst here)\n",
		peerNNSPollSeconds, peerNNSPollSeconds, peerNNSPollSeconds/f.worst.Seconds())
	b.ReportMetric(f.median.Seconds(), "s-fresh-median")
	b.ReportMetric(f.worst.Seconds(), "s-fresh-worst")
	b.ReportMetric(f.idleWritesPerHour, "idle-writes/h")
}

// freshness is how the NodeNetworkState follows the node: how long an out-of-band change
// takes to show (median and worst of 5), the handler's CPU time from the change to its
// write (its re-read of the node's state, median), and its writes an hour at rest.
type freshness struct {
	median, worst, cpu time.Duration
	idleWritesPerHour  float64
	iface              string
}

func (f freshness) String() string {
	return fmt.Sprintf("an out-of-band change (ip link set %s mtu) shows in %.2f s (median of 5), %.2f s at worst; the handler's CPU from the change to its write %.2f s (median); at rest %.0f writes an hour",
		f.iface, f.median.Seconds(), f.worst.Seconds(), f.cpu.Seconds(), f.idleWritesPerHour)
}

// nnsFreshness measures freshness on the node whose handler process is pid: first its
// writes in a minute at rest, then five MTU changes of iface, an interface no policy
// manages, each alone.
func nnsFreshness(b *testing.B, n *overlayNode, pid int, k8s client.Client, nodeName, iface string) freshness {
	ctx := context.Background()
	writes := func() float64 {
		v, err := n.handlerMetric("nmoverlay_nodenetworkstate_writes_total")
		if err != nil {
			b.Fatal(err)
		}
		return v
	}
	time.Sleep(10 * time.Second) // the writes after the apply are over
	before := writes()
	if before == 0 {
		b.Fatal("no NodeNetworkState write counted since the handler started: is nmoverlay_nodenetworkstate_writes_total served?")
	}
	const idle = time.Minute
	time.Sleep(idle)
	idleWrites := writes() - before
	// The NodeNetworkState's metadata is polled, and the whole object read once it changed:
	// a read of half a megabyte every 20 ms would take the CPU the handler needs.
	var version string
	mtuOf := func(name string) int {
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(v1beta1.GroupVersion.WithKind("NodeNetworkState"))
		if err := k8s.Get(ctx, client.ObjectKey{Name: nodeName}, meta); err != nil || meta.ResourceVersion == version {
			return 0
		}
		nns := &v1beta1.NodeNetworkState{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: nodeName}, nns); err != nil {
			return 0
		}
		version = nns.ResourceVersion
		var s struct {
			Interfaces []struct {
				Name string `json:"name"`
				MTU  int    `json:"mtu"`
			} `json:"interfaces"`
		}
		if err := json.Unmarshal(nns.Status.CurrentState.Raw, &s); err != nil {
			return 0
		}
		for _, it := range s.Interfaces {
			if it.Name == name {
				return it.MTU
			}
		}
		return 0
	}
	var took, cpu []time.Duration
	for i := range 5 {
		mtu := 1400 + i
		cpuBefore, start := kit.ProcCPU(pid), time.Now()
		if _, err := n.Run(ctx, "ip", "link", "set", iface, "mtu", strconv.Itoa(mtu)); err != nil {
			b.Fatal(err)
		}
		for mtuOf(iface) != mtu {
			if time.Since(start) > 2*time.Minute {
				b.Fatalf("the NodeNetworkState does not show %s's MTU %d after 2 minutes", iface, mtu)
			}
			time.Sleep(20 * time.Millisecond)
		}
		took, cpu = append(took, time.Since(start)), append(cpu, kit.ProcCPU(pid)-cpuBefore)
		// Each change alone, on a node at rest: past the reporter's spacing of writes, which
		// grows while changes keep coming.
		time.Sleep(node.DefaultMinInterval + node.DefaultMaxInterval + time.Second)
	}
	slices.Sort(took)
	slices.Sort(cpu)
	return freshness{median: took[len(took)/2], worst: took[len(took)-1], cpu: cpu[len(cpu)/2],
		idleWritesPerHour: idleWrites * float64(time.Hour/idle), iface: iface}
}
