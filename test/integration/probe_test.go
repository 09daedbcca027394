//go:build integration

package integration_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/internal/probe"
)

var _ = Describe("the API server and node probes, against the real API server", func() {
	ctx := context.Background()

	It("reaches the API server, and says so when it cannot", func() {
		Expect(probe.APIServer(cfg).Check(ctx)).To(Succeed())
		bad := rest.CopyConfig(cfg)
		bad.Host = "https://127.0.0.1:1" // nothing listens there
		short, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		Expect(probe.APIServer(bad).Check(short)).To(HaveOccurred())
	})

	It("wants the node Ready", func() {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "probe-node"}}
		Expect(k8s.Create(ctx, n)).To(Succeed())
		p := probe.NodeReady(k8s, "probe-node")
		Expect(p.Check(ctx)).To(MatchError(ContainSubstring("no Ready condition")))
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Message: "kubelet stopped posting", LastTransitionTime: metav1.Now()}}
		Expect(k8s.Status().Update(ctx, n)).To(Succeed())
		Expect(p.Check(ctx)).To(MatchError(ContainSubstring("kubelet stopped posting")))
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "probe-node"}, n)).To(Succeed())
		n.Status.Conditions[0].Status = corev1.ConditionTrue
		Expect(k8s.Status().Update(ctx, n)).To(Succeed())
		Expect(p.Check(ctx)).To(Succeed())
	})
})
