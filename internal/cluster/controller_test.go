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
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nmoverlay/nmoverlay/api"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
)

// TestNoEnactmentForAPolicyTheAPIServerLacks: once an enactment of a policy was deleted,
// a cache still holding the policy the API server no longer has (deleted, or recreated
// with another UID) gets no enactment created for it; one the API server has does. Not
// doubted, the policy is not looked up. The cache and the API server are client doubles
// here: the boot tier's etcd restore makes the same stale cache for real.
func TestNoEnactmentForAPolicyTheAPIServerLacks(t *testing.T) {
	scheme, err := api.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-a"}}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	policy := func(uid types.UID) *nmstatev1.NodeNetworkConfigurationPolicy {
		return &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "bridge", UID: uid, Generation: 1}}
	}
	for _, tc := range []struct {
		name    string
		live    []client.Object // what the API server has beside the node
		doubted bool            // an enactment of it was deleted
		created bool
	}{
		{name: "the API server has it", live: []client.Object{policy("a")}, doubted: true, created: true},
		{name: "deleted since", doubted: true, created: false},
		{name: "deleted and created again since", live: []client.Object{policy("b")}, doubted: true, created: false},
		{name: "not doubted: not looked up", created: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := fake.NewClientBuilder().WithScheme(scheme).WithObjects(node.DeepCopy(), policy("a")).
				WithStatusSubresource(&nmstatev1.NodeNetworkConfigurationPolicy{}).Build()
			live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(tc.live, node.DeepCopy())...).Build()
			r := &PolicyController{Client: cache, APIReader: live}
			if tc.doubted {
				r.doubt("bridge")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "bridge"}})
			if err != nil {
				t.Fatal(err)
			}
			enactments := &v1beta1.NodeNetworkConfigurationEnactmentList{}
			if err := cache.List(ctx, enactments); err != nil {
				t.Fatal(err)
			}
			if got := len(enactments.Items) == 1; got != tc.created {
				t.Fatalf("enactments %d, want created %v", len(enactments.Items), tc.created)
			}
			if !tc.created && res.RequeueAfter == 0 {
				t.Error("not looked at again: nothing would grant once the cache shows the policy's delete, were it lost")
			}
		})
	}
}
