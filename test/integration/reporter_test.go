//go:build integration

package integration_test

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/reconciler/node"
	"github.com/nmoverlay/nmoverlay/reconciler/state"
)

var _ = Describe("the NodeNetworkState reporter", Ordered, func() {
	ctx := context.Background()
	var (
		mu      sync.Mutex
		current state.State
		reads   int
		changes = make(chan struct{}, 1)
		stop    context.CancelFunc
		done    = make(chan struct{})
	)
	setState := func(s state.State) {
		mu.Lock()
		current = s
		mu.Unlock()
		changes <- struct{}{}
	}
	nns := func() *v1beta1.NodeNetworkState {
		n := &v1beta1.NodeNetworkState{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: "rep-node"}, n); err != nil {
			return nil
		}
		return n
	}
	mtu := func(v int) *int { return &v }

	BeforeAll(func() {
		Expect(k8s.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "rep-node"}})).To(Succeed())
		current = state.State{Interfaces: []state.Interface{{Name: "eth0", Type: state.Ethernet, State: state.Up, MTU: mtu(1500)}}}
		r := &node.Reporter{Client: k8s, NodeName: "rep-node", Changes: changes, MinInterval: time.Second,
			Show: func(context.Context) (state.State, error) {
				mu.Lock()
				defer mu.Unlock()
				reads++
				return current, nil
			},
			NMVersion: func() (string, error) { return "1.42.4", nil },
			Overlay: func() (*v1beta1.OverlayStatus, error) {
				return &v1beta1.OverlayStatus{Ephemeral: []v1beta1.EphemeralProfile{{File: "br-ex.nmconnection", Change: "added", ID: "br-ex", Owned: false}}}, nil
			},
		}
		var rctx context.Context
		rctx, stop = context.WithCancel(ctx)
		go func() { defer close(done); _ = r.Start(rctx) }()
		DeferCleanup(func() { stop(); <-done })
	})

	It("creates the node's state at start, owned by the Node, with the overlay's unowned profiles", func() {
		Eventually(nns, "10s").ShouldNot(BeNil())
		Eventually(func() string { n := nns(); return string(n.Status.CurrentState.Raw) }, "10s").Should(ContainSubstring(`"mtu":1500`))
		n := nns()
		Expect(n.OwnerReferences).To(ContainElement(HaveField("Name", "rep-node")))
		Expect(n.Status.HostNetworkManagerVersion).To(Equal("1.42.4"))
		Expect(n.Status.Overlay.Ephemeral).To(ContainElement(HaveField("Owned", false)))
	})

	It("writes nothing when a change signal brings no change", func() {
		version := nns().ResourceVersion
		mu.Lock()
		before := reads
		mu.Unlock()
		changes <- struct{}{}
		Eventually(func() int { mu.Lock(); defer mu.Unlock(); return reads }, "5s").Should(BeNumerically(">", before))
		Consistently(func() string { return nns().ResourceVersion }, "1s").Should(Equal(version))
	})

	It("writes the new state when it changed", func() {
		setState(state.State{Interfaces: []state.Interface{{Name: "eth0", Type: state.Ethernet, State: state.Up, MTU: mtu(9000)}}})
		Eventually(func() string { return string(nns().Status.CurrentState.Raw) }, "5s").Should(ContainSubstring(`"mtu":9000`))
	})
})
