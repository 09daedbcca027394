package adoption

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nmoverlay/nmoverlay/api/v1beta1"
)

func object(apiVersion, kind, namespace, name string, labels map[string]string, fields map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{}}
	for k, v := range fields {
		o.Object[k] = v
	}
	o.SetAPIVersion(apiVersion)
	o.SetKind(kind)
	o.SetNamespace(namespace)
	o.SetName(name)
	o.SetLabels(labels)
	return o
}

func TestRoleOf(t *testing.T) {
	operand := map[string]string{"app": "kubernetes-nmstate"}
	for _, tc := range []struct {
		name string
		o    *unstructured.Unstructured
		want role
	}{
		{"OLM's subscription", object("operators.coreos.com/v1alpha1", "Subscription", "openshift-nmstate", "kubernetes-nmstate-operator", nil,
			map[string]any{"spec": map[string]any{"name": "kubernetes-nmstate-operator", "channel": "stable"}}), roleOLM},
		{"another operator's subscription", object("operators.coreos.com/v1alpha1", "Subscription", "openshift-sriov", "sriov", nil,
			map[string]any{"spec": map[string]any{"name": "sriov-network-operator"}}), roleNone},
		{"its CSV", object("operators.coreos.com/v1alpha1", "ClusterServiceVersion", "openshift-nmstate", "kubernetes-nmstate-operator.4.18.0-202501", nil, nil), roleOLM},
		{"a copy of its CSV", object("operators.coreos.com/v1alpha1", "ClusterServiceVersion", "default", "kubernetes-nmstate-operator.4.18.0-202501",
			map[string]string{"olm.copiedFrom": "openshift-nmstate"}, nil), roleNone},
		{"its operator by name", object("apps/v1", "Deployment", "nmstate", "nmstate-operator", nil, nil), roleOperator},
		{"its operator by label", object("apps/v1", "Deployment", "openshift-nmstate", "renamed", map[string]string{"app": "kubernetes-nmstate-operator"}, nil), roleOperator},
		{"its webhook", object("apps/v1", "Deployment", "openshift-nmstate", "nmstate-webhook", operand, nil), roleOperand},
		{"its handler", object("apps/v1", "DaemonSet", "openshift-nmstate", "nmstate-handler", operand, nil), roleOperand},
		{"its handler by its pods' component", object("apps/v1", "DaemonSet", "openshift-nmstate", "nmstate-handler", nil,
			map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"component": "kubernetes-nmstate-handler"}}}}}), roleOperand},
		{"its webhook configuration", object("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "", "nmstate", operand, nil), roleOperand},
		{"another webhook configuration", object("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "", "nmstate", nil, nil), roleNone},
		{"its console plugin", object("console.openshift.io/v1", "ConsolePlugin", "", "nmstate-console-plugin", nil, nil), roleOperand},
		{"nmoverlay's operator", object("apps/v1", "Deployment", "nmoverlay", "nmoverlay-operator",
			map[string]string{"app.kubernetes.io/name": "nmoverlay-operator"}, nil), roleNone},
		{"a DaemonSet of another app", object("apps/v1", "DaemonSet", "kube-system", "kube-proxy", map[string]string{"app": "kube-proxy"}, nil), roleNone},
	} {
		if got := roleOf(tc.o); got != tc.want {
			t.Errorf("%s: role %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestBackupCopyAndKey(t *testing.T) {
	o := object("apps/v1", "Deployment", "openshift-nmstate", "nmstate-operator", nil,
		map[string]any{"spec": map[string]any{"replicas": int64(1)}, "status": map[string]any{"replicas": int64(1)}})
	o.SetResourceVersion("42")
	o.SetUID("u")
	o.SetGeneration(3)
	c := backupCopy(o)
	if _, ok := c.Object["status"]; ok || c.GetResourceVersion() != "" || c.GetUID() != "" || c.GetGeneration() != 0 {
		t.Errorf("backup copy keeps what the server sets: %v", c.Object)
	}
	if r, _, _ := unstructured.NestedInt64(c.Object, "spec", "replicas"); r != 1 {
		t.Errorf("the spec is lost: %v", c.Object)
	}
	if o.GetResourceVersion() != "42" {
		t.Error("the original changed")
	}
	if k := BackupKey(o); k != "Deployment_openshift-nmstate_nmstate-operator.yaml" {
		t.Errorf("key %q", k)
	}
	if k := BackupKey(object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "nmstates.nmstate.io", nil, nil)); k != "CustomResourceDefinition_nmstates.nmstate.io.yaml" {
		t.Errorf("key %q", k)
	}
}

func nnsWith(o *v1beta1.OverlayStatus) *v1beta1.NodeNetworkState {
	s := &v1beta1.NodeNetworkState{}
	s.Status.Overlay = o
	return s
}

func TestNodesWaiting(t *testing.T) {
	degraded := "the keyfile dir is not on the overlay"
	plan := &v1beta1.MigrationStatus{Move: []v1beta1.PersistentProfile{{File: "br1.nmconnection"}}}
	moved := &v1beta1.MigrationStatus{Backup: "/var/lib/nmoverlay/migrated/b1",
		Moved: []v1beta1.PersistentProfile{{File: "br1.nmconnection", Detail: "moved"}, {File: "eth1.nmconnection", Detail: "moved"}}}
	states := map[string]*v1beta1.NodeNetworkState{
		"kubernetes-nmstate's": {}, // no overlay status: not nmoverlay's handler
		"planning":             nnsWith(&v1beta1.OverlayStatus{Degraded: degraded}),
		"planned":              nnsWith(&v1beta1.OverlayStatus{Degraded: degraded, Migration: plan}),
		"moved":                nnsWith(&v1beta1.OverlayStatus{Migration: moved}),
		"on the overlay":       nnsWith(&v1beta1.OverlayStatus{}),
	}
	for _, tc := range []struct {
		nodes           []string
		plans, overlays string
	}{
		{[]string{"planned", "moved", "on the overlay"}, "",
			"not on the overlay yet (MCO reboots each pool's nodes onto it; without MCO, lay the MachineConfig's files down): planned (" + degraded + ")"},
		{[]string{"kubernetes-nmstate's", "planning", "absent"}, "no plan reported by nmoverlay's handler on kubernetes-nmstate's, planning, absent",
			"kubernetes-nmstate's (no overlay reported); planning (" + degraded + "); absent (no overlay reported)"},
		{[]string{"moved", "on the overlay"}, "", ""},
	} {
		if got := PlansWaiting(tc.nodes, states); got != tc.plans {
			t.Errorf("%v: plans waiting %q, want %q", tc.nodes, got, tc.plans)
		}
		if got := OverlayWaiting(tc.nodes, states); !strings.HasSuffix(got, tc.overlays) || (got == "") != (tc.overlays == "") {
			t.Errorf("%v: overlay waiting %q, want it to end %q", tc.nodes, got, tc.overlays)
		}
	}
	if got, want := OffOverlayWaiting([]string{"kubernetes-nmstate's", "planned", "moved", "on the overlay", "absent"}, states),
		"still on the overlay (MCO reboots each pool's nodes off it; without MCO, remove the MachineConfig's files and reboot): moved, on the overlay"; got != want {
		t.Errorf("off the overlay waiting %q, want %q", got, want)
	}
	if got := OffOverlayWaiting([]string{"kubernetes-nmstate's", "planned", "absent"}, states); got != "" {
		t.Errorf("no node on the overlay, yet waiting %q", got)
	}
	got := NodeBackups([]string{"moved", "on the overlay", "planned"}, states)
	want := map[string]NodeBackup{"moved": {Dir: "/var/lib/nmoverlay/migrated/b1", Moved: []string{"br1.nmconnection", "eth1.nmconnection"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("node backups %v, want %v", got, want)
	}
}

func TestRestoreState(t *testing.T) {
	pod := RestorePod("nmoverlay", "worker-0", "registry.example/nmoverlay:v1", "/var/lib/nmoverlay/migrated/b1")
	pod.Status.Phase = corev1.PodRunning
	if got := restoreState(pod); got != "Running" {
		t.Errorf("a first run: %q", got)
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{RestartCount: 2, LastTerminationState: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: "nm-overlay: the overlay is mounted on /etc/NetworkManager/system-connections: ...\n"}}}}
	if got, want := restoreState(pod), "Running, 2 failed runs, the last said: nm-overlay: the overlay is mounted on /etc/NetworkManager/system-connections: ..."; got != want {
		t.Errorf("after failed runs: %q, want %q", got, want)
	}
}
