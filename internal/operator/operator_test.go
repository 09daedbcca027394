package operator

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/deploy"
	"github.com/nmoverlay/nmoverlay/internal/rebootgate"
)

func operand(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	base, err := deploy.Operand(deploy.Options{Image: "registry.example/nmoverlay:t"})
	if err != nil {
		t.Fatal(err)
	}
	return base
}

func podSpec(t *testing.T, objs []*unstructured.Unstructured, kind string) corev1.PodSpec {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != kind {
			continue
		}
		var tmpl struct {
			Spec struct {
				Template corev1.PodTemplateSpec `json:"template"`
			} `json:"spec"`
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &tmpl); err != nil {
			t.Fatal(err)
		}
		return tmpl.Spec.Template.Spec
	}
	t.Fatalf("no %s", kind)
	return corev1.PodSpec{}
}

func TestDesired(t *testing.T) {
	base := operand(t)
	defHandler, defController := podSpec(t, base, "DaemonSet"), podSpec(t, base, "Deployment")
	tol := []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
	// The CR's tolerations replace the manifests'; the reboot gate's is added to them.
	tolAndGate := append(slices.Clone(tol), rebootgate.Toleration())
	every := []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	// Whatever the CR says, the handler and the controller run on a node its gate holds.
	for _, ps := range []corev1.PodSpec{defHandler, defController} {
		if !rebootgate.Tolerated(ps.Tolerations) {
			t.Fatalf("the manifests' tolerations %v do not tolerate the reboot gate's taint", ps.Tolerations)
		}
	}
	// The controller's replicas prefer different nodes: a node's reboot leaves one, which
	// decides that node's reboot gate.
	if a := defController.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey != corev1.LabelHostname {
		t.Fatalf("the controller's manifest does not spread its replicas over nodes: %v", a)
	}
	aff := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "a", Operator: "Exists"}}}}}}}
	for _, tc := range []struct {
		name                     string
		spec                     nmstatev1.NMStateSpec
		handlerSel, ctrlSel      map[string]string
		handlerTol, ctrlTol      []corev1.Toleration
		handlerAff, ctrlAff      *corev1.Affinity
		handlerArgs, controlArgs []string // added to the manifests'
		err                      string
	}{
		{name: "empty spec: the manifests as they are", handlerSel: defHandler.NodeSelector, ctrlSel: defController.NodeSelector,
			handlerTol: defHandler.Tolerations, ctrlTol: defController.Tolerations},
		{name: "nodeSelector adds to kubernetes.io/os, tolerations replace", spec: nmstatev1.NMStateSpec{
			NodeSelector: map[string]string{"node-role.kubernetes.io/worker": ""}, Tolerations: tol, Affinity: aff},
			handlerSel: map[string]string{"kubernetes.io/os": "linux", "node-role.kubernetes.io/worker": ""}, handlerTol: tolAndGate, handlerAff: aff,
			ctrlSel: defController.NodeSelector, ctrlTol: defController.Tolerations},
		{name: "tolerations that tolerate the gate's taint already are kept as they are", spec: nmstatev1.NMStateSpec{
			Tolerations: every, InfraTolerations: every},
			handlerSel: defHandler.NodeSelector, handlerTol: every, ctrlSel: defController.NodeSelector, ctrlTol: every},
		{name: "infra fields go to the controller only", spec: nmstatev1.NMStateSpec{
			InfraNodeSelector: map[string]string{"node-role.kubernetes.io/master": ""}, InfraTolerations: tol, InfraAffinity: aff},
			handlerSel: defHandler.NodeSelector, handlerTol: defHandler.Tolerations,
			ctrlSel: map[string]string{"node-role.kubernetes.io/master": ""}, ctrlTol: tolAndGate, ctrlAff: aff},
		{name: "the reboot gate: the controller starts gates, the handlers lift their own", spec: nmstatev1.NMStateSpec{RebootGate: nmstatev1.RebootGateTaint},
			handlerSel: defHandler.NodeSelector, handlerTol: defHandler.Tolerations, ctrlSel: defController.NodeSelector, ctrlTol: defController.Tolerations,
			handlerArgs: []string{"--reboot-gate=Taint"}, controlArgs: []string{"--reboot-gate=Taint"}},
		{name: "the reboot gate None is off: no flag", spec: nmstatev1.NMStateSpec{RebootGate: nmstatev1.RebootGateNone},
			handlerSel: defHandler.NodeSelector, handlerTol: defHandler.Tolerations, ctrlSel: defController.NodeSelector, ctrlTol: defController.Tolerations},
		{name: "probes and log level", spec: nmstatev1.NMStateSpec{LogLevel: "debug", ProbeConfiguration: nmstatev1.ProbeConfiguration{
			DNS: nmstatev1.DNSProbeConfiguration{Host: "example.com"}, Timeout: &metav1.Duration{Duration: 2 * time.Minute},
			Disabled: []nmstatev1.ProbeName{"dns", "default-gateway", "dns"}}},
			handlerSel: defHandler.NodeSelector, handlerTol: defHandler.Tolerations, ctrlSel: defController.NodeSelector, ctrlTol: defController.Tolerations,
			handlerArgs: []string{"--dns-probe-host=example.com", "--probe-timeout=2m0s", "--disable-probes=default-gateway,dns", "--v=4"},
			controlArgs: []string{"--v=4"}},
		{name: "info is the default: no flag", spec: nmstatev1.NMStateSpec{LogLevel: "info"},
			handlerSel: defHandler.NodeSelector, handlerTol: defHandler.Tolerations, ctrlSel: defController.NodeSelector, ctrlTol: defController.Tolerations},
		{name: "the netplan backend: the flag, the host's root and /run, chroot", spec: nmstatev1.NMStateSpec{Backend: nmstatev1.BackendNetplan},
			handlerSel: defHandler.NodeSelector, handlerTol: defHandler.Tolerations, ctrlSel: defController.NodeSelector, ctrlTol: defController.Tolerations,
			handlerArgs: []string{"--backend=netplan", "--host-root=/host"}},
		{name: "a migration from kubernetes-nmstate: the handlers keep their node's plan", spec: nmstatev1.NMStateSpec{
			MigrateFrom: nmstatev1.MigrateFromKubernetesNMState},
			handlerSel: defHandler.NodeSelector, handlerTol: defHandler.Tolerations, ctrlSel: defController.NodeSelector, ctrlTol: defController.Tolerations,
			handlerArgs: []string{"--migration-plan=/var/lib/nmoverlay/migration/plan.json"}},
		{name: "the handler stays on Linux", spec: nmstatev1.NMStateSpec{NodeSelector: map[string]string{"kubernetes.io/os": "windows"}},
			err: "spec.nodeSelector: kubernetes.io/os=windows: the handler runs on Linux only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nm := &nmstatev1.NMState{ObjectMeta: metav1.ObjectMeta{Name: "nmstate", UID: "u-1"}, Spec: tc.spec}
			got, err := Desired(base, nm, withMonitoring(base))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(base) {
				t.Fatalf("%d objects, want %d", len(got), len(base))
			}
			for i, o := range got {
				if o.GetName() != base[i].GetName() || o.GetKind() != base[i].GetKind() {
					t.Errorf("object %d is %s %s, want the operand's order", i, o.GetKind(), o.GetName())
				}
				if o.GetLabels()[ManagedByLabel] != ManagedBy {
					t.Errorf("%s %s: labels %v", o.GetKind(), o.GetName(), o.GetLabels())
				}
				refs := o.GetOwnerReferences()
				if len(refs) != 1 || refs[0].UID != "u-1" || refs[0].Kind != "NMState" || !*refs[0].Controller || !*refs[0].BlockOwnerDeletion {
					t.Errorf("%s %s: owner references %+v", o.GetKind(), o.GetName(), refs)
				}
				if _, ok := o.Object["status"]; ok {
					t.Errorf("%s %s: has a status to apply", o.GetKind(), o.GetName())
				}
			}
			h, c := podSpec(t, got, "DaemonSet"), podSpec(t, got, "Deployment")
			check := func(what string, got, want any) {
				t.Helper()
				if !equal(got, want) {
					t.Errorf("%s: %v, want %v", what, got, want)
				}
			}
			check("handler nodeSelector", h.NodeSelector, tc.handlerSel)
			check("controller nodeSelector", c.NodeSelector, tc.ctrlSel)
			check("handler tolerations", h.Tolerations, tc.handlerTol)
			check("controller tolerations", c.Tolerations, tc.ctrlTol)
			check("handler affinity", h.Affinity, tc.handlerAff)
			ctrlAff := tc.ctrlAff
			if ctrlAff == nil {
				ctrlAff = defController.Affinity // the manifest's: replicas on different nodes
			}
			check("controller affinity", c.Affinity, ctrlAff)
			tlsArgs := TLSProfiles[DefaultTLSProfile].Args()
			check("handler args", h.Containers[0].Args, slices.Concat(defHandler.Containers[0].Args, tc.handlerArgs, tlsArgs))
			check("controller args", c.Containers[0].Args, slices.Concat(defController.Containers[0].Args, tc.controlArgs, tlsArgs))
			hc := h.Containers[0]
			mounts := map[string]string{}
			for _, m := range hc.VolumeMounts {
				mounts[m.MountPath] = fmt.Sprintf("%s ro=%t", m.Name, m.ReadOnly)
			}
			netplan := tc.spec.Backend == nmstatev1.BackendNetplan
			if got := mounts["/host"] == "host-root ro=true" && mounts["/host/run"] == "host-run ro=false"; got != netplan {
				t.Errorf("the host's root read-only and /run writable: %t, want %t (%v)", got, netplan, mounts)
			}
			if got := slices.Contains(hc.SecurityContext.Capabilities.Add, "SYS_CHROOT"); got != netplan {
				t.Errorf("SYS_CHROOT: %t, want %t", got, netplan)
			}
			// The base is left as it was.
			if !equal(podSpec(t, base, "DaemonSet"), defHandler) {
				t.Error("Desired modified its base")
			}
		})
	}
}

// withMonitoring is a cluster, not OpenShift, with prometheus-operator's CRDs: every object
// of base is applied.
func withMonitoring(base []*unstructured.Unstructured) Environment {
	env := Environment{CRDs: map[string]types.UID{}, TLS: TLSProfiles[DefaultTLSProfile]}
	for name := range crdNames(base) {
		env.CRDs[name] = types.UID("uid-" + name)
	}
	return env
}

// equal is semantic: an empty and a nil map or slice are the same.
func equal(a, b any) bool { return equality.Semantic.DeepEqual(a, b) }

// The NMState's conditions, with kubernetes-nmstate's types and reasons (its operator's
// reconcileStatus): Progressing while deploying, Degraded on an error, else Available.
func TestConditions(t *testing.T) {
	ds := func(gen, observed int64, desired, updated, available int32) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Generation: gen}, Status: appsv1.DaemonSetStatus{ObservedGeneration: observed,
			DesiredNumberScheduled: desired, UpdatedNumberScheduled: updated, NumberAvailable: available}}
	}
	dep := func(gen, observed int64, updated, available int32, cond corev1.ConditionStatus) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: gen}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(2))},
			Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: 2, UpdatedReplicas: updated, AvailableReplicas: available,
				Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: cond}}}}
	}
	up := dep(1, 1, 2, 2, corev1.ConditionTrue)
	for _, tc := range []struct {
		name string
		obs  observed
		want string // Available Progressing Degraded, each status/reason
		msg  string // in Available's message
	}{
		{"apply failed", observed{applyErr: errors.New("DaemonSet x: forbidden"), handler: ds(1, 1, 2, 2, 2), controller: up},
			"False/InternalError False/InternalError True/InternalError", "forbidden"},
		{"nothing created yet", observed{}, "False/Deploying True/Deploying False/Deploying", "handler DaemonSet is not created"},
		{"controller not created yet", observed{handler: ds(1, 1, 2, 2, 2)}, "False/Deploying True/Deploying False/Deploying", "controller Deployment is not created"},
		{"new handler spec not observed", observed{handler: ds(2, 1, 2, 2, 2), controller: up}, "False/Deploying True/Deploying False/Deploying", "not observed"},
		{"handler rolling", observed{handler: ds(2, 2, 3, 1, 3), controller: up}, "False/Deploying True/Deploying False/Deploying",
			"updated on 1 and available on 3 of 3 nodes"},
		{"handler not yet available", observed{handler: ds(1, 1, 3, 3, 2), controller: up}, "False/Deploying True/Deploying False/Deploying", "available on 2 of 3"},
		{"controller rolling", observed{handler: ds(1, 1, 2, 2, 2), controller: dep(2, 2, 1, 2, corev1.ConditionTrue)},
			"False/Deploying True/Deploying False/Deploying", "1 updated and 2 available of 2"},
		{"controller not available", observed{handler: ds(1, 1, 2, 2, 2), controller: dep(1, 1, 2, 2, corev1.ConditionFalse)},
			"False/Deploying True/Deploying False/Deploying", "controller has"},
		{"deployed", observed{handler: ds(3, 3, 2, 2, 2), controller: up}, "True/SuccessfullyDeployed False/SuccessfullyDeployed False/SuccessfullyDeployed", "runs on 2 nodes"},
		{"a handler that selects no node is deployed", observed{handler: ds(1, 1, 0, 0, 0), controller: up}, "True/SuccessfullyDeployed False/SuccessfullyDeployed False/SuccessfullyDeployed", "runs on 0 nodes"},
		{"deployed, a node's reboot gate lifted without its policies: Degraded", observed{handler: ds(1, 1, 2, 2, 2), controller: up,
			gateFailures: []string{"w1: policy bond failed in boot b2: no such device"}},
			"True/SuccessfullyDeployed False/SuccessfullyDeployed True/ReconvergenceFailed", "runs on 2 nodes"},
		{"rolling, a node's reboot gate lifted without its policies: Degraded", observed{handler: ds(2, 1, 2, 2, 2), controller: up,
			gateFailures: []string{"w1: timed out"}}, "False/Deploying True/Deploying True/ReconvergenceFailed", "not observed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conds := conditions(tc.obs, 7)
			var got []string
			for _, c := range conds {
				got = append(got, string(c.Status)+"/"+c.Reason)
				if c.ObservedGeneration != 7 {
					t.Errorf("%s: observedGeneration %d", c.Type, c.ObservedGeneration)
				}
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("got %s, want %s", strings.Join(got, " "), tc.want)
			}
			if conds[0].Type != nmstatev1.NMStateAvailable || !strings.Contains(conds[0].Message, tc.msg) {
				t.Errorf("Available's message %q lacks %q", conds[0].Message, tc.msg)
			}
			for _, f := range tc.obs.gateFailures {
				if conds[2].Type != nmstatev1.NMStateDegraded || !strings.Contains(conds[2].Message, f) {
					t.Errorf("Degraded's message %q lacks %q", conds[2].Message, f)
				}
			}
		})
	}
}

func TestDecideDefault(t *testing.T) {
	base := defaultInput{mode: DefaultOnPlatform, platforms: DefaultPlatforms, served: true, platform: "BareMetal"}
	with := func(f func(*defaultInput)) defaultInput { in := base; f(&in); return in }
	for _, tc := range []struct {
		name           string
		in             defaultInput
		create, record bool
		why            string
	}{
		{"BareMetal, nothing yet: create and record", base, true, true, "on by default"},
		{"opted out", with(func(in *defaultInput) { in.mode = DefaultNever }), false, false, "opted out"},
		{"plain Kubernetes", with(func(in *defaultInput) { in.served, in.platform = false, "" }), false, false, "opt-in"},
		{"platform not set yet", with(func(in *defaultInput) { in.platform = "" }), false, false, "not set yet"},
		{"another platform", with(func(in *defaultInput) { in.platform = "AWS" }), false, false, "platform AWS: nmoverlay is opt-in"},
		{"None (single node, UPI)", with(func(in *defaultInput) { in.platform = "None" }), false, false, "opt-in"},
		{"a listed platform", with(func(in *defaultInput) { in.platform, in.platforms = "OpenStack", []string{"BareMetal", "OpenStack"} }), true, true, "OpenStack"},
		{"exists, not recorded (an administrator made it): record", with(func(in *defaultInput) { in.exists = true }), false, true, "exists"},
		{"exists and recorded", with(func(in *defaultInput) { in.exists, in.recorded = true, true }), false, false, "exists"},
		{"deleted after it was recorded: the opt-out", with(func(in *defaultInput) { in.recorded = true }), false, false, "opt-out"},
		{"opted out wins over an existing one", with(func(in *defaultInput) { in.mode, in.exists = DefaultNever, true }), false, false, "opted out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decideDefault(tc.in)
			if d.create != tc.create || d.record != tc.record || !strings.Contains(d.why, tc.why) {
				t.Errorf("got %+v, want create=%v record=%v why ~ %q", d, tc.create, tc.record, tc.why)
			}
		})
	}
}
