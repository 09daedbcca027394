//go:build integration

package integration_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/node"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/internal/version"
)

// reporterNode is one spec's node with a NodeNetworkState reporter over a state the spec
// sets, counting its reads.
type reporterNode struct {
	name    string
	mu      sync.Mutex
	current state.State
	reads   int
	readErr error // what Show returns instead of the state, when set
	changes chan struct{}
	urgent  chan struct{}
}

var reporterNodes int

func mtu(v int) *int { return &v }

// startReporter creates a node of the spec's own and runs its reporter until the spec ends,
// over a node with eth0 at MTU 1500.
func startReporter(configure ...func(*node.Reporter)) *reporterNode {
	GinkgoHelper()
	reporterNodes++
	ctx := context.Background()
	n := &reporterNode{name: fmt.Sprintf("rep-node-%d", reporterNodes), changes: make(chan struct{}, 1), urgent: make(chan struct{}, 1),
		current: state.State{Interfaces: []state.Interface{{Name: "eth0", Type: state.Ethernet, State: state.Up, MTU: mtu(1500)}}}}
	Expect(k8s.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name}})).To(Succeed())
	r := &node.Reporter{Client: k8s, NodeName: n.name, Changes: n.changes, MinInterval: time.Second, MaxInterval: time.Second,
		Show: func(context.Context) (state.State, error) {
			n.mu.Lock()
			defer n.mu.Unlock()
			n.reads++
			return n.current, n.readErr
		},
		NMVersion:     func() (string, error) { return "1.42.4", nil },
		EngineVersion: version.Engine("test"),
		Overlay: func() (*v1beta1.OverlayStatus, error) {
			return &v1beta1.OverlayStatus{Ephemeral: []v1beta1.EphemeralProfile{{File: "br-ex.nmconnection", Change: "added", ID: "br-ex", Owned: false}}}, nil
		},
	}
	r.Urgent = n.urgent
	for _, c := range configure {
		c(r)
	}
	rctx, stop := context.WithCancel(ctx)
	// The cache a handler's manager gives it, scoped to its node (node.CacheOptions).
	opts := node.CacheOptions(n.name)
	opts.Scheme = k8s.Scheme()
	c, err := cache.New(cfg, opts)
	Expect(err).NotTo(HaveOccurred())
	go func() { _ = c.Start(rctx) }()
	Expect(c.WaitForCacheSync(rctx)).To(BeTrue())
	r.Cache = c
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Start(rctx) }()
	DeferCleanup(func() { stop(); <-done })
	return n
}

// set sets the state and signals a change (one pending signal stands for any number).
func (n *reporterNode) set(s state.State) {
	n.mu.Lock()
	n.current = s
	n.mu.Unlock()
	select {
	case n.changes <- struct{}{}:
	default:
	}
}

// setUrgent sets the state and signals it as a change of the overlay.
func (n *reporterNode) setUrgent(s state.State) {
	n.mu.Lock()
	n.current = s
	n.mu.Unlock()
	select {
	case n.urgent <- struct{}{}:
	default:
	}
}

func (n *reporterNode) readCount() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.reads
}

// nns is the node's NodeNetworkState, nil until there is one.
func (n *reporterNode) nns() *v1beta1.NodeNetworkState {
	s := &v1beta1.NodeNetworkState{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: n.name}, s); err != nil {
		return nil
	}
	return s
}

// reported waits for the reporter's first write.
func (n *reporterNode) reported() {
	GinkgoHelper()
	Eventually(func() string {
		if s := n.nns(); s != nil {
			return string(s.Status.CurrentState.Raw)
		}
		return ""
	}, "10s").Should(ContainSubstring(`"mtu":1500`))
}

var _ = Describe("the NodeNetworkState reporter", func() {
	It("creates the node's state at start, owned by the Node, with the overlay's unowned profiles", func() {
		n := startReporter()
		n.reported()
		s := n.nns()
		Expect(s.OwnerReferences).To(ContainElement(HaveField("Name", n.name)))
		Expect(s.Status.HostNetworkManagerVersion).To(Equal("1.42.4"))
		Expect(s.Status.Overlay.Ephemeral).To(ContainElement(HaveField("Owned", false)))
		// kubernetes-nmstate's fields: the NetworkManager the handler applies through (the
		// node's), the engine's version, and whether the state could be read.
		Expect(s.Status.HandlerNetworkManagerVersion).To(Equal("1.42.4"))
		Expect(s.Status.HandlerNmstateVersion).To(Equal("nmoverlay " + version.Version + " (test)"))
		Expect(s.Status.Conditions).To(ConsistOf(
			SatisfyAll(HaveField("Type", "Available"), HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "SuccessfullyConfigured")),
			SatisfyAll(HaveField("Type", "Failing"), HaveField("Status", metav1.ConditionFalse))))
	})

	It("comes back within 5 s when someone deletes it", func() {
		n := startReporter()
		n.reported()
		Expect(k8s.Delete(context.Background(), n.nns())).To(Succeed())
		deleted := time.Now()
		Eventually(func() string {
			if s := n.nns(); s != nil {
				return string(s.Status.CurrentState.Raw)
			}
			return ""
		}, "5s", "50ms").Should(ContainSubstring(`"mtu":1500`))
		AddReportEntry("NodeNetworkState back after", time.Since(deleted).String())
	})

	It("says Failing, with why, when the node's state cannot be read, and keeps the last state read", func() {
		n := startReporter()
		n.reported()
		n.mu.Lock()
		n.readErr = errors.New("NetworkManager is not running")
		n.mu.Unlock()
		n.changes <- struct{}{}
		Eventually(func() []metav1.Condition { return n.nns().Status.Conditions }, "10s").Should(ContainElement(SatisfyAll(
			HaveField("Type", "Failing"), HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "FailedToConfigure"),
			HaveField("Message", ContainSubstring("NetworkManager is not running")))))
		Expect(string(n.nns().Status.CurrentState.Raw)).To(ContainSubstring(`"mtu":1500`))

		n.mu.Lock()
		n.readErr = nil
		n.mu.Unlock()
		n.changes <- struct{}{}
		Eventually(func() []metav1.Condition { return n.nns().Status.Conditions }, "10s").Should(ContainElement(SatisfyAll(
			HaveField("Type", "Available"), HaveField("Status", metav1.ConditionTrue))))
	})

	It("holds a change until its write spacing is over, but not one signalled urgent (the overlay degraded)", func() {
		n := startReporter(func(r *node.Reporter) { r.MinInterval, r.MaxInterval = 10*time.Second, 10*time.Second })
		n.reported()
		eth0 := func(m int) state.State {
			return state.State{Interfaces: []state.Interface{{Name: "eth0", Type: state.Ethernet, State: state.Up, MTU: mtu(m)}}}
		}
		current := func() string {
			if s := n.nns(); s != nil {
				return string(s.Status.CurrentState.Raw)
			}
			return ""
		}
		n.set(eth0(1400))
		Consistently(current, "3s", "100ms").ShouldNot(ContainSubstring(`"mtu":1400`), "written within the 10 s spacing")
		start := time.Now()
		n.setUrgent(eth0(1480))
		Eventually(current, "3s", "50ms").Should(ContainSubstring(`"mtu":1480`))
		GinkgoWriter.Printf("an urgent change written %s after its signal (spacing 10 s)\n", time.Since(start).Round(10*time.Millisecond))
	})

	It("spaces its writes further while the changes keep coming", func() {
		n := startReporter(func(r *node.Reporter) { r.MinInterval, r.MaxInterval = time.Second, 4*time.Second })
		n.reported()
		// A change every 250 ms for 12 s: spaced a fixed second, 10-12 writes; spaced 1, 2,
		// 4, 4 s, about 5.
		versions := map[string]bool{}
		var writes []time.Time
		look := func() {
			if s := n.nns(); s != nil && !versions[s.ResourceVersion] {
				versions[s.ResourceVersion] = true
				writes = append(writes, time.Now())
			}
		}
		look()
		for i := range 48 {
			n.set(state.State{Interfaces: []state.Interface{{Name: "eth0", Type: state.Ethernet, State: state.Up, MTU: mtu(2000 + i)}}})
			for range 5 {
				look()
				time.Sleep(50 * time.Millisecond)
			}
		}
		gaps := []time.Duration{}
		for i := 1; i < len(writes); i++ {
			gaps = append(gaps, writes[i].Sub(writes[i-1]).Round(100*time.Millisecond))
		}
		GinkgoWriter.Printf("writes while changes kept coming for 12 s: %d, gaps %v\n", len(writes)-1, gaps)
		Expect(len(writes)-1).To(BeNumerically("<=", 6), "gaps %v", gaps)
		Expect(gaps).NotTo(BeEmpty())
		Expect(gaps[len(gaps)-1]).To(BeNumerically(">=", 3*time.Second), "the spacing grew to 4 s: gaps %v", gaps)
	})

	It("writes nothing when a change signal brings no change", func() {
		n := startReporter()
		n.reported()
		version := n.nns().ResourceVersion
		before := n.readCount()
		n.changes <- struct{}{}
		Eventually(n.readCount, "5s").Should(BeNumerically(">", before))
		Consistently(func() string { return n.nns().ResourceVersion }, "1s").Should(Equal(version))
	})

	It("writes a burst of changes once, where it ended, and an isolated change within its quiet", func() {
		n := startReporter()
		n.reported()
		time.Sleep(1100 * time.Millisecond) // past its write spacing (MinInterval 1 s here)
		version := n.nns().ResourceVersion
		seen := map[string]bool{}
		watchVersions := func() {
			if s := n.nns(); s != nil {
				seen[s.ResourceVersion] = true
			}
		}
		// A burst: a signal per change, 200 ms apart.
		for _, m := range []int{1400, 1450, 1480, 9000} {
			n.set(state.State{Interfaces: []state.Interface{{Name: "eth0", Type: state.Ethernet, State: state.Up, MTU: mtu(m)}}})
			watchVersions()
			time.Sleep(200 * time.Millisecond)
		}
		// One read per look, so the version that shows the end is the one recorded.
		Eventually(func() string {
			s := n.nns()
			if s == nil {
				return ""
			}
			seen[s.ResourceVersion] = true
			return string(s.Status.CurrentState.Raw)
		}, "5s", "50ms").Should(ContainSubstring(`"mtu":9000`))
		delete(seen, version)
		Expect(seen).To(HaveLen(1), "one write for the burst, of its end")

		time.Sleep(1100 * time.Millisecond)
		start := time.Now()
		n.set(state.State{Interfaces: []state.Interface{{Name: "eth0", Type: state.Ethernet, State: state.Down, MTU: mtu(9000)}}})
		Eventually(func() string { return string(n.nns().Status.CurrentState.Raw) }, "5s", "20ms").Should(ContainSubstring(`"state":"down"`))
		Expect(time.Since(start)).To(BeNumerically("<", time.Second), "an isolated change waits its quiet, not the spacing")
	})

	It("reads the changes a transaction makes once it ended, and writes where it ended", func() {
		tx := &node.Transactions{}
		n := startReporter(func(r *node.Reporter) { r.Transactions = tx })
		n.reported()
		time.Sleep(1100 * time.Millisecond) // past its write spacing (MinInterval 1 s here)
		version, reads := n.nns().ResourceVersion, n.readCount()
		end := tx.Begin()
		// An apply: its devices change far enough apart for each to settle on its own.
		for _, m := range []int{1400, 1450, 9000} {
			n.set(state.State{Interfaces: []state.Interface{{Name: "eth0", Type: state.Ethernet, State: state.Up, MTU: mtu(m)}}})
			time.Sleep(2 * node.DefaultQuiet)
		}
		Consistently(n.readCount, "1s").Should(Equal(reads), "nothing read while the transaction runs")
		Expect(n.nns().ResourceVersion).To(Equal(version))
		end()
		Eventually(func() string { return string(n.nns().Status.CurrentState.Raw) }, "5s", "20ms").Should(ContainSubstring(`"mtu":9000`))
		Expect(n.readCount()).To(Equal(reads+1), "one read, of where it ended")
	})

	It("writes the new state when it changed", func() {
		n := startReporter()
		n.reported()
		n.set(state.State{Interfaces: []state.Interface{{Name: "eth0", Type: state.Ethernet, State: state.Up, MTU: mtu(9000)}}})
		Eventually(func() string { return string(n.nns().Status.CurrentState.Raw) }, "5s").Should(ContainSubstring(`"mtu":9000`))
	})
})
