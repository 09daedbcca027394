package operator

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/deploy"
)

func TestDesiredByEnvironment(t *testing.T) {
	base, err := deploy.Operand(deploy.Options{Image: "registry.example/nmoverlay:t", Namespace: "ns1"})
	if err != nil {
		t.Fatal(err)
	}
	monitoring := withMonitoring(base)
	openShift := withMonitoring(base)
	openShift.OpenShift = true
	sno := openShift
	sno.SingleNode = true
	modern := monitoring
	modern.TLS = TLSProfiles["Modern"]
	plain := Environment{TLS: TLSProfiles[DefaultTLSProfile]}
	openShiftNoMonitoring := plain
	openShiftNoMonitoring.OpenShift = true

	const certDir = "--metrics-cert-dir=/etc/nmoverlay/metrics-tls"
	for _, tc := range []struct {
		name string
		env  Environment
		// kinds present (each kind name, and "Role nmoverlay-prometheus" for OpenShift's)
		want, notWant []string
		// the ServiceMonitors' tlsConfig, as "k=v" sorted
		scrapeTLS string
		args      []string // in both daemons' args
		noArgs    []string // in neither
	}{
		{name: "no prometheus-operator: Services, no ServiceMonitor nor PrometheusRule", env: plain,
			want: []string{"Service", "PodDisruptionBudget", "NetworkPolicy"}, notWant: []string{"ServiceMonitor", "PrometheusRule", "Role nmoverlay-prometheus"},
			args: []string{"--tls-min-version=VersionTLS12"}, noArgs: []string{certDir}},
		{name: "prometheus-operator: scraped with the self-signed certificates", env: monitoring,
			want: []string{"ServiceMonitor", "PrometheusRule"}, notWant: []string{"Role nmoverlay-prometheus"},
			scrapeTLS: "insecureSkipVerify=true", noArgs: []string{certDir}},
		{name: "OpenShift: the service CA's certificates, verified; the platform Prometheus may discover", env: openShift,
			want:      []string{"ServiceMonitor", "PrometheusRule", "PodDisruptionBudget", "Role nmoverlay-prometheus", "RoleBinding nmoverlay-prometheus"},
			scrapeTLS: "caFile=" + serviceCAFile + " serverName=nmoverlay-%s-metrics.ns1.svc", args: []string{certDir}},
		{name: "OpenShift without its monitoring: no scraping RBAC", env: openShiftNoMonitoring,
			notWant: []string{"ServiceMonitor", "Role nmoverlay-prometheus"}, args: []string{certDir}},
		{name: "single-node OpenShift: no PodDisruptionBudget", env: sno,
			want: []string{"ServiceMonitor"}, notWant: []string{"PodDisruptionBudget"}},
		{name: "the Modern profile: TLS 1.3 alone, no suites to choose", env: modern,
			args: []string{"--tls-min-version=VersionTLS13"}, noArgs: []string{"--tls-min-version=VersionTLS12"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Desired(base, &nmstatev1.NMState{ObjectMeta: metav1.ObjectMeta{Name: "nmstate", UID: "u-1"}}, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			has := map[string]bool{}
			for _, o := range got {
				has[o.GetKind()] = true
				has[o.GetKind()+" "+o.GetName()] = true
				if o.GetNamespace() != "ns1" && o.GetKind() != "ClusterRole" && o.GetKind() != "ClusterRoleBinding" &&
					!strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") {
					t.Errorf("%s %s in namespace %q", o.GetKind(), o.GetName(), o.GetNamespace())
				}
			}
			for _, k := range tc.want {
				if !has[k] {
					t.Errorf("no %s", k)
				}
			}
			for _, k := range tc.notWant {
				if has[k] {
					t.Errorf("%s applied", k)
				}
			}
			for _, o := range got {
				switch o.GetKind() {
				case "ServiceMonitor":
					eps, _, _ := unstructured.NestedSlice(o.Object, "spec", "endpoints")
					for _, e := range eps {
						var kv []string
						for k, v := range e.(map[string]any)["tlsConfig"].(map[string]any) {
							kv = append(kv, k+"="+fmt.Sprint(v))
						}
						slices.Sort(kv)
						want := strings.ReplaceAll(tc.scrapeTLS, "%s", strings.TrimPrefix(o.GetName(), "nmoverlay-"))
						if tc.scrapeTLS != "" && strings.Join(kv, " ") != want {
							t.Errorf("%s tlsConfig %v, want %s", o.GetName(), kv, want)
						}
					}
				case "RoleBinding":
					if o.GetName() == PrometheusRBAC {
						subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
						if len(subjects) != 1 || subjects[0].(map[string]any)["namespace"] != "openshift-monitoring" || subjects[0].(map[string]any)["name"] != "prometheus-k8s" {
							t.Errorf("subjects %v", subjects)
						}
					}
				}
			}
			for kind, name := range map[string]string{"DaemonSet": "handler", "Deployment": "controller"} {
				args := podSpec(t, got, kind).Containers[0].Args
				for _, a := range tc.args {
					if !slices.Contains(args, a) {
						t.Errorf("%s args %v lack %s", name, args, a)
					}
				}
				for _, a := range tc.noArgs {
					if slices.Contains(args, a) {
						t.Errorf("%s args %v have %s", name, args, a)
					}
				}
			}
		})
	}
}
