//go:build node

package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/node"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/kit"
	"github.com/nmoverlay/nmoverlay/test/nmhost"
)

// etcdRequestLimit is etcd's default request size limit (--max-request-bytes): a
// NodeNetworkState over it is refused by the API server.
const etcdRequestLimit = 1.5 * (1 << 20)

// BenchmarkScale: a node with 1,000 veth pairs (2,000 interfaces) and the handler as its
// own process. A policy with 500 interfaces (an address on each) is applied in one
// transaction: time from its creation to Available, profiled (benchOutDir). The handler's
// memory at rest and at its peak, beside NetworkManager's and, when BenchmarkHandlerRSS200
// ran first, beside its own on 200 interfaces. The NodeNetworkState's freshness, and its
// size against etcd's request limit. Re-convergence after a reboot. Measured in the same
// run: NetworkManager's own floor for the same 500 profiles (nmFloor, in each of
// floorOrders, before the handler starts), and the naive way, a transaction per
// interface, timed on 10 and scaled to 500. Run with -benchtime 1x.
func BenchmarkScale(b *testing.B) {
	const pairs, policyIfaces = 1000, 500
	ctx := context.Background()
	const nodeName = "scale"
	c := newBenchCluster(b, nodeName)
	k8s, handlerBin, kubeconfig := c.k8s, c.handler, c.kubeconfig
	bootStart := time.Now()
	n := c.node(b, nodeName, func(n *nmhost.Node) error {
		var batch strings.Builder
		for i := range pairs {
			fmt.Fprintf(&batch, "link add s%d type veth peer name s%dp\nlink set s%dp up\n", i, i, i)
		}
		return ipBatch(n, batch.String())
	})
	fmt.Printf("node with %d interfaces: up and reaching the API server %.1fs after boot\n", 2*pairs, time.Since(bootStart).Seconds())

	// NetworkManager's own floor, before the handler starts, so that nothing else asks
	// NetworkManager anything: on the other 500 interfaces, the same profiles as the
	// policy's, in each of floorOrders, one after the other, and the lowest counts. Each
	// order's profiles are removed after it, so the apply starts from the same node: every
	// autoconnection check NetworkManager makes compares each profile with each active
	// one, and 500 left active made the same order take 25 to 70 s instead of 5 to 9.
	var floorNames []string
	for i := range policyIfaces {
		floorNames = append(floorNames, fmt.Sprintf("s%d", policyIfaces+i))
	}
	floorAddr := func(i int) string {
		j := policyIfaces + i
		return fmt.Sprintf("10.%d.%d.1", j/250, j%250)
	}
	var floor time.Duration
	var timed []string
	for _, order := range floorOrders {
		took, clean, err := nmFloor(ctx, n.BusAddress(), floorNames, floorAddr, order)
		if err != nil {
			b.Fatal(err)
		}
		if err := clean(); err != nil {
			b.Fatal(err)
		}
		if floor == 0 || took < floor {
			floor = took
		}
		timed = append(timed, fmt.Sprintf("%s %.1fs", order.name, took.Seconds()))
	}

	uplink := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "scale-uplink"}}
	uplink.Spec.DesiredState = shared.State{Raw: []byte(`{"interfaces":[{"name":"eth1","type":"ethernet","state":"up","ipv4":{"enabled":true,"address":[{"ip":"192.0.2.10","prefix-length":24}]}}],
		"routes":{"config":[{"destination":"0.0.0.0/0","next-hop-address":"192.0.2.254","next-hop-interface":"eth1","metric":100}]}}`)}
	if err := k8s.Create(ctx, uplink); err != nil {
		b.Fatal(err)
	}
	logPath := filepath.Join(benchOutDir(b), "scale-handler.log")
	_ = os.Remove(logPath)
	proc, err := n.startHandlerProcess(handlerBin, kubeconfig, nodeName, logPath, "--pprof-bind-address", handlerPprofAddr)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = proc.Process.Kill(); _ = proc.Wait() }()
	diag := func() string { l, _ := os.ReadFile(logPath); return string(l) }
	available := func(policy string) func() (bool, error) {
		return func() (bool, error) {
			e := &v1beta1.NodeNetworkConfigurationEnactment{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: shared.EnactmentKey(nodeName, policy)}, e); err != nil {
				return false, err
			}
			if node.IsTrue(e, shared.EnactmentFailing, "") {
				b.Fatalf("%s failed: %v", policy, e.Status.Conditions)
			}
			boot, _ := n.bootID()
			return node.IsTrue(e, shared.EnactmentAvailable, "") && e.Status.BootID == boot, nil
		}
	}
	// shows: the node's NodeNetworkState, read into nns, has what in its state.
	var nns v1beta1.NodeNetworkState
	shows := func(what string) func() (bool, error) {
		return func() (bool, error) {
			if err := k8s.Get(ctx, client.ObjectKey{Name: nodeName}, &nns); err != nil {
				return false, err
			}
			return strings.Contains(string(nns.Status.CurrentState.Raw), what), nil
		}
	}
	waitUntil(b, 3*time.Minute, available("scale-uplink"), diag)
	// The node at rest before the policy is created, as for the floor: the handler's read
	// of the node after the uplink's apply (for its NodeNetworkState and drift check) is
	// over once the NodeNetworkState shows the uplink's address.
	waitUntil(b, time.Minute, shows(`"192.0.2.10"`), diag)
	time.Sleep(time.Second)

	// One policy, 500 interfaces.
	type iface struct {
		Name string         `json:"name"`
		Type string         `json:"type"`
		Stat string         `json:"state"`
		IPv4 map[string]any `json:"ipv4"`
	}
	var ifaces []iface
	for i := range policyIfaces {
		ifaces = append(ifaces, iface{Name: fmt.Sprintf("s%d", i), Type: "ethernet", Stat: "up", IPv4: map[string]any{"enabled": true,
			"address": []map[string]any{{"ip": fmt.Sprintf("10.%d.%d.1", i/250, i%250), "prefix-length": 24}}}})
	}
	desired, _ := json.Marshal(map[string]any{"interfaces": ifaces})
	big := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "scale-500"}}
	big.Spec.DesiredState = shared.State{Raw: desired}
	pid := proc.Process.Pid
	profiled := n.profileHandler(b, "scale-500", profileSeconds)
	peakOf := n.handlerMemoryPeak(pid)
	start := time.Now()
	if err := k8s.Create(ctx, big); err != nil {
		b.Fatal(err)
	}
	waitUntil(b, 10*time.Minute, available("scale-500"), diag)
	applyTime := time.Since(start)
	peak, nmPeak := peakOf()
	fmt.Printf("policy with %d interfaces, one transaction: Available %.1fs after it was created\n", policyIfaces, applyTime.Seconds())

	// The NodeNetworkState, once it shows the addresses.
	waitUntil(b, 2*time.Minute, shows(fmt.Sprintf(`"10.%d.%d.1"`, (policyIfaces-1)/250, (policyIfaces-1)%250)), diag)
	// The CPU profile and the execution trace end first: their buffers, and the trace's
	// stream, are the handler's memory and CPU while they run.
	profiled()
	time.Sleep(15 * time.Second) // at rest: nothing left to do
	rest, nmRest := n.handlerMemoryAtRest(pid), kit.ProcStatusKiB(n.NMPID(), "VmRSS")/1024
	n.saveHandlerProfile(b, "/debug/pprof/heap?gc=1", "scale-rest.heap.pprof", time.Minute)
	fmt.Printf("  handler memory, %d interfaces: at rest after the policy: %s; NetworkManager RSS %.1f MiB (handler/NetworkManager %.2fx)\n", 2*pairs+2, rest, nmRest, rest.rss/nmRest)
	fmt.Printf("    peak during the apply: %s; NetworkManager's peak RSS %.1f MiB (handler/NetworkManager %.2fx)\n", peak, nmPeak, peak.rss/nmPeak)
	if at200 != nil {
		fmt.Printf("    against 200 interfaces (BenchmarkHandlerRSS200, same run): anonymous at rest %.2fx, RSS at rest %.2fx\n", rest.anon/at200.anon, rest.rss/at200.rss)
	}
	fresh := nnsFreshness(b, n, pid, k8s, nodeName, fmt.Sprintf("s%d", 2*policyIfaces-1))
	fmt.Printf("  NodeNetworkState freshness on %d interfaces: %s\n", 2*pairs+2, fresh)
	whole, _ := json.Marshal(nns)
	summarized := nns.Status.Summarized
	if summarized == "" {
		summarized = "nothing"
	}
	fmt.Printf("NodeNetworkState of %d interfaces: %d bytes (currentState %d), %.2fx etcd's request limit; left out: %s\n",
		strings.Count(string(nns.Status.CurrentState.Raw), `"name":"`), len(whole), len(nns.Status.CurrentState.Raw), float64(len(whole))/etcdRequestLimit, summarized)

	// Re-convergence after a reboot: the profiles went with the boot (the overlay's upper
	// layer is tmpfs), so the handler, started in the new boot, applies both policies again
	// in one transaction; timed until both are Available in that boot.
	_ = proc.Process.Kill()
	_ = proc.Wait()
	if err := n.reboot(ctx); err != nil {
		b.Fatal(err)
	}
	waitUntil(b, time.Minute, func() (bool, error) { return n.reachesAPI() == nil, nil }, func() string { return "the node does not reach the API server" })
	rebootStart := time.Now()
	if proc, err = n.startHandlerProcess(handlerBin, kubeconfig, nodeName, logPath); err != nil {
		b.Fatal(err)
	}
	waitUntil(b, 10*time.Minute, func() (bool, error) {
		if ok, err := available("scale-uplink")(); !ok {
			return ok, err
		}
		return available("scale-500")()
	}, diag)
	reconverged := time.Since(rebootStart)
	fmt.Printf("  after a reboot: both policies (%d interfaces) Available %.1fs after the handler started\n", policyIfaces+1, reconverged.Seconds())

	fmt.Printf("  NetworkManager's floor: the same %d profiles over D-Bus, %s (apply/floor %.2fx, after a reboot/floor %.2fx, against the lowest)\n",
		policyIfaces, strings.Join(timed, "; "), applyTime.Seconds()/floor.Seconds(), reconverged.Seconds()/floor.Seconds())
	// The handler is stopped, so that it does not read the node after each naive change
	// (the naive way's profiles replace the policy's on its first interfaces).
	_ = proc.Process.Kill()
	_ = proc.Wait()

	// The naive way, on the same node: a transaction per interface (the engine's own Apply
	// and Commit, no probes, no API), as a per-interface policy would be applied. Each reads
	// all 2,000 devices back, so it runs on a sample and is scaled to 500.
	const sample = 10
	nm, err := n.ConnectNM(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer nm.Close()
	naiveStart := time.Now()
	for i := range sample {
		one, err := state.Parse([]byte(fmt.Sprintf(`{"interfaces":[{"name":"s%d","type":"ethernet","state":"up","ipv4":{"enabled":true,"address":[{"ip":"10.%d.%d.2","prefix-length":24}]}}]}`,
			i, 100+i/250, i%250)))
		if err != nil {
			b.Fatal(err)
		}
		tx, err := nm.Apply(ctx, one, networkmanager.ApplyOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	naive := time.Since(naiveStart) * policyIfaces / sample
	fmt.Printf("  naive: a transaction per interface, %d of them timed, %.1fs for %d (handler/naive %.3fx; the handler's time includes its probes and API round trips)\n",
		sample, naive.Seconds(), policyIfaces, applyTime.Seconds()/naive.Seconds())
	b.ReportMetric(applyTime.Seconds(), "s-apply500")
	b.ReportMetric(floor.Seconds(), "s-floor500")
	b.ReportMetric(reconverged.Seconds(), "s-reboot500")
	b.ReportMetric(rest.rss, "MiB-rss")
	b.ReportMetric(rest.anon, "MiB-anon")
	b.ReportMetric(float64(len(whole)), "B-nns")
	b.ReportMetric(fresh.worst.Seconds(), "s-fresh-worst")
}
