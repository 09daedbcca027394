//go:build integration

package integration_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nmoverlay/nmoverlay/api"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/deploy"
	"github.com/nmoverlay/nmoverlay/internal/operator"
	"github.com/nmoverlay/nmoverlay/internal/rebootgate"
	"github.com/nmoverlay/nmoverlay/test/kit"
)

const (
	operatorNS    = "nmoverlay"
	operatorSA    = "nmoverlay-operator"
	operandImage  = "registry.example/nmoverlay:operator-test"
	operatorPod   = "nmoverlay-operator-test"
	infraCRDName  = "infrastructures.config.openshift.io"
	operatorGrace = 3 * time.Second
)

// infrastructureCRD has the shape of OpenShift's config.openshift.io Infrastructure as far
// as the operator reads it: cluster-scoped, status.platformStatus.type.
func infrastructureCRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: infraCRDName},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "config.openshift.io", Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "infrastructures", Singular: "infrastructure",
				Kind: "Infrastructure", ListKind: "InfrastructureList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve}}}},
		},
	}
}

// apiServerCRD has the shape of OpenShift's config.openshift.io APIServer as far as the
// operator reads it: cluster-scoped, spec.tlsSecurityProfile.
func apiServerCRD() *apiextensionsv1.CustomResourceDefinition {
	crd := infrastructureCRD()
	crd.Name = "apiservers.config.openshift.io"
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: "apiservers", Singular: "apiserver", Kind: "APIServer", ListKind: "APIServerList"}
	return crd
}

var _ = Describe("the operator", Ordered, func() {
	ctx := context.Background()
	var (
		kubeconfig string
		dir        string
		stop       func()
		operand    []*unstructured.Unstructured
		// prometheus-operator's, installed again by a spec (the suite installs them)
		monitoringCRDs []*apiextensionsv1.CustomResourceDefinition
	)

	// start runs cmd/operator as its own process with the operator's service account's
	// token, as its Deployment runs it: every request it makes is checked against its RBAC.
	start := func(args ...string) {
		GinkgoHelper()
		bin, err := kit.Binary("cmd/operator")
		Expect(err).NotTo(HaveOccurred())
		log, err := os.Create(filepath.Join(dir, "operator.log"))
		Expect(err).NotTo(HaveOccurred())
		cmd := exec.Command(bin, append([]string{"--kubeconfig", kubeconfig, "--namespace", operatorNS,
			"--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, args...)...)
		// Its image is read from its Pod, as in its Deployment.
		cmd.Env = append(os.Environ(), "POD_NAME="+operatorPod)
		cmd.Stdout, cmd.Stderr = log, log
		Expect(cmd.Start()).To(Succeed())
		stop = func() {
			_ = cmd.Process.Signal(os.Interrupt)
			_ = cmd.Wait()
			b, _ := os.ReadFile(log.Name())
			GinkgoWriter.Printf("operator log:\n%s\n", b)
		}
	}
	restart := func(args ...string) {
		GinkgoHelper()
		stop()
		start(args...)
	}

	get := func(o *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GroupVersionKind())
		return got, k8s.Get(ctx, client.ObjectKeyFromObject(o), got)
	}
	find := func(kind string) *unstructured.Unstructured {
		GinkgoHelper()
		i := slices.IndexFunc(operand, func(o *unstructured.Unstructured) bool { return o.GetKind() == kind })
		Expect(i).To(BeNumerically(">=", 0), kind)
		return operand[i]
	}
	nmstate := func(name string) func() *nmstatev1.NMState {
		return func() *nmstatev1.NMState {
			nm := &nmstatev1.NMState{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: name}, nm); err != nil {
				return nil
			}
			return nm
		}
	}
	condition := func(name, condType string) func() string {
		return func() string {
			nm := nmstate(name)()
			if nm == nil {
				return "no NMState"
			}
			c := meta.FindStatusCondition(nm.Status.Conditions, condType)
			if c == nil {
				return "no condition"
			}
			return string(c.Status) + " " + c.Reason
		}
	}
	handlerDS := func() *appsv1.DaemonSet {
		GinkgoHelper()
		ds := &appsv1.DaemonSet{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(find("DaemonSet")), ds)).To(Succeed())
		return ds
	}
	deleteAll := func(list client.ObjectList) {
		GinkgoHelper()
		Expect(k8s.List(ctx, list)).To(Succeed())
		items, err := meta.ExtractList(list)
		Expect(err).NotTo(HaveOccurred())
		for _, it := range items {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, it.(client.Object)))).To(Succeed())
		}
	}

	BeforeAll(func() {
		dir = GinkgoT().TempDir()
		var err error
		operand, err = deploy.Operand(deploy.Options{Image: operandImage, Namespace: operatorNS})
		Expect(err).NotTo(HaveOccurred())
		// A cluster without prometheus-operator, to begin with: a spec installs its CRDs again.
		for _, o := range operand {
			crd := deploy.CRDOf(o.GroupVersionKind().GroupKind())
			if crd == "" {
				continue
			}
			m := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crd}}
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, m))).To(Succeed())
			Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(m), m) }, "30s").Should(Satisfy(apierrors.IsNotFound))
		}
		// The operator's own objects, as kubectl apply -k deploy/ creates them (not its
		// Deployment: the process below is that).
		for _, o := range deployObjects() {
			switch o.GetKind() {
			case "Namespace":
				Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, o.DeepCopy()))).To(Succeed())
			case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
				if strings.HasPrefix(o.GetName(), "nmoverlay-operator") {
					Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, o.DeepCopy()))).To(Succeed())
					DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, o))).To(Succeed()) })
				}
			}
		}
		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		exp := int64(3600)
		tr, err := cs.CoreV1().ServiceAccounts(operatorNS).CreateToken(ctx, operatorSA,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		kc := clientcmdapi.NewConfig()
		kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
		kc.AuthInfos["operator"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
		kc.Contexts["operator"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "operator"}
		kc.CurrentContext = "operator"
		kubeconfig = filepath.Join(dir, "kubeconfig")
		Expect(clientcmd.WriteToFile(*kc, kubeconfig)).To(Succeed())
		// The operator's Pod as its Deployment would make it; no kubelet runs it, the
		// process below is it.
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: operatorPod, Namespace: operatorNS},
			Spec: corev1.PodSpec{ServiceAccountName: operatorSA, Containers: []corev1.Container{{Name: "operator", Image: operandImage}}}}
		Expect(k8s.Create(ctx, pod)).To(Succeed())
		DeferCleanup(func() { Expect(k8s.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed()) })
		start()
		DeferCleanup(func() {
			stop()
			// What the garbage collector does on a cluster (envtest runs none): the
			// NMStates' objects go with them.
			deleteAll(&nmstatev1.NMStateList{})
			for _, o := range operand {
				if err := k8s.Delete(ctx, o.DeepCopy()); !meta.IsNoMatchError(err) { // prometheus-operator's, if never installed
					Expect(client.IgnoreNotFound(err)).To(Succeed())
				}
			}
			for _, o := range []client.Object{&rbacv1.Role{}, &rbacv1.RoleBinding{}} {
				o.SetNamespace(operatorNS)
				o.SetName(operator.PrometheusRBAC)
				Expect(client.IgnoreNotFound(k8s.Delete(ctx, o))).To(Succeed())
			}
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Namespace: operatorNS, Name: operator.RecordConfigMap}}))).To(Succeed())
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, infrastructureCRD()))).To(Succeed())
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, apiServerCRD()))).To(Succeed())
		})
	})

	It("deploys nothing until the NMState exists, and does not create it without OpenShift's Infrastructure API", func() {
		Consistently(func() error { _, err := get(find("DaemonSet")); return err }, operatorGrace).Should(Satisfy(apierrors.IsNotFound))
		Expect(nmstate(nmstatev1.NMStateName)()).To(BeNil())
	})

	It("deploys the handler, the controller, their RBAC and admission policies for kubernetes-nmstate's NMState manifest, owned by it", func() {
		// As kubernetes-nmstate documents it, with a field nmoverlay does not use.
		nm := decodeYAMLStream([]byte(`
apiVersion: nmstate.io/v1
kind: NMState
metadata:
  name: nmstate
spec:
  nodeSelector:
    node-role.kubernetes.io/worker: ""
  probeConfiguration:
    dns:
      host: redhat.com
  selfSignConfiguration:
    certRotateInterval: 24h
`))[0]
		Expect(k8s.Create(ctx, nm)).To(Succeed())
		owner := nmstate(nmstatev1.NMStateName)()
		Expect(owner.Spec.Backend).To(Equal("networkmanager"), "defaulted by the CRD")
		for _, o := range operand {
			if deploy.CRDOf(o.GroupVersionKind().GroupKind()) != "" {
				continue // prometheus-operator's kinds: not served yet (the next spec)
			}
			Eventually(func() error { _, err := get(o); return err }, "20s").Should(Succeed(), "%s %s", o.GetKind(), o.GetName())
			got, _ := get(o)
			Expect(got.GetLabels()).To(HaveKeyWithValue(operator.ManagedByLabel, operator.ManagedBy), "%s %s", o.GetKind(), o.GetName())
			refs := got.GetOwnerReferences()
			Expect(refs).To(HaveLen(1), "%s %s", o.GetKind(), o.GetName())
			Expect(refs[0].UID).To(Equal(owner.UID))
			Expect(*refs[0].Controller).To(BeTrue())
		}
		ds := handlerDS()
		Expect(ds.Spec.Template.Spec.NodeSelector).To(Equal(map[string]string{"kubernetes.io/os": "linux", "node-role.kubernetes.io/worker": ""}))
		Expect(ds.Spec.Template.Spec.Containers[0].Image).To(Equal(operandImage))
		Expect(ds.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--dns-probe-host=redhat.com"))
		Eventually(condition(nmstatev1.NMStateName, nmstatev1.NMStateProgressing), "10s").Should(Equal("True Deploying"))
		Expect(condition(nmstatev1.NMStateName, nmstatev1.NMStateAvailable)()).To(Equal("False Deploying"))
	})

	It("applies the ServiceMonitors and the PrometheusRule once prometheus-operator's CRDs are installed, valid by their schemas", func() {
		if monitoringCRDPath == "" {
			Skip("NMOVERLAY_PROMETHEUS is not set") // BeforeSuite fails in CI
		}
		var optional []*unstructured.Unstructured
		for _, o := range operand {
			if deploy.CRDOf(o.GroupVersionKind().GroupKind()) != "" {
				optional = append(optional, o)
			}
		}
		Expect(optional).To(HaveLen(3), "two ServiceMonitors and a PrometheusRule")
		// No CRD, nothing applied, and the operator is not stuck on it.
		Expect(condition(nmstatev1.NMStateName, nmstatev1.NMStateDegraded)()).NotTo(HavePrefix("True"))
		// prometheus-operator's own CRDs, generated from its API types: the API server
		// checks the objects against their real schemas. No change to the NMState: the
		// operator sees the CRDs come.
		var err error
		monitoringCRDs, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{monitoringCRDPath}})
		Expect(err).NotTo(HaveOccurred())
		Expect(monitoringCRDs).To(HaveLen(2))
		for _, o := range optional {
			Eventually(func() error { _, err := get(o); return err }, "30s").Should(Succeed(), "%s %s", o.GetKind(), o.GetName())
			got, _ := get(o)
			Expect(got.GetOwnerReferences()).To(HaveLen(1))
		}
		sm, err := get(find("ServiceMonitor"))
		Expect(err).NotTo(HaveOccurred())
		tlsConfig, _, _ := unstructured.NestedFieldNoCopy(sm.Object, "spec", "endpoints")
		Expect(tlsConfig).To(ConsistOf(HaveKeyWithValue("tlsConfig", map[string]any{"insecureSkipVerify": true})),
			"not OpenShift: the daemons' certificates are self-signed")
		// What a payload component has everywhere: pods on the management cores, the
		// cluster's TLS profile (Intermediate without OpenShift's), the controller's
		// disruption budget and network policy.
		ds := handlerDS()
		d := &appsv1.Deployment{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(find("Deployment")), d)).To(Succeed())
		for _, tmpl := range []corev1.PodTemplateSpec{ds.Spec.Template, d.Spec.Template} {
			Expect(tmpl.Annotations).To(HaveKeyWithValue("target.workload.openshift.io/management", `{"effect": "PreferredDuringScheduling"}`))
			Expect(tmpl.Spec.Containers[0].Args).To(ContainElements("--tls-min-version=VersionTLS12",
				HavePrefix("--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,")))
			Expect(tmpl.Spec.Containers[0].Args).NotTo(ContainElement(HavePrefix("--metrics-cert-dir")))
		}
		Expect(ds.Spec.Template.Spec.PriorityClassName).To(Equal("system-node-critical"))
		for _, kind := range []string{"PodDisruptionBudget", "NetworkPolicy", "Service"} {
			_, err := get(find(kind))
			Expect(err).NotTo(HaveOccurred(), kind)
		}
	})

	It("reports Available once the handler runs on every node it selects and the controller is available", func() {
		// kube-controller-manager's part (envtest runs none): the workloads' status.
		ds := handlerDS()
		ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, DesiredNumberScheduled: 2, CurrentNumberScheduled: 2,
			UpdatedNumberScheduled: 2, NumberReady: 2, NumberAvailable: 2}
		Expect(k8s.Status().Update(ctx, ds)).To(Succeed())
		d := &appsv1.Deployment{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(find("Deployment")), d)).To(Succeed())
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"}}}
		Expect(k8s.Status().Update(ctx, d)).To(Succeed())
		Eventually(condition(nmstatev1.NMStateName, nmstatev1.NMStateAvailable), "10s").Should(Equal("True SuccessfullyDeployed"))
		Expect(condition(nmstatev1.NMStateName, nmstatev1.NMStateProgressing)()).To(Equal("False SuccessfullyDeployed"))
		Expect(condition(nmstatev1.NMStateName, nmstatev1.NMStateDegraded)()).To(Equal("False SuccessfullyDeployed"))
	})

	It("rolls the handler when the spec changes", func() {
		before := handlerDS().Generation
		nm := nmstate(nmstatev1.NMStateName)()
		nm.Spec.Tolerations = []corev1.Toleration{{Key: "network", Operator: corev1.TolerationOpExists}}
		nm.Spec.ProbeConfiguration.Timeout = &metav1.Duration{Duration: 90 * time.Second}
		nm.Spec.ProbeConfiguration.Disabled = []nmstatev1.ProbeName{nmstatev1.ProbeDefaultGateway}
		nm.Spec.LogLevel = "debug"
		Expect(k8s.Update(ctx, nm)).To(Succeed())
		Eventually(func() []string { return handlerDS().Spec.Template.Spec.Containers[0].Args }, "10s").Should(ContainElements(
			"--probe-timeout=1m30s", "--disable-probes=default-gateway", "--v=4", "--dns-probe-host=redhat.com"))
		ds := handlerDS()
		Expect(ds.Generation).To(BeNumerically(">", before))
		Expect(ds.Spec.Template.Spec.Tolerations).To(Equal(append(nm.Spec.Tolerations, rebootgate.Toleration())),
			"the CR's replace the default, and the reboot gate's taint is still tolerated")
		// The DaemonSet's status is now of an older generation: rolling out.
		Eventually(condition(nmstatev1.NMStateName, nmstatev1.NMStateProgressing), "10s").Should(Equal("True Deploying"))
	})

	It("reports a node whose reboot gate was lifted without its policies as Degraded, and clears what gates left once the gate is off", func() {
		nm := nmstate(nmstatev1.NMStateName)()
		nm.Spec.RebootGate = nmstatev1.RebootGateTaint
		Expect(k8s.Update(ctx, nm)).To(Succeed())
		Eventually(func() []string { return handlerDS().Spec.Template.Spec.Containers[0].Args }, "10s").Should(ContainElement("--reboot-gate=Taint"))
		Eventually(func() []string {
			d := &appsv1.Deployment{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(find("Deployment")), d)).To(Succeed())
			return d.Spec.Template.Spec.Containers[0].Args
		}, "10s").Should(ContainElement("--reboot-gate=Taint"))

		// What the controller leaves on a node whose gate timed out, and on one gated now.
		theirs := corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoSchedule}
		failed := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "op-gate-failed", Annotations: map[string]string{
			rebootgate.FailedAnnotation: rebootgate.FormatFailed("b2", "not Available in boot b2 after 5m0s: bond")}}}
		gated := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "op-gate-on", Annotations: map[string]string{
			rebootgate.SinceAnnotation: rebootgate.FormatSince(time.Now(), "b7"), "example.com/owner": "team-a"}},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{theirs, rebootgate.Taint()}}}
		for _, n := range []*corev1.Node{failed, gated} {
			Expect(k8s.Create(ctx, n)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, n))).To(Succeed()) })
		}
		Eventually(condition(nmstatev1.NMStateName, nmstatev1.NMStateDegraded), "10s").Should(Equal("True ReconvergenceFailed"))
		Expect(meta.FindStatusCondition(nmstate(nmstatev1.NMStateName)().Status.Conditions, nmstatev1.NMStateDegraded).Message).To(
			ContainSubstring("op-gate-failed: not Available in boot b2 after 5m0s: bond"))
		Expect(gateOf(gated.Name)()).To(HavePrefix("tainted since="), "a gate the controller holds is left to it")

		// Off: the operator takes away what the gates left, and nothing else.
		nm = nmstate(nmstatev1.NMStateName)()
		nm.Spec.RebootGate = ""
		Expect(k8s.Update(ctx, nm)).To(Succeed())
		for _, n := range []*corev1.Node{failed, gated} {
			Eventually(gateOf(n.Name), "10s").Should(Equal("untainted since=- failed=-"))
		}
		got := &corev1.Node{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(gated), got)).To(Succeed())
		Expect(got.Spec.Taints).To(ContainElement(theirs))
		Expect(got.Annotations).To(HaveKeyWithValue("example.com/owner", "team-a"))
		Eventually(condition(nmstatev1.NMStateName, nmstatev1.NMStateDegraded), "10s").Should(Equal("False Deploying"))
		Expect(handlerDS().Spec.Template.Spec.Containers[0].Args).NotTo(ContainElement("--reboot-gate=Taint"))
	})

	It("corrects drift in what it owns: an edited DaemonSet, a deleted ClusterRole, a removed label", func() {
		ds := handlerDS()
		ds.Spec.Template.Spec.Containers[0].Args = []string{"--edited"}
		Expect(k8s.Update(ctx, ds)).To(Succeed())
		role := find("ClusterRole")
		Expect(k8s.Delete(ctx, role.DeepCopy())).To(Succeed())
		vap, err := get(find("ValidatingAdmissionPolicy"))
		Expect(err).NotTo(HaveOccurred())
		labels := vap.GetLabels()
		delete(labels, "app.kubernetes.io/name")
		labels["extra"] = "x"
		vap.SetLabels(labels)
		Expect(k8s.Update(ctx, vap)).To(Succeed())

		Eventually(func() []string { return handlerDS().Spec.Template.Spec.Containers[0].Args }, "10s").Should(ContainElement("--probe-timeout=1m30s"))
		Expect(handlerDS().Spec.Template.Spec.Containers[0].Args).NotTo(ContainElement("--edited"))
		Eventually(func() error { _, err := get(role); return err }, "10s").Should(Succeed())
		// A label it set is set again; one it never set is left alone.
		Eventually(func() map[string]string { v, _ := get(vap); return v.GetLabels() }, "10s").Should(
			HaveKeyWithValue(operator.ManagedByLabel, operator.ManagedBy))
		v, _ := get(vap)
		Expect(v.GetLabels()).To(HaveKeyWithValue("extra", "x"))
	})

	// An upgrade to a release whose operand dropped an object: that release's operator
	// (this code, with an operand that lacks it), under the operator's own RBAC, deletes it
	// once the rest is applied, and nothing else.
	It("deletes, after an upgrade, what the earlier release's operand had and this one's has not, under its own RBAC", func() {
		retired := find("ClusterRoleBinding")
		before := map[string]string{}
		for _, o := range operand {
			got, err := get(o)
			Expect(err).NotTo(HaveOccurred(), "%s %s", o.GetKind(), o.GetName())
			before[o.GetKind()+"/"+o.GetName()] = string(got.GetUID())
		}
		stop()
		base := slices.DeleteFunc(slices.Clone(operand), func(o *unstructured.Unstructured) bool { return o == retired })
		rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		scheme, err := api.NewScheme()
		Expect(err).NotTo(HaveOccurred())
		mgr, err := ctrl.NewManager(rc, ctrl.Options{Scheme: scheme, Cache: operator.CacheOptions(operatorNS, base),
			Client:  client.Options{Cache: &client.CacheOptions{Unstructured: true}},
			Metrics: metricsserver.Options{BindAddress: "0"}})
		Expect(err).NotTo(HaveOccurred())
		Expect((&operator.Operator{Client: mgr.GetClient(), Base: base}).SetupWithManager(mgr)).To(Succeed())
		running, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- mgr.Start(running) }()
		Eventually(func() bool { _, err := get(retired); return apierrors.IsNotFound(err) }, "20s", "100ms").Should(BeTrue(),
			"%s %s deleted", retired.GetKind(), retired.GetName())
		cancel()
		Expect(<-done).To(Succeed())
		for _, o := range base {
			got, err := get(o)
			Expect(err).NotTo(HaveOccurred(), "%s %s kept", o.GetKind(), o.GetName())
			Expect(string(got.GetUID())).To(Equal(before[o.GetKind()+"/"+o.GetName()]), "%s %s not deleted and re-created", o.GetKind(), o.GetName())
		}
		Expect(condition(nmstatev1.NMStateName, nmstatev1.NMStateDegraded)()).NotTo(HavePrefix("True"))
		start() // this release again: the object is back
		Eventually(func() error { _, err := get(retired); return err }, "20s", "100ms").Should(Succeed())
	})

	It("reports any other NMState as ignored, and deploys nothing for it", func() {
		Expect(k8s.Create(ctx, &nmstatev1.NMState{ObjectMeta: metav1.ObjectMeta{Name: "second"}})).To(Succeed())
		Eventually(condition("second", nmstatev1.NMStateDegraded), "10s").Should(Equal("True Ignored"))
		Expect(nmstate("second")().Status.Conditions).To(ContainElement(HaveField("Message", `only the NMState named "nmstate" is used; "second" is ignored`)))
		ds, err := get(find("DaemonSet"))
		Expect(err).NotTo(HaveOccurred())
		Expect(ds.GetOwnerReferences()).To(ConsistOf(HaveField("Name", nmstatev1.NMStateName)))
		Expect(k8s.Delete(ctx, nmstate("second")())).To(Succeed())
	})

	It("has only the rights it needs", func() {
		sa := "system:serviceaccount:" + operatorNS + ":" + operatorSA
		may := func(verb, group, resource, ns, name string) bool {
			r := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: sa,
				Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNS, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Namespace: ns, Name: name}}}
			Expect(k8s.Create(ctx, r)).To(Succeed())
			return r.Status.Allowed
		}
		rbac, adm := "rbac.authorization.k8s.io", "admissionregistration.k8s.io"
		for _, denied := range [][5]string{
			{"patch", rbac, "clusterroles", "", "admin"},
			{"patch", rbac, "clusterrolebindings", "", "cluster-admin"},
			{"escalate", rbac, "clusterroles", "", "cluster-admin"},
			{"bind", rbac, "clusterroles", "", "cluster-admin"},
			{"create", rbac, "clusterroles", "", ""},
			{"patch", adm, "validatingadmissionpolicies", "", "someone-elses"},
			{"delete", "apps", "deployments", operatorNS, "nmoverlay-operator"},
			{"delete", "apps", "daemonsets", "kube-system", "kube-proxy"},
			{"delete", rbac, "clusterroles", "", "admin"},
			{"delete", rbac, "clusterrolebindings", "", "cluster-admin"},
			{"patch", "apps", "daemonsets", "kube-system", "kube-proxy"},
			{"create", "", "pods", operatorNS, ""},
			{"get", "", "secrets", operatorNS, ""},
			{"update", "nmstate.io", "nodenetworkconfigurationpolicies", "", ""},
			{"delete", "nmstate.io", "nmstates", "", "nmstate"},
		} {
			Expect(may(denied[0], denied[1], denied[2], denied[3], denied[4])).To(BeFalse(), "%v", denied)
		}
		// What it used above, by name.
		Expect(may("patch", rbac, "clusterroles", "", "nmoverlay-handler")).To(BeTrue())
		Expect(may("bind", rbac, "clusterroles", "", "system:auth-delegator")).To(BeTrue())
		Expect(may("delete", "apps", "daemonsets", operatorNS, "nmoverlay-handler")).To(BeTrue(), "pruned by name when a release drops it")
	})

	It("lets the garbage collector remove what it deployed with the NMState, and deploys nothing after", func() {
		owner := nmstate(nmstatev1.NMStateName)()
		for _, o := range operand {
			got, err := get(o)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.GetOwnerReferences()).To(ConsistOf(HaveField("UID", owner.UID)), "%s %s", o.GetKind(), o.GetName())
		}
		Expect(k8s.Delete(ctx, owner)).To(Succeed())
		// The garbage collector's part (envtest runs none): it deletes every dependent whose
		// owner is gone.
		for _, o := range operand {
			Expect(k8s.Delete(ctx, o.DeepCopy())).To(Succeed())
		}
		Consistently(func() error { _, err := get(find("DaemonSet")); return err }, operatorGrace).Should(Satisfy(apierrors.IsNotFound))
	})

	Context("on OpenShift (the Infrastructure API served)", func() {
		infra := func(platform string) *unstructured.Unstructured {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(operator.InfrastructureGVK)
			u.SetName("cluster")
			Expect(unstructured.SetNestedField(u.Object, platform, "status", "platformStatus", "type")).To(Succeed())
			return u
		}
		setPlatform := func(platform string) {
			GinkgoHelper()
			u := infra(platform)
			Expect(k8s.Patch(ctx, u, client.Apply, client.FieldOwner("installer"), client.ForceOwnership)).To(Succeed())
		}

		BeforeAll(func() {
			_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{infrastructureCRD()}})
			Expect(err).NotTo(HaveOccurred())
			setPlatform("AWS")
		})

		It("leaves nmoverlay off on other platforms", func() {
			restart()
			Consistently(nmstate(nmstatev1.NMStateName), operatorGrace).Should(BeNil())
		})

		It("creates the default NMState on BareMetal, once: deleting it is the opt-out", func() {
			setPlatform("BareMetal")
			Eventually(nmstate(nmstatev1.NMStateName), "10s").ShouldNot(BeNil())
			Expect(nmstate(nmstatev1.NMStateName)().Labels).To(HaveKeyWithValue(operator.ManagedByLabel, operator.ManagedBy))
			Eventually(func() error { _, err := get(find("DaemonSet")); return err }, "10s").Should(Succeed())
			cm := &corev1.ConfigMap{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: operator.RecordConfigMap}, cm)).To(Succeed())
			Expect(cm.Data).To(HaveKey(operator.RecordKey))

			Expect(k8s.Delete(ctx, nmstate(nmstatev1.NMStateName)())).To(Succeed())
			restart()
			Consistently(nmstate(nmstatev1.NMStateName), operatorGrace).Should(BeNil())
			for _, o := range operand {
				Expect(client.IgnoreNotFound(k8s.Delete(ctx, o.DeepCopy()))).To(Succeed())
			}
		})

		It("creates nothing with --default-nmstate=never", func() {
			Expect(k8s.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: operator.RecordConfigMap}})).To(Succeed())
			restart("--default-nmstate=never")
			Consistently(nmstate(nmstatev1.NMStateName), operatorGrace).Should(BeNil())
			// And without it, on the same cluster, it does: the flag made the difference.
			restart()
			Eventually(nmstate(nmstatev1.NMStateName), "10s").ShouldNot(BeNil())
		})

		It("serves metrics as OpenShift asks: its TLS profile, the service CA's certificates, scraped by the platform Prometheus; no disruption budget on a single node", func() {
			Expect(monitoringCRDs).NotTo(BeEmpty(), "installed by an earlier spec")
			_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{apiServerCRD()}})
			Expect(err).NotTo(HaveOccurred())
			apiServer := &unstructured.Unstructured{}
			apiServer.SetGroupVersionKind(operator.APIServerGVK)
			apiServer.SetName("cluster")
			setProfile := func(profile map[string]any) {
				GinkgoHelper()
				Expect(unstructured.SetNestedMap(apiServer.Object, profile, "spec", "tlsSecurityProfile")).To(Succeed())
				Expect(k8s.Patch(ctx, apiServer.DeepCopy(), client.Apply, client.FieldOwner("admin"), client.ForceOwnership)).To(Succeed())
			}
			setProfile(map[string]any{"type": "Modern", "modern": map[string]any{}})
			restart() // the APIServer API is looked up at start
			args := func(kind string) func() []string {
				return func() []string {
					o, err := get(find(kind))
					if err != nil {
						return nil
					}
					c, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
					a, _, _ := unstructured.NestedStringSlice(c[0].(map[string]any), "args")
					return a
				}
			}
			for _, kind := range []string{"DaemonSet", "Deployment"} {
				Eventually(args(kind), "20s").Should(ContainElements("--tls-min-version=VersionTLS13", "--metrics-cert-dir=/etc/nmoverlay/metrics-tls"), kind)
				Expect(args(kind)()).NotTo(ContainElement(HavePrefix("--tls-cipher-suites")), "%s: TLS 1.3 alone", kind)
			}
			for _, o := range operand {
				if o.GetKind() != "ServiceMonitor" {
					continue
				}
				Eventually(func() []any {
					sm, _ := get(o)
					eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
					return eps
				}, "10s").Should(ConsistOf(HaveKeyWithValue("tlsConfig", map[string]any{
					"caFile":     "/etc/prometheus/configmaps/serving-certs-ca-bundle/service-ca.crt",
					"serverName": o.GetName() + "-metrics." + operatorNS + ".svc", // the Service it selects
				})), o.GetName())
			}
			binding := &rbacv1.RoleBinding{}
			Eventually(func() error {
				return k8s.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: operator.PrometheusRBAC}, binding)
			}, "10s").Should(Succeed())
			Expect(binding.Subjects).To(ConsistOf(HaveField("Namespace", "openshift-monitoring")))
			Expect(binding.Labels).To(HaveKeyWithValue(operator.ManagedByLabel, operator.ManagedBy))

			// A Custom profile, changed while the operator runs: the daemons follow.
			setProfile(map[string]any{"type": "Custom", "custom": map[string]any{"minTLSVersion": "VersionTLS12",
				"ciphers": []any{"ECDHE-RSA-AES256-GCM-SHA384", "DHE-RSA-AES128-GCM-SHA256"}}})
			Eventually(args("DaemonSet"), "10s").Should(ContainElements("--tls-min-version=VersionTLS12",
				"--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"))
			// One the daemons could not follow: refused, said, and nothing changed.
			setProfile(map[string]any{"type": "Custom", "custom": map[string]any{"minTLSVersion": "VersionTLS12",
				"ciphers": []any{"DHE-RSA-AES128-GCM-SHA256"}}})
			Eventually(func() string {
				nm := nmstate(nmstatev1.NMStateName)()
				if c := meta.FindStatusCondition(nm.Status.Conditions, nmstatev1.NMStateDegraded); c != nil && c.Status == metav1.ConditionTrue {
					return c.Message
				}
				return ""
			}, "10s").Should(ContainSubstring("none of [\"DHE-RSA-AES128-GCM-SHA256\"] is a TLS 1.0-1.2 suite Go implements"))
			Expect(args("DaemonSet")()).To(ContainElement("--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"))
			setProfile(map[string]any{"type": "Intermediate", "intermediate": map[string]any{}})
			Eventually(args("DaemonSet"), "10s").Should(ContainElement(HavePrefix("--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,")))

			// A single-node control plane: the disruption budget goes; back with three.
			pdb := find("PodDisruptionBudget")
			Expect(get(pdb)).Error().NotTo(HaveOccurred())
			setTopology := func(topology string) {
				GinkgoHelper()
				u := infra("BareMetal")
				Expect(unstructured.SetNestedField(u.Object, topology, "status", "controlPlaneTopology")).To(Succeed())
				Expect(k8s.Patch(ctx, u, client.Apply, client.FieldOwner("installer"), client.ForceOwnership)).To(Succeed())
			}
			setTopology("SingleReplica")
			Eventually(func() error { _, err := get(pdb); return err }, "10s").Should(Satisfy(apierrors.IsNotFound))
			setTopology("HighlyAvailable")
			Eventually(func() error { _, err := get(pdb); return err }, "10s").Should(Succeed())
		})
	})
})
