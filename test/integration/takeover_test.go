//go:build integration

package integration_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/adoption"
	"github.com/nmoverlay/nmoverlay/test/kit"
)

// The move itself, on an API server of its own holding what kubernetes-nmstate installed
// by OLM leaves (its Subscription and CSV, its operator, handler and webhook with its
// configuration, failing closed, its NMState, policies, enactments and states), with
// OLM's and MCO's kinds served. Nothing here runs kube-controller-manager, OLM, MCO or a
// kubelet: the test does their part (a workload's status, a deleted DaemonSet's pod, the
// NodeNetworkStates nmoverlay's handlers report) between runs, and each run stops at the
// step that waits for it, as a run cut short would; the next run resumes there. The boot
// tier runs the move on a cluster with kubelets.
var _ = Describe("nmoverlay migrate --apply on a cluster running kubernetes-nmstate, and --rollback", Ordered, func() {
	const (
		ns          = "openshift-nmstate"
		olmCRDLabel = "operators.coreos.com/kubernetes-nmstate-operator.openshift-nmstate"
	)
	var (
		c          client.Client
		ctx        = context.Background()
		bin        string
		kubeconfig string
		rendered   string
	)
	migrate := func(args ...string) (string, int) {
		GinkgoHelper()
		out, err := exec.Command(bin, append([]string{"migrate", "--kubeconfig", kubeconfig, "--poll", "500ms"}, args...)...).CombinedOutput()
		GinkgoWriter.Printf("nmoverlay migrate %v:\n%s\n", args, out)
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return string(out), exit.ExitCode()
		}
		Expect(err).NotTo(HaveOccurred())
		return string(out), 0
	}
	gvk := func(apiVersion, kind string) schema.GroupVersionKind {
		gv, err := schema.ParseGroupVersion(apiVersion)
		Expect(err).NotTo(HaveOccurred())
		return gv.WithKind(kind)
	}
	exists := func(apiVersion, kind, namespace, name string) bool {
		GinkgoHelper()
		o := &unstructured.Unstructured{}
		o.SetGroupVersionKind(gvk(apiVersion, kind))
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, o)
		Expect(client.IgnoreNotFound(err)).To(Succeed())
		return err == nil
	}
	createPolicy := func(name string) error {
		p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
		p.Spec.DesiredState = shared.State{Raw: []byte(`{"interfaces":[{"name":"br-` + name + `","type":"linux-bridge","state":"up"}]}`)}
		return c.Create(ctx, p)
	}
	enactment := func(node, policy, condition string) {
		GinkgoHelper()
		e := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: shared.EnactmentKey(node, policy)}}
		if err := c.Get(ctx, client.ObjectKeyFromObject(e), e); err != nil {
			Expect(client.IgnoreNotFound(err)).To(Succeed())
			e.Labels = map[string]string{shared.NodeLabel: node, shared.PolicyLabel: policy}
			Expect(c.Create(ctx, e)).To(Succeed())
		}
		e.Status.DesiredState = shared.State{Raw: []byte(`{"interfaces":[{"name":"br-` + policy + `","type":"linux-bridge","state":"up"}]}`)}
		e.Status.Conditions = []metav1.Condition{{Type: condition, Status: metav1.ConditionTrue, Reason: "Test", LastTransitionTime: metav1.Now()}}
		Expect(c.Update(ctx, e)).To(Succeed()) // no status subresource, as kubernetes-nmstate's CRD
	}
	reportOverlay := func(node string, o *v1beta1.OverlayStatus) {
		GinkgoHelper()
		nns := &v1beta1.NodeNetworkState{}
		Expect(c.Get(ctx, client.ObjectKey{Name: node}, nns)).To(Succeed())
		nns.Status.Overlay = o
		Expect(c.Status().Update(ctx, nns)).To(Succeed())
	}
	nodes := []string{"worker-0", "worker-1"}

	BeforeAll(func() {
		a, err := kit.StartAPI(func(e *envtest.Environment) {
			e.CRDs = append(e.CRDs,
				kit.OpenCRD("operators.coreos.com", "v1alpha1", "Subscription", "subscriptions", true),
				kit.OpenCRD("operators.coreos.com", "v1alpha1", "ClusterServiceVersion", "clusterserviceversions", true),
				kit.OpenCRD("machineconfiguration.openshift.io", "v1", "MachineConfig", "machineconfigs", false))
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(a.Stop)
		c = a.Client
		dir := GinkgoT().TempDir()
		kubeconfig, err = a.AdminKubeconfig(dir)
		Expect(err).NotTo(HaveOccurred())
		bin, err = kit.Binary("cmd/nmoverlay")
		Expect(err).NotTo(HaveOccurred())
		out, err := exec.Command(bin, "render", "--pool", "worker", "--image", "registry.example/nmoverlay:v0.1").Output()
		Expect(err).NotTo(HaveOccurred())
		rendered = filepath.Join(dir, "nmoverlay.yaml")
		Expect(os.WriteFile(rendered, out, 0o644)).To(Succeed())

		// kubernetes-nmstate as OLM installs it in openshift-nmstate, its CRDs labelled by OLM.
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		for _, name := range adoption.CRDNames {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			Expect(c.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
			crd.Labels = map[string]string{olmCRDLabel: ""}
			Expect(c.Update(ctx, crd)).To(Succeed())
		}
		for _, o := range []string{
			`{"apiVersion":"operators.coreos.com/v1alpha1","kind":"Subscription","metadata":{"name":"kubernetes-nmstate-operator","namespace":"openshift-nmstate"},
			  "spec":{"channel":"stable","name":"kubernetes-nmstate-operator","source":"redhat-operators","sourceNamespace":"openshift-marketplace"}}`,
			`{"apiVersion":"operators.coreos.com/v1alpha1","kind":"ClusterServiceVersion","metadata":{"name":"kubernetes-nmstate-operator.4.18.0-202501230001","namespace":"openshift-nmstate"},
			  "spec":{"version":"4.18.0-202501230001"},"status":{"phase":"Succeeded"}}`,
		} {
			obj := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal([]byte(o), &obj.Object)).To(Succeed())
			Expect(c.Create(ctx, obj)).To(Succeed())
		}
		one := int32(1)
		deployment := func(name string, labels map[string]string) *appsv1.Deployment {
			sel := map[string]string{"name": name}
			return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
				Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: sel},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "registry.redhat.io/openshift4/" + name + ":v4.18"}}}}}}
		}
		operator := deployment("nmstate-operator", map[string]string{"app": "kubernetes-nmstate-operator"})
		Expect(c.Create(ctx, operator)).To(Succeed())
		operator.Status.Replicas, operator.Status.ReadyReplicas = 1, 1
		Expect(c.Status().Update(ctx, operator)).To(Succeed())
		Expect(c.Create(ctx, deployment("nmstate-webhook", map[string]string{"app": "kubernetes-nmstate", "component": "kubernetes-nmstate-webhook"}))).To(Succeed())
		handlerLabels := map[string]string{"name": "nmstate-handler", "app": "kubernetes-nmstate", "component": "kubernetes-nmstate-handler"}
		Expect(c.Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "nmstate-handler", Namespace: ns,
			Labels: map[string]string{"app": "kubernetes-nmstate", "component": "kubernetes-nmstate-handler"}},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"name": "nmstate-handler"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: handlerLabels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nmstate-handler", Image: "registry.redhat.io/openshift4/ose-kubernetes-nmstate-handler-rhel9:v4.18"}}}}}})).To(Succeed())
		Expect(c.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nmstate-handler-abcde", Namespace: ns, Labels: handlerLabels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nmstate-handler", Image: "handler"}}}})).To(Succeed())
		Expect(c.Create(ctx, &nmstatev1.NMState{ObjectMeta: metav1.ObjectMeta{Name: nmstatev1.NMStateName}})).To(Succeed())
		for _, n := range nodes {
			_, err := kit.ReadyNode(ctx, c, n, map[string]string{"node-role.kubernetes.io/worker": ""})
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Create(ctx, &v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: n}})).To(Succeed())
		}
		Expect(createPolicy("storage")).To(Succeed())
		for _, n := range nodes {
			enactment(n, "storage", shared.EnactmentFailing)
		}
		// Its webhook's configuration, failing closed as 4.16-4.19 ship it: with its pods
		// gone and it left behind, no policy could be written.
		fail, none, path := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone, "/nodenetworkconfigurationpolicies-mutate"
		Expect(c.Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "nmstate",
			Labels: map[string]string{"app": "kubernetes-nmstate"}},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "nodenetworkconfigurationpolicies-mutate.nmstate.io",
				ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "nmstate-webhook", Path: &path}},
				Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"nmstate.io"}, APIVersions: []string{"v1"}, Resources: []string{"nodenetworkconfigurationpolicies"}}}},
				FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}}})).To(Succeed())
		Eventually(func() error { return createPolicy("probe") }).ShouldNot(Succeed(), "the webhook's configuration admits no policy while its pods are gone")
	})

	It("refuses while a policy is not Available on some node, and changes nothing", func() {
		out, code := migrate("--apply", rendered, "--timeout", "20s")
		Expect(code).To(Equal(1))
		Expect(out).To(ContainSubstring("policy storage is Failing on node worker-0: the move waits until every enactment is Available"))
		Expect(exists("operators.coreos.com/v1alpha1", "Subscription", ns, "kubernetes-nmstate-operator")).To(BeTrue())
		Expect(exists("v1", "ConfigMap", ns, adoption.BackupName)).To(BeFalse())
		for _, n := range nodes {
			enactment(n, "storage", shared.EnactmentAvailable)
		}
	})

	It("backs kubernetes-nmstate up, stops OLM's install and its operator, and waits for the operator's pod to go", func() {
		out, code := migrate("--apply", rendered, "--timeout", "2s")
		Expect(code).To(Equal(1))
		Expect(out).To(ContainSubstring("[1/11] back up kubernetes-nmstate's objects: done"))
		Expect(out).To(ContainSubstring("[2/11] stop OLM's install of kubernetes-nmstate: done"))
		Expect(out).To(ContainSubstring("stop kubernetes-nmstate's operator: still waiting: still running: Deployment openshift-nmstate/nmstate-operator (run again to resume)"))

		cm := &corev1.ConfigMap{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: adoption.BackupName}, cm)).To(Succeed())
		Expect(cm.Data).To(HaveKey("Subscription_openshift-nmstate_kubernetes-nmstate-operator.yaml"))
		Expect(cm.Data).To(HaveKey("ClusterServiceVersion_openshift-nmstate_kubernetes-nmstate-operator.4.18.0-202501230001.yaml"))
		Expect(cm.Data).To(HaveKey("DaemonSet_openshift-nmstate_nmstate-handler.yaml"))
		Expect(cm.Data).To(HaveKey("MutatingWebhookConfiguration_nmstate.yaml"))
		Expect(cm.Data).To(HaveKey("NMState_nmstate.yaml"))
		for _, crd := range adoption.CRDNames {
			Expect(cm.Data).To(HaveKey("CustomResourceDefinition_" + crd + ".yaml"))
		}
		Expect(cm.Data["Deployment_openshift-nmstate_nmstate-operator.yaml"]).To(ContainSubstring("replicas: 1"), "the operator's replicas before it was stopped")

		Expect(exists("operators.coreos.com/v1alpha1", "Subscription", ns, "kubernetes-nmstate-operator")).To(BeFalse())
		Expect(exists("operators.coreos.com/v1alpha1", "ClusterServiceVersion", ns, "kubernetes-nmstate-operator.4.18.0-202501230001")).To(BeFalse())
		operator := &appsv1.Deployment{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nmstate-operator"}, operator)).To(Succeed())
		Expect(*operator.Spec.Replicas).To(BeZero())
		Expect(exists("apps/v1", "DaemonSet", ns, "nmstate-handler")).To(BeTrue(), "its operands wait for its operator to stop")

		operator.Status.Replicas, operator.Status.ReadyReplicas = 0, 0 // kube-controller-manager's part
		Expect(c.Status().Update(ctx, operator)).To(Succeed())
	})

	It("resumes: stops the operands and waits for the handler's pods to go", func() {
		out, code := migrate("--apply", rendered, "--timeout", "2s")
		Expect(code).To(Equal(1))
		Expect(out).To(ContainSubstring("Resuming the move (its backup is openshift-nmstate/nmoverlay-migration)."))
		Expect(out).To(ContainSubstring("[1/11] back up kubernetes-nmstate's objects: held already"))
		Expect(out).To(ContainSubstring("[3/11] stop kubernetes-nmstate's operator: held already"))
		Expect(out).To(ContainSubstring("pods still there: openshift-nmstate/nmstate-handler-abcde"))
		for _, o := range [][2]string{{"DaemonSet", "nmstate-handler"}, {"Deployment", "nmstate-webhook"}} {
			Expect(exists("apps/v1", o[0], ns, o[1])).To(BeFalse(), o[1])
		}
		Expect(exists("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "", "nmstate")).To(BeFalse())
		Expect(exists("apps/v1", "Deployment", ns, "nmstate-operator")).To(BeTrue(), "its operator is scaled to 0, not deleted")
		// The API server drops a deleted webhook configuration from its informer's cache a moment later.
		Eventually(func() error { return createPolicy("probe") }, "10s").Should(Succeed(), "with its webhook's configuration gone, policies can be written again")

		Expect(c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nmstate-handler-abcde"}})).To(Succeed()) // the garbage collector's part
	})

	It("resumes: takes over the CRDs, asks for the migration and installs nmoverlay", func() {
		out, code := migrate("--apply", rendered, "--timeout", "3s")
		Expect(code).To(Equal(1))
		Expect(out).To(ContainSubstring("take over the nmstate.io CRDs: done"))
		Expect(out).To(ContainSubstring("ask the NMState for the migration (spec.migrateFrom): done"))
		Expect(out).To(ContainSubstring("install nmoverlay: still waiting: Deployment nmoverlay/nmoverlay-operator not Available"))
		for _, name := range adoption.CRDNames {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			Expect(c.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
			Expect(crd.ManagedFields).To(ContainElement(HaveField("Manager", adoption.FieldOwner)), name)
			Expect(crd.Annotations).To(HaveKeyWithValue(adoption.TakenOverAnnotation, "kubernetes-nmstate"), name)
		}
		p := &nmstatev1.NodeNetworkConfigurationPolicy{}
		Expect(c.Get(ctx, client.ObjectKey{Name: "storage"}, p)).To(Succeed(), "kubernetes-nmstate's policies stay readable")
		nm := &nmstatev1.NMState{}
		Expect(c.Get(ctx, client.ObjectKey{Name: nmstatev1.NMStateName}, nm)).To(Succeed())
		Expect(nm.Spec.MigrateFrom).To(Equal(nmstatev1.MigrateFromKubernetesNMState))

		d := &appsv1.Deployment{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: "nmoverlay", Name: "nmoverlay-operator"}, d)).To(Succeed())
		d.Status.ObservedGeneration, d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = d.Generation, 1, 1, 1 // kube-controller-manager's part
		d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}
		Expect(c.Status().Update(ctx, d)).To(Succeed())
		meta.SetStatusCondition(&nm.Status.Conditions, metav1.Condition{Type: nmstatev1.NMStateAvailable, Status: metav1.ConditionTrue,
			Reason: "Test", ObservedGeneration: nm.Generation}) // nmoverlay's operator's part
		Expect(c.Status().Update(ctx, nm)).To(Succeed())
	})

	It("resumes: waits for every node's plan, applies the MachineConfigs and waits for every node on the overlay", func() {
		out, code := migrate("--apply", rendered, "--timeout", "2s")
		Expect(code).To(Equal(1))
		Expect(out).To(ContainSubstring("[7/11] install nmoverlay: held already"))
		Expect(out).To(ContainSubstring("no plan reported by nmoverlay's handler on worker-0, worker-1"))
		Expect(exists("machineconfiguration.openshift.io/v1", "MachineConfig", "", "99-worker-nmoverlay")).To(BeFalse(),
			"no node reboots onto the overlay before its plan is made")

		degraded := "the keyfile dir is not on the overlay"
		for _, n := range nodes { // the handlers' part
			reportOverlay(n, &v1beta1.OverlayStatus{Degraded: degraded, Migration: &v1beta1.MigrationStatus{
				Move: []v1beta1.PersistentProfile{{File: "br-storage.nmconnection", Interface: "br-storage", Policies: []string{"storage"}}}}})
		}
		out, code = migrate("--apply", rendered, "--timeout", "2s")
		Expect(code).To(Equal(1))
		Expect(out).To(ContainSubstring("[8/11] every node's migration plan: held already"))
		Expect(out).To(ContainSubstring("apply the MachineConfigs: done"))
		Expect(out).To(ContainSubstring("worker-0 (" + degraded + "); worker-1 (" + degraded + ")"))
		Expect(exists("machineconfiguration.openshift.io/v1", "MachineConfig", "", "99-worker-nmoverlay")).To(BeTrue())

		for _, n := range nodes { // each node rebooted onto the overlay and moved its profiles
			reportOverlay(n, &v1beta1.OverlayStatus{Migration: &v1beta1.MigrationStatus{Backup: "/var/lib/nmoverlay/migrated/boot-" + n,
				Moved: []v1beta1.PersistentProfile{{File: "br-storage.nmconnection", Detail: "moved"}}}})
		}
	})

	It("resumes: records each node's backup and ends the migration; run again, every step holds", func() {
		out, code := migrate("--apply", rendered, "--timeout", "20s")
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("The move is done"))
		nm := &nmstatev1.NMState{}
		Expect(c.Get(ctx, client.ObjectKey{Name: nmstatev1.NMStateName}, nm)).To(Succeed())
		Expect(nm.Spec.MigrateFrom).To(BeEmpty())
		cm := &corev1.ConfigMap{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: adoption.BackupName}, cm)).To(Succeed())
		var backups map[string]adoption.NodeBackup
		Expect(yaml.Unmarshal([]byte(cm.Data["nodes.yaml"]), &backups)).To(Succeed())
		Expect(backups).To(Equal(map[string]adoption.NodeBackup{
			"worker-0": {Dir: "/var/lib/nmoverlay/migrated/boot-worker-0", Moved: []string{"br-storage.nmconnection"}},
			"worker-1": {Dir: "/var/lib/nmoverlay/migrated/boot-worker-1", Moved: []string{"br-storage.nmconnection"}}}))

		rv := cm.ResourceVersion
		out, code = migrate("--apply", rendered, "--timeout", "20s")
		Expect(code).To(Equal(0))
		Expect(strings.Count(out, ": held already")).To(Equal(11), out)
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: adoption.BackupName}, cm)).To(Succeed())
		Expect(cm.ResourceVersion).To(Equal(rv), "a run with nothing to do writes nothing")
		Expect(apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nmstate-handler"}, &appsv1.DaemonSet{}))).To(BeTrue())
	})

	It("rolls back: removes the MachineConfigs and waits for every node off the overlay", func() {
		out, code := migrate("--rollback", rendered, "--timeout", "2s")
		Expect(code).To(Equal(1))
		Expect(out).To(ContainSubstring("[1/6] remove the MachineConfigs: waiting: still on the overlay"))
		Expect(out).To(ContainSubstring("worker-0, worker-1"))
		Expect(exists("machineconfiguration.openshift.io/v1", "MachineConfig", "", "99-worker-nmoverlay")).To(BeFalse())
		for _, n := range nodes { // each node rebooted off the overlay, as its handler reports
			reportOverlay(n, &v1beta1.OverlayStatus{Degraded: "the keyfile dir is not on the overlay"})
		}
	})

	It("rolls back: restores each node's profiles from its recorded backup, in a pod on that node", func() {
		out, code := migrate("--rollback", rendered, "--timeout", "2s")
		Expect(code).To(Equal(1))
		Expect(out).To(ContainSubstring("[1/6] remove the MachineConfigs: held already"))
		Expect(out).To(ContainSubstring("restoring on worker-0 (Pending); worker-1 (Pending)"))
		for _, n := range nodes {
			pod := &corev1.Pod{}
			Expect(c.Get(ctx, client.ObjectKey{Namespace: "nmoverlay", Name: "nmoverlay-restore-" + n}, pod)).To(Succeed())
			Expect(pod.Spec.NodeName).To(Equal(n))
			Expect(pod.Spec.Containers[0].Image).To(Equal("registry.example/nmoverlay:v0.1"))
			Expect(pod.Spec.Containers[0].Command).To(Equal([]string{"/nm-overlay", "restore-profiles", "--from", "/var/lib/nmoverlay/migrated/boot-" + n}))
			Expect(pod.Spec.Volumes).To(ContainElement(HaveField("HostPath.Path", "/etc/NetworkManager/system-connections")))
			pod.Status.Phase = corev1.PodSucceeded // the kubelet's part
			Expect(c.Status().Update(ctx, pod)).To(Succeed())
		}
		// What the operator deployed for the NMState, labelled as its own.
		Expect(c.Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "nmoverlay-handler", Namespace: "nmoverlay",
			Labels: map[string]string{"app.kubernetes.io/managed-by": "nmoverlay-operator"}},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "h"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "h"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "handler", Image: "registry.example/nmoverlay:v0.1"}}}}}})).To(Succeed())
	})

	It("rolls back: removes nmoverlay, gives the CRDs back as they were, and starts kubernetes-nmstate's Subscription again", func() {
		out, code := migrate("--rollback", rendered, "--timeout", "3s")
		Expect(code).To(Equal(1))
		Expect(out).To(ContainSubstring("[3/6] remove nmoverlay: done"))
		Expect(out).To(ContainSubstring("[4/6] give the nmstate.io CRDs back to kubernetes-nmstate: done"))
		Expect(out).To(ContainSubstring("[5/6] start kubernetes-nmstate again: waiting: no handler DaemonSet of kubernetes-nmstate's yet"))
		Expect(exists("apps/v1", "Deployment", "nmoverlay", "nmoverlay-operator")).To(BeFalse())
		Expect(exists("apps/v1", "DaemonSet", "nmoverlay", "nmoverlay-handler")).To(BeFalse())
		Expect(exists("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "", "nmoverlay-policy-checks")).To(BeFalse())
		for _, name := range adoption.CRDNames {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			Expect(c.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
			Expect(crd.Annotations).NotTo(HaveKey(adoption.TakenOverAnnotation), name)
			Expect(crd.Labels).To(HaveKey(olmCRDLabel), name)
		}
		Expect(exists("operators.coreos.com/v1alpha1", "Subscription", ns, "kubernetes-nmstate-operator")).To(BeTrue())
		p := &nmstatev1.NodeNetworkConfigurationPolicy{}
		Expect(c.Get(ctx, client.ObjectKey{Name: "storage"}, p)).To(Succeed(), "the policies stay")

		// OLM installs the CSV, whose operator deploys its handler (their part).
		handler := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "nmstate-handler", Namespace: ns,
			Labels: map[string]string{"app": "kubernetes-nmstate", "component": "kubernetes-nmstate-handler"}},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"name": "nmstate-handler"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"name": "nmstate-handler"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nmstate-handler", Image: "handler"}}}}}}
		Expect(c.Create(ctx, handler)).To(Succeed())
		handler.Status.DesiredNumberScheduled, handler.Status.NumberReady, handler.Status.ObservedGeneration = 2, 2, handler.Generation
		Expect(c.Status().Update(ctx, handler)).To(Succeed())
	})

	It("rolls back: ends, keeping the backup as a record; a later move starts afresh beside it", func() {
		out, code := migrate("--rollback", rendered, "--timeout", "20s")
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("The rollback is done"))
		cm := &corev1.ConfigMap{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: adoption.BackupName}, cm)).To(Succeed())
		Expect(cm.Labels).To(HaveKeyWithValue(adoption.BackupLabel, adoption.RolledBack))
		Expect(cm.Data["restored.yaml"]).To(SatisfyAll(ContainSubstring("worker-0:"), ContainSubstring("worker-1:"),
			ContainSubstring("/var/lib/nmoverlay/migrated/boot-worker-0")), "which nodes were restored, from where")
		out, code = migrate("--rollback", rendered, "--timeout", "20s")
		Expect(code).To(Equal(1))
		Expect(out).To(ContainSubstring("no move to roll back"))

		out, code = migrate("--apply", rendered, "--timeout", "2s")
		Expect(code).To(Equal(1), "it waits for kubernetes-nmstate's operator to stop, as before")
		Expect(out).To(ContainSubstring("[1/11] back up kubernetes-nmstate's objects: done"))
		Expect(out).NotTo(ContainSubstring("Resuming"))
		fresh := &corev1.ConfigMap{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: adoption.BackupName + "-2"}, fresh)).To(Succeed(), "a new backup beside the record")
		Expect(fresh.Labels).To(HaveKeyWithValue(adoption.BackupLabel, "kubernetes-nmstate"))
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: adoption.BackupName}, cm)).To(Succeed())
		Expect(cm.Labels).To(HaveKeyWithValue(adoption.BackupLabel, adoption.RolledBack), "the record stays as it was")
	})
})
