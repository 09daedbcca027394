package operator

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nmoverlay/nmoverlay/deploy"
)

// How the operand's metrics are served and scraped, by cluster:
//   - everywhere, over TLS as the cluster's profile says (Environment.TLS);
//   - where prometheus-operator's CRDs are installed, with its ServiceMonitors and
//     PrometheusRule (deploy/operand/monitoring.yaml);
//   - on OpenShift, with the service CA's certificates, verified by the platform
//     Prometheus, which is allowed to discover the targets in the operand's namespace.

// metricsCertVolume is the daemons' volume of their metrics Service's certificate
// (deploy/operand: a Secret the service CA writes, optional elsewhere).
const metricsCertVolume = "metrics-tls"

// OpenShift's platform Prometheus: its service account, and the file it reads the service
// CA from (cluster-monitoring-operator mounts the serving-certs-ca-bundle ConfigMap there).
const (
	platformPrometheusNamespace = "openshift-monitoring"
	platformPrometheusSA        = "prometheus-k8s"
	serviceCAFile               = "/etc/prometheus/configmaps/serving-certs-ca-bundle/service-ca.crt"
	// PrometheusRBAC names the Role and RoleBinding that let it discover the targets.
	PrometheusRBAC = "nmoverlay-prometheus"
)

// wanted says whether env has o applied: an optional kind only where its CRD is
// installed, the controller's PodDisruptionBudget only where the control plane is more
// than one node.
func wanted(o *unstructured.Unstructured, env Environment) bool {
	if crd := deploy.CRDOf(o.GroupVersionKind().GroupKind()); crd != "" && env.CRDs[crd] == "" {
		return false
	}
	return !(o.GetKind() == "PodDisruptionBudget" && env.SingleNode)
}

// serveMetrics passes the daemon's container the cluster's TLS profile and, on OpenShift,
// the service CA's certificate.
func serveMetrics(pod *corev1.PodSpec, name string, env Environment) error {
	c, err := container(pod, name)
	if err != nil {
		return err
	}
	c.Args = append(c.Args, env.TLS.Args()...)
	if !env.OpenShift {
		return nil
	}
	i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == metricsCertVolume })
	if i < 0 {
		return fmt.Errorf("container %s mounts no volume %s", name, metricsCertVolume)
	}
	c.Args = append(c.Args, "--metrics-cert-dir="+c.VolumeMounts[i].MountPath)
	return nil
}

// scrapeWithServiceCA has the ServiceMonitor sm verify the daemons' certificates with the
// service CA, for the name of the Service it selects in base.
func scrapeWithServiceCA(sm *unstructured.Unstructured, base []*unstructured.Unstructured) error {
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	var services []*unstructured.Unstructured
	for _, o := range base {
		if o.GetKind() == "Service" && len(sel) > 0 && labels.SelectorFromSet(sel).Matches(labels.Set(o.GetLabels())) {
			services = append(services, o)
		}
	}
	if len(services) != 1 {
		return fmt.Errorf("selects %d of the operand's Services, want one", len(services))
	}
	svc := services[0]
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	for _, e := range endpoints {
		e.(map[string]any)["tlsConfig"] = map[string]any{
			"caFile":     serviceCAFile,
			"serverName": svc.GetName() + "." + svc.GetNamespace() + ".svc",
		}
	}
	return unstructured.SetNestedSlice(sm.Object, endpoints, "spec", "endpoints")
}

// openShiftMonitoring are the objects OpenShift's platform Prometheus needs to scrape the
// operand where it scrapes ServiceMonitors: reads of the Services, endpoints and Pods in
// the operand's namespace. Not in deploy/operand: its namespace transformer would move the
// binding's subject into the operand's namespace.
func openShiftMonitoring(base []*unstructured.Unstructured, env Environment) []*unstructured.Unstructured {
	scraped := slices.ContainsFunc(base, func(o *unstructured.Unstructured) bool { return o.GetKind() == "ServiceMonitor" && wanted(o, env) })
	if !env.OpenShift || !scraped {
		return nil
	}
	meta := metav1.ObjectMeta{Name: PrometheusRBAC, Namespace: operandNamespace(base)}
	read := []string{"get", "list", "watch"}
	role := &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, ObjectMeta: meta,
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"services", "endpoints", "pods"}, Verbs: read},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: read},
		}}
	binding := &rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"}, ObjectMeta: meta,
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: PrometheusRBAC},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: platformPrometheusSA, Namespace: platformPrometheusNamespace}}}
	var out []*unstructured.Unstructured
	for _, o := range []runtime.Object{role, binding} {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			panic(err) // typed RBAC objects always convert
		}
		unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}
