package operator

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
)

func TestPrunable(t *testing.T) {
	const owner, other types.UID = "nmstate-uid", "earlier-nmstate-uid"
	obj := func(apiVersion, kind, namespace, name string, labelled bool, controller types.UID) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetAPIVersion(apiVersion)
		o.SetKind(kind)
		o.SetNamespace(namespace)
		o.SetName(name)
		if labelled {
			o.SetLabels(map[string]string{ManagedByLabel: ManagedBy, VersionLabel: "0.3.0-dev"})
		}
		if controller != "" {
			o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "nmstate.io/v1", Kind: "NMState", Name: "nmstate", UID: controller, Controller: ptr.To(true)}})
		}
		return o
	}
	desired := []*unstructured.Unstructured{
		obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "nmoverlay-handler", true, owner),
		obj("apps/v1", "DaemonSet", "nmoverlay", "nmoverlay-handler", true, owner),
	}
	for _, tc := range []struct {
		name     string
		existing *unstructured.Unstructured
		pruned   bool
	}{
		{"in the operand", obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "nmoverlay-handler", true, owner), false},
		{"in the operand at another version of its kind", obj("rbac.authorization.k8s.io/v1beta1", "ClusterRole", "", "nmoverlay-handler", true, owner), false},
		{"dropped by this release", obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "nmoverlay-retired", true, owner), true},
		{"dropped, namespaced", obj("apps/v1", "Deployment", "nmoverlay", "nmoverlay-retired", true, owner), true},
		{"same name, another namespace", obj("apps/v1", "DaemonSet", "elsewhere", "nmoverlay-handler", true, owner), true},
		{"not labelled as the operator's", obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "nmoverlay-retired", false, owner), false},
		{"not controlled by the NMState", obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "nmoverlay-retired", true, ""), false},
		{"controlled by another NMState", obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "nmoverlay-retired", true, other), false},
	} {
		got := Prunable(desired, []*unstructured.Unstructured{tc.existing}, owner)
		if pruned := slices.Contains(got, tc.existing); pruned != tc.pruned || len(got) > 1 {
			t.Errorf("%s: pruned %t, want %t", tc.name, pruned, tc.pruned)
		}
	}
	gone := obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "nmoverlay-retired", true, owner)
	now := metav1.Now()
	gone.SetDeletionTimestamp(&now)
	if got := Prunable(desired, []*unstructured.Unstructured{gone}, owner); len(got) != 0 {
		t.Errorf("an object being deleted is deleted again: %v", got)
	}
}

// Every object the operator applies says which release applied it.
func TestDesiredCarriesTheVersion(t *testing.T) {
	objs, err := Desired(operand(t), &nmstatev1.NMState{ObjectMeta: metav1.ObjectMeta{Name: "nmstate", UID: "u-1"}}, withMonitoring(operand(t)))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetLabels()[VersionLabel] == "" || o.GetLabels()[ManagedByLabel] != ManagedBy {
			t.Errorf("%s %s: labels %v", o.GetKind(), o.GetName(), o.GetLabels())
		}
	}
}
