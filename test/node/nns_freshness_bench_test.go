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
)

// Upstream kubernetes-nmstate polls the node's state every 60 s (FIELD-NOTES section 6):
// an out-of-band change shows in its NodeNetworkState after up to 60 s plus its write.
const peerNNSPollSeconds = 60.0

// BenchmarkNNSFreshness200: on the node with 200 interfaces, how long an out-of-band
// change (the MTU of an interface no policy manages, set with ip link) takes to show in
// the NodeNetworkState, and how many NodeNetworkState writes an idle node makes in a
// minute. Run with -benchtime 1x.
func BenchmarkNNSFreshness200(b *testing.B) {
	ctx := context.Background()
	n := startNode200(b, "fresh")
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

	mtuOf := func(name string) int {
		var s struct {
			Interfaces []struct {
				Name string `json:"name"`
				MTU  int    `json:"mtu"`
			} `json:"interfaces"`
		}
		if err := json.Unmarshal([]byte(n.stateRaw()), &s); err != nil {
			return 0
		}
		for _, it := range s.Interfaces {
			if it.Name == name {
				return it.MTU
			}
		}
		return 0
	}
	var took []time.Duration
	for i := range 5 {
		mtu := 1400 + i
		start := time.Now()
		if _, err := n.Run(ctx, "ip", "link", "set", "v1", "mtu", strconv.Itoa(mtu)); err != nil {
			b.Fatal(err)
		}
		for mtuOf("v1") != mtu {
			if time.Since(start) > 2*time.Minute {
				b.Fatalf("the NodeNetworkState does not show v1's MTU %d after 2 minutes", mtu)
			}
			time.Sleep(20 * time.Millisecond)
		}
		took = append(took, time.Since(start))
		time.Sleep(6 * time.Second) // past the reporter's interval between writes: each change measured alone
	}
	slices.Sort(took)
	median, worst := took[len(took)/2], took[len(took)-1]
	fmt.Printf("NodeNetworkState freshness on a node with 200 interfaces: an out-of-band change (ip link set v1 mtu) shows in %.2f s (median of %d), %.2f s at worst\n",
		median.Seconds(), len(took), worst.Seconds())
	fmt.Printf("  peer: upstream kubernetes-nmstate polls every %.0f s: up to %.0f s (%.0fx the worst here)\n",
		peerNNSPollSeconds, peerNNSPollSeconds, peerNNSPollSeconds/worst.Seconds())
	fmt.Printf("  idle node: %.0f NodeNetworkState writes in %s (%.0f an hour)\n", idleWrites, idle, idleWrites*float64(time.Hour/idle))
	b.ReportMetric(median.Seconds(), "s-fresh-median")
	b.ReportMetric(worst.Seconds(), "s-fresh-worst")
	b.ReportMetric(idleWrites*float64(time.Hour/idle), "idle-writes/h")
}
