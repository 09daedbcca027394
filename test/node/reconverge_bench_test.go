//go:build node

package node_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
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

// rebootPolicies are 50 policies on one node: 10 bridges (z-bridge-K), their addresses in
// policies named to sort before them (a-addr-K: the mis-ordered dependency), and static
// addresses on 30 more interfaces (m-ip-J).
func rebootPolicies() map[string]string {
	p := map[string]string{}
	for k := 0; k < 10; k++ {
		p[fmt.Sprintf("z-bridge-%d", k)] = fmt.Sprintf(`{"interfaces":[{"name":"br%d","type":"linux-bridge","state":"up",
			"bridge":{"options":{"stp":{"enabled":false}},"port":[{"name":"p%d"}]}}]}`, k, k)
		p[fmt.Sprintf("a-addr-%d", k)] = fmt.Sprintf(`{"interfaces":[{"name":"br%d","ipv4":{"enabled":true,"address":[{"ip":"10.10.%d.1","prefix-length":24}]}}]}`, k, k)
	}
	for j := 0; j < 30; j++ {
		p[fmt.Sprintf("m-ip-%02d", j)] = fmt.Sprintf(`{"interfaces":[{"name":"e%d","type":"ethernet","state":"up",
			"ipv4":{"enabled":true,"address":[{"ip":"10.20.%d.1","prefix-length":24}]}}]}`, j, j)
	}
	return p
}

// rebootNICs cables the bridge ports and the other interfaces as veth pairs inside the node.
func rebootNICs(n *nmhost.Node) error {
	script := `set -e
for k in $(seq 0 9); do ip link add p$k type veth peer name p${k}x; ip link set p${k}x up; done
for j in $(seq 0 29); do ip link add e$j type veth peer name e${j}x; ip link set e${j}x up; done`
	_, err := n.Run(context.Background(), "sh", "-c", script)
	return err
}

// BenchmarkRebootReconvergence: after a reboot, the time from the handler's start to all
// 50 policies Available again, against the per-policy strategy (each policy its own
// transaction with the same probes and enactment writes, in name order, a failed one
// retried after the others, at once: kinder to the peer than a backoff) on the same node
// in the same run. Run with -benchtime 1x.
func BenchmarkRebootReconvergence(b *testing.B) {
	ctx := context.Background()
	const nodeName, peerNode = "reboot", "reboot-peer"
	c := newBenchCluster(b, nodeName)
	k8s, cfg, helperBin := c.k8s, c.cfg, c.helper
	policies := rebootPolicies()
	for name, doc := range policies {
		p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
		p.Spec.DesiredState = shared.State{Raw: []byte(doc)}
		if err := k8s.Create(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
	n, err := newOverlayNode("reboot", helperBin, rebootNICs)
	if err != nil {
		b.Fatal(err)
	}
	defer n.close()

	// allAvailable: every policy's enactment on the node is Available in the running boot.
	allAvailable := func(nodeName string) func() (bool, error) {
		return func() (bool, error) {
			boot, _ := n.bootID()
			list := &v1beta1.NodeNetworkConfigurationEnactmentList{}
			if err := k8s.List(ctx, list, client.MatchingLabels{shared.NodeLabel: nodeName}); err != nil {
				return false, err
			}
			ok := 0
			for i := range list.Items {
				if list.Items[i].Status.BootID == boot && node.IsTrue(&list.Items[i], shared.EnactmentAvailable, "") {
					ok++
				}
			}
			return ok == len(policies), fmt.Errorf("%d of %d available in %s", ok, len(policies), boot)
		}
	}
	handlerRun := func() time.Duration {
		start := time.Now()
		stop, err := n.startHandler(cfg, k8s, nodeName)
		if err != nil {
			b.Fatal(err)
		}
		defer stop()
		waitUntil(b, 3*time.Minute, allAvailable(nodeName), n.NMLog)
		return time.Since(start)
	}
	retries := 0
	peerRun := func() time.Duration {
		start := time.Now()
		r, err := perPolicy(ctx, n, k8s, cfg, nodeName, peerNode, policies)
		if err != nil {
			b.Fatal(err)
		}
		retries = r
		return time.Since(start)
	}

	if err := n.start(ctx); err != nil {
		b.Fatal(err)
	}
	handlerRun() // the first rollout (boot 1); what follows are reboots
	var ours, peer []time.Duration
	for i := 0; i < b.N; i++ {
		for r := 0; r < 3; r++ {
			if err := n.reboot(ctx); err != nil {
				b.Fatal(err)
			}
			ours = append(ours, handlerRun())
			if err := n.reboot(ctx); err != nil {
				b.Fatal(err)
			}
			peer = append(peer, peerRun())
		}
	}
	o, p := kit.Median(ours), kit.Median(peer)
	fmt.Printf("reboot re-convergence, 50 policies on one node (10 mis-ordered dependencies), real NetworkManager, median of %d:\n", len(ours))
	fmt.Printf("  handler, one pass in dependency order   %8v\n", o.Round(time.Millisecond))
	fmt.Printf("  per policy, in name order               %8v  (handler: %.2fx; %d policies failed first and were retried)\n",
		p.Round(time.Millisecond), float64(o)/float64(p), retries)
	b.ReportMetric(float64(o.Milliseconds()), "ms-handler")
	b.ReportMetric(float64(p.Milliseconds()), "ms-per-policy")
	b.ReportMetric(float64(o)/float64(p), "handler/per-policy")
}

func waitUntil(b *testing.B, timeout time.Duration, done func() (bool, error), diag func() string) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := done()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("timed out: %v\n%s", err, diag())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// perPolicy is the peer: each policy its own enactment writes (Progressing, then
// Available) and its own transaction with the handler's probes, in name order; a policy
// that fails (its dependency comes later) is retried after the others.
func perPolicy(ctx context.Context, n *overlayNode, k8s client.Client, cfg *rest.Config, realNode, nodeName string, policies map[string]string) (retries int, err error) {
	nm, err := n.ConnectNM(ctx)
	if err != nil {
		return 0, err
	}
	defer nm.Close()
	probes := n.probes(nm, cfg, k8s, realNode)
	var pending []string
	for name := range policies {
		pending = append(pending, name)
	}
	sort.Strings(pending)
	boot, _ := n.bootID()
	for pass := 0; len(pending) > 0; pass++ {
		if pass == 5 {
			return retries, fmt.Errorf("per-policy: %v never converged", pending)
		}
		var failed []string
		for _, name := range pending {
			e, err := peerEnactment(ctx, k8s, nodeName, name)
			if err != nil {
				return 0, err
			}
			node.SetProgressing(e, "applying")
			if err := k8s.Update(ctx, e); err != nil { // no status subresource
				return 0, err
			}
			s, err := state.Parse([]byte(policies[name]))
			if err != nil {
				return 0, err
			}
			healthy := probes.Baseline(ctx)
			tx, err := nm.Apply(ctx, s, networkmanager.ApplyOptions{RollbackTimeout: 30 * time.Second})
			if err == nil {
				if err = probes.Verify(ctx, healthy); err != nil {
					_ = tx.Rollback(ctx)
				}
			}
			if err != nil {
				failed = append(failed, name)
				node.SetFailing(e, err.Error())
				if err := k8s.Update(ctx, e); err != nil { // no status subresource
					return 0, err
				}
				continue
			}
			if err := tx.Commit(ctx); err != nil {
				return 0, err
			}
			node.SetAvailable(e, "applied")
			e.Status.BootID = boot
			if err := k8s.Update(ctx, e); err != nil { // no status subresource
				return 0, err
			}
		}
		pending = failed
		retries += len(failed)
	}
	return retries, nil
}

func peerEnactment(ctx context.Context, k8s client.Client, nodeName, policy string) (*v1beta1.NodeNetworkConfigurationEnactment, error) {
	e := &v1beta1.NodeNetworkConfigurationEnactment{}
	err := k8s.Get(ctx, client.ObjectKey{Name: shared.EnactmentKey(nodeName, policy)}, e)
	if err == nil {
		return e, nil
	}
	e = &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: shared.EnactmentKey(nodeName, policy),
		Labels: map[string]string{shared.NodeLabel: nodeName, shared.PolicyLabel: policy}}}
	return e, k8s.Create(ctx, e)
}
