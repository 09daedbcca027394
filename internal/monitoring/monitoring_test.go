package monitoring

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nmoverlay/nmoverlay/api"
	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// The peer's metrics as kubernetes-nmstate defines them (pkg/monitoring/metrics.go at
// c97527555, read with fetch): a dashboard reads these names, types and labels.
var peer = map[string]struct {
	typ    dto.MetricType
	labels []string
}{
	"kubernetes_nmstate_features_applied":   {dto.MetricType_GAUGE, []string{"name"}},
	"kubernetes_nmstate_network_interfaces": {dto.MetricType_GAUGE, []string{"node", "type"}},
	"kubernetes_nmstate_routes":             {dto.MetricType_GAUGE, []string{"ip_stack", "node", "type"}},
	"kubernetes_nmstate_policies_status":    {dto.MetricType_GAUGE, []string{"status"}},
	"kubernetes_nmstate_enactments_status":  {dto.MetricType_GAUGE, []string{"node", "status"}},
}

func condition(t string) []metav1.Condition {
	return []metav1.Condition{{Type: t, Status: metav1.ConditionTrue}}
}

func enactment(node, policy, status, desired string) *v1beta1.NodeNetworkConfigurationEnactment {
	e := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: shared.EnactmentKey(node, policy),
		Labels: map[string]string{shared.NodeLabel: node, shared.PolicyLabel: policy}}}
	e.Status.Conditions = condition(status)
	e.Status.DesiredState = shared.State{Raw: []byte(desired)}
	return e
}

// gather is every series a registry serves, as "name{label=value,...} value", and each
// family's type and label names.
func gather(t *testing.T, collectors ...prometheus.Collector) ([]string, map[string]*dto.MetricFamily) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range collectors {
		reg.MustRegister(c)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			out = append(out, fmt.Sprintf("%s{%s} %g", f.GetName(), strings.Join(labels, ","), m.GetGauge().GetValue()))
		}
	}
	slices.Sort(out)
	return out, byName
}

func TestPeerMetrics(t *testing.T) {
	scheme, err := api.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	p1 := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "dns"}}
	p1.Status.Conditions = condition(shared.PolicyAvailable)
	p2 := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "bond"}}
	p2.Status.Conditions = condition(shared.PolicyDegraded)
	p3 := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "new"}}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(p1, p2, p3,
		enactment("w1", "dns", shared.EnactmentAvailable, `{"dns-resolver":{"config":{"server":["192.0.2.53"]}}}`),
		enactment("w2", "dns", shared.EnactmentAvailable, `{"dns-resolver":{"config":{"server":["192.0.2.53"]}}}`),
		enactment("w1", "bond", shared.EnactmentFailing, `{"routes":{"config":[]}}`), // failing: its features are not applied
	).Build()
	elected := make(chan struct{})
	cluster := &Cluster{Reader: reader, Elected: elected}

	if got, _ := gather(t, cluster); len(got) != 0 {
		t.Errorf("a replica that does not lead exports %v", got)
	}
	close(elected)

	node := "w1"
	current := state.State{
		Interfaces: []state.Interface{{Name: "eth0", Type: state.Ethernet}, {Name: "eth1", Type: state.Ethernet}, {Name: "br0", Type: state.LinuxBridge}},
		Routes: &state.Routes{Config: []state.Route{{Destination: "203.0.113.0/24"}},
			Running: []state.Route{{Destination: "203.0.113.0/24"}, {Destination: "0.0.0.0/0"}, {Destination: "fe80::/64"}, {Destination: "2001:db8::/64"}}},
	}
	SetNode(node, current)
	SetNode(node, current) // again: the same series, not more
	SetNode("w9", state.State{Interfaces: []state.Interface{{Name: "eth0", Type: state.Ethernet}}})
	SetNode("w9", state.State{}) // its interfaces gone: no series left of them

	got, families := gather(t, cluster, NetworkInterfaces, Routes)
	want := []string{
		"kubernetes_nmstate_enactments_status{node=w1,status=Aborted} 0",
		"kubernetes_nmstate_enactments_status{node=w1,status=Available} 1",
		"kubernetes_nmstate_enactments_status{node=w1,status=Failing} 1",
		"kubernetes_nmstate_enactments_status{node=w1,status=Pending} 0",
		"kubernetes_nmstate_enactments_status{node=w1,status=Progressing} 0",
		"kubernetes_nmstate_enactments_status{node=w2,status=Aborted} 0",
		"kubernetes_nmstate_enactments_status{node=w2,status=Available} 1",
		"kubernetes_nmstate_enactments_status{node=w2,status=Failing} 0",
		"kubernetes_nmstate_enactments_status{node=w2,status=Pending} 0",
		"kubernetes_nmstate_enactments_status{node=w2,status=Progressing} 0",
		"kubernetes_nmstate_features_applied{name=static-dns-name-server} 1",
		"kubernetes_nmstate_network_interfaces{node=w1,type=ethernet} 2",
		"kubernetes_nmstate_network_interfaces{node=w1,type=linux-bridge} 1",
		"kubernetes_nmstate_policies_status{status=Available} 1",
		"kubernetes_nmstate_policies_status{status=Degraded} 1",
		"kubernetes_nmstate_policies_status{status=Ignored} 0",
		"kubernetes_nmstate_policies_status{status=Progressing} 0",
		"kubernetes_nmstate_routes{ip_stack=ipv4,node=w1,type=dynamic} 1",
		"kubernetes_nmstate_routes{ip_stack=ipv4,node=w1,type=static} 1",
		"kubernetes_nmstate_routes{ip_stack=ipv6,node=w1,type=dynamic} 2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("series:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for name, p := range peer {
		f := families[name]
		if f == nil {
			t.Errorf("%s is not exported", name)
			continue
		}
		if f.GetType() != p.typ {
			t.Errorf("%s is a %v, the peer's a %v", name, f.GetType(), p.typ)
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName())
			}
			if !slices.Equal(labels, p.labels) {
				t.Errorf("%s has labels %v, the peer's %v", name, labels, p.labels)
			}
		}
	}
}
