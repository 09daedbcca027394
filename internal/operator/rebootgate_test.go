package operator

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nmoverlay/nmoverlay/api"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/internal/rebootgate"
)

// TestGate: with the gate on, the nodes whose gate ended without their policies are
// reported and nothing is written; off, or with the NMState gone, every gate's taint and
// annotations go, and nothing else of the Nodes. The API server is a client double here;
// the integration tier runs the controller's and the handler's part against a real one.
func TestGate(t *testing.T) {
	scheme, err := api.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	other := corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoSchedule}
	nodes := func() []client.Object {
		failed := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w1", Annotations: map[string]string{
			"example.com/x": "y", rebootgate.FailedAnnotation: rebootgate.FormatFailed("b2", "policy bond failed in boot b2: no such device")}}}
		failed.Spec.Taints = []corev1.Taint{other}
		gated := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w2", Annotations: map[string]string{
			rebootgate.SinceAnnotation: "2026-11-23T12:00:00Z/b7"}}}
		gated.Spec.Taints = []corev1.Taint{rebootgate.Taint(), other}
		untouched := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w3", Annotations: map[string]string{"example.com/x": "y"}}}
		untouched.Spec.Taints = []corev1.Taint{other}
		return []client.Object{failed, gated, untouched}
	}
	for _, tc := range []struct {
		name     string
		nm       *nmstatev1.NMState
		failures []string
		cleared  bool
	}{
		{name: "on: the failed gates reported", nm: &nmstatev1.NMState{Spec: nmstatev1.NMStateSpec{RebootGate: nmstatev1.RebootGateTaint}},
			failures: []string{"w1: policy bond failed in boot b2: no such device"}},
		{name: "off: cleared", nm: &nmstatev1.NMState{}, cleared: true},
		{name: "None: cleared", nm: &nmstatev1.NMState{Spec: nmstatev1.NMStateSpec{RebootGate: nmstatev1.RebootGateNone}}, cleared: true},
		{name: "the NMState gone: cleared", cleared: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(nodes()...).Build()
			r := &Operator{Client: c, APIReader: c}
			ctx := context.Background()
			failures, err := r.gate(ctx, tc.nm)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(failures, tc.failures) {
				t.Errorf("failures %q, want %q", failures, tc.failures)
			}
			for _, want := range nodes() {
				got := &corev1.Node{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
					t.Fatal(err)
				}
				wantNode := want.(*corev1.Node)
				if tc.cleared {
					rebootgate.Clear(wantNode).ApplyTo(wantNode)
				}
				if !equal(got.Spec.Taints, wantNode.Spec.Taints) || !equal(got.Annotations, wantNode.Annotations) {
					t.Errorf("%s: taints %v annotations %v, want %v %v", got.Name, got.Spec.Taints, got.Annotations,
						wantNode.Spec.Taints, wantNode.Annotations)
				}
			}
		})
	}
}
