// Package monitoring exports kubernetes-nmstate's metrics, by its names, types and
// labels, so that a dashboard, an alert or a recording rule built on the peer reads
// nmoverlay's cluster unchanged. Each is defined by what nmoverlay does:
//
//   - the controller counts policies and enactments by their condition, and the nmstate
//     features of the desired states applied, from its own cache, on each scrape; only
//     the replica that leads exports them, so that a sum over the replicas counts once;
//   - each handler counts its own node's interfaces by type and routes by IP stack and
//     kind, each time it reads the node's state. No handler lists anything cluster-wide
//     for this.
//
// The peer serves all five from one Deployment (nmstate-metrics) that caches every
// NodeNetworkState; nmoverlay's controller caches none.
package monitoring

import (
	"context"
	"crypto/sha256"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// The peer's metrics (kubernetes-nmstate pkg/monitoring), all gauges.
var (
	FeaturesApplied = prometheus.NewDesc("kubernetes_nmstate_features_applied",
		"Number of nmstate features applied labeled by its name", []string{"name"}, nil)
	PoliciesStatus = prometheus.NewDesc("kubernetes_nmstate_policies_status",
		"Number of NodeNetworkConfigurationPolicies labeled by their status condition", []string{"status"}, nil)
	EnactmentsStatus = prometheus.NewDesc("kubernetes_nmstate_enactments_status",
		"Number of NodeNetworkConfigurationEnactments labeled by node and status condition", []string{"node", "status"}, nil)
	NetworkInterfaces = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kubernetes_nmstate_network_interfaces",
		Help: "Number of network interfaces labeled by its type"}, []string{"type", "node"})
	Routes = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kubernetes_nmstate_routes",
		Help: "Number of network routes labeled by node, IP stack and type (static/dynamic)"}, []string{"node", "ip_stack", "type"})
)

// Cluster is the controller's part: the policies' and enactments' status, and the
// features applied, counted from a cache on each scrape.
type Cluster struct {
	// Reader is the controller's cache.
	Reader client.Reader
	// Elected is closed once this replica leads (the manager's Elected()).
	Elected <-chan struct{}

	mu       sync.Mutex
	features map[[sha256.Size]byte][]string // by desired state: parsed once
}

func (c *Cluster) Describe(ch chan<- *prometheus.Desc) {
	ch <- FeaturesApplied
	ch <- PoliciesStatus
	ch <- EnactmentsStatus
}

func (c *Cluster) Collect(ch chan<- prometheus.Metric) {
	select {
	case <-c.Elected:
	default:
		return // the leader exports them
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	policies := &nmstatev1.NodeNetworkConfigurationPolicyList{}
	enactments := &v1beta1.NodeNetworkConfigurationEnactmentList{}
	if c.Reader.List(ctx, policies) != nil || c.Reader.List(ctx, enactments) != nil {
		return // the cache is not synced yet: no series rather than wrong ones
	}
	s := c.series(policies.Items, enactments.Items)
	for status, n := range s.policies {
		ch <- prometheus.MustNewConstMetric(PoliciesStatus, prometheus.GaugeValue, n, status)
	}
	for k, n := range s.enactments {
		ch <- prometheus.MustNewConstMetric(EnactmentsStatus, prometheus.GaugeValue, n, k[0], k[1])
	}
	for f := range s.features {
		ch <- prometheus.MustNewConstMetric(FeaturesApplied, prometheus.GaugeValue, 1, f)
	}
}

// series are the cluster's counts.
type series struct {
	policies   map[string]float64    // condition type → policies
	enactments map[[2]string]float64 // node, condition type → enactments
	features   map[string]bool
}

// series counts as the peer counts: a policy or an enactment by the type of its condition
// that is True (each type 0 where none is, for every node with an enactment), and each
// feature of a desired state an Available enactment applied.
func (c *Cluster) series(policies []nmstatev1.NodeNetworkConfigurationPolicy, enactments []v1beta1.NodeNetworkConfigurationEnactment) series {
	s := series{policies: map[string]float64{}, enactments: map[[2]string]float64{}, features: map[string]bool{}}
	for _, t := range shared.PolicyTypes {
		s.policies[t] = 0
	}
	for i := range policies {
		if t := active(policies[i].Status.Conditions, shared.PolicyTypes); t != "" {
			s.policies[t]++
		}
	}
	for i := range enactments {
		e := &enactments[i]
		node := e.Labels[shared.NodeLabel]
		if node == "" {
			continue
		}
		for _, t := range shared.EnactmentTypes {
			s.enactments[[2]string{node, t}] += 0
		}
		t := active(e.Status.Conditions, shared.EnactmentTypes)
		if t == "" {
			continue
		}
		s.enactments[[2]string{node, t}]++
		if t == shared.EnactmentAvailable {
			for _, f := range c.featuresOf(e.Status.DesiredState.Raw) {
				s.features[f] = true
			}
		}
	}
	return s
}

// featuresOf are the features of a desired state, parsed once per distinct state: the
// enactments of one policy mostly apply the same.
func (c *Cluster) featuresOf(raw []byte) []string {
	if len(raw) == 0 {
		return nil
	}
	key := sha256.Sum256(raw)
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.features[key]; ok {
		return f
	}
	var f []string
	if s, err := state.Parse(raw); err == nil { // a netplan policy's state is not nmstate's
		f = state.Features(s)
	}
	if c.features == nil || len(c.features) > maxRemembered {
		c.features = map[[sha256.Size]byte][]string{}
	}
	c.features[key] = f
	return f
}

// maxRemembered bounds the parsed desired states kept: past it, they are parsed again.
const maxRemembered = 4096

func active(conditions []metav1.Condition, types []string) string {
	for _, t := range types {
		if meta.IsStatusConditionTrue(conditions, t) {
			return t
		}
	}
	return ""
}

// SetNode sets the handler's node gauges from the node's current state: its interfaces
// by type, and its running routes by IP stack, static where routes.config has their
// destination and dynamic otherwise, as the peer counts them.
func SetNode(node string, s state.State) {
	NetworkInterfaces.DeletePartialMatch(prometheus.Labels{"node": node})
	Routes.DeletePartialMatch(prometheus.Labels{"node": node})
	types := map[string]float64{}
	for _, it := range s.Interfaces {
		if it.Type != "" {
			types[string(it.Type)]++
		}
	}
	for t, n := range types {
		NetworkInterfaces.WithLabelValues(t, node).Set(n)
	}
	if s.Routes == nil {
		return
	}
	static := map[string]bool{}
	for _, r := range s.Routes.Config {
		static[r.Destination] = true
	}
	counts := map[[2]string]float64{}
	for _, r := range s.Routes.Running {
		stack, kind := "ipv4", "dynamic"
		if strings.Contains(r.Destination, ":") {
			stack = "ipv6"
		}
		if static[r.Destination] {
			kind = "static"
		}
		counts[[2]string{stack, kind}]++
	}
	for k, n := range counts {
		Routes.WithLabelValues(node, k[0], k[1]).Set(n)
	}
}
