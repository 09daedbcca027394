package cluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nmoverlay/nmoverlay/api"
	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/rebootgate"
)

// TestRebootGateKeepsTaintsWrittenMeanwhile: a pass that decided on a Node its cache showed
// before someone else added a taint (the node lifecycle controller's not-ready, an
// administrator's) does not write its taint list over theirs: its patch is refused, and the
// pass after it, on the new Node, taints it keeping theirs. The cache and the API server
// are a client double here; the integration tier runs the gate against a real one.
func TestRebootGateKeepsTaintsWrittenMeanwhile(t *testing.T) {
	scheme, err := api.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w1"}}
	n.Status.NodeInfo.BootID = "boot-2"
	p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "bond", Generation: 1}}
	e := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: "w1.bond",
		Labels: map[string]string{shared.NodeLabel: "w1", shared.PolicyLabel: "bond"}}}
	shared.SetEnactment(&e.Status.Conditions, shared.EnactmentAvailable, "applied in boot boot-1")
	e.Status.PolicyGeneration, e.Status.BootID = 1, "boot-1"
	server := fake.NewClientBuilder().WithScheme(scheme).WithObjects(n, p, e).
		WithIndex(&v1beta1.NodeNetworkConfigurationEnactment{}, enactmentNodeIndex,
			func(o client.Object) []string { return []string{o.GetLabels()[shared.NodeLabel]} }).Build()
	ctx := context.Background()
	stale := &corev1.Node{}
	if err := server.Get(ctx, client.ObjectKey{Name: "w1"}, stale); err != nil {
		t.Fatal(err)
	}
	theirs := corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}
	fresh := stale.DeepCopy()
	fresh.Spec.Taints = []corev1.Taint{theirs}
	if err := server.Update(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	// The cache still shows the Node as it was.
	cache := interceptor.NewClient(server.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if n, ok := obj.(*corev1.Node); ok {
				stale.DeepCopyInto(n)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		}})
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "w1"}}
	res, err := (&RebootGateController{Client: cache}).Reconcile(ctx, req)
	if err != nil || res.RequeueAfter != conflictRetry {
		t.Fatalf("on a stale Node: result %+v, error %v; want the pass decided again soon", res, err)
	}
	got := &corev1.Node{}
	if err := server.Get(ctx, client.ObjectKey{Name: "w1"}, got); err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Taints) != 1 || got.Spec.Taints[0] != theirs {
		t.Fatalf("after a pass on a stale Node, taints %v; want theirs alone", got.Spec.Taints)
	}
	if _, err := (&RebootGateController{Client: server}).Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := server.Get(ctx, client.ObjectKey{Name: "w1"}, got); err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Taints) != 2 || got.Spec.Taints[0] != theirs || !rebootgate.Tainted(got) {
		t.Errorf("taints %v; want theirs and the gate's", got.Spec.Taints)
	}
	if at, boot, ok := rebootgate.ParseSince(got.Annotations[rebootgate.SinceAnnotation]); !ok || boot != "boot-2" || time.Since(at) > time.Minute {
		t.Errorf("the gate's start %q", got.Annotations[rebootgate.SinceAnnotation])
	}
}
