package node

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/nmoverlay/nmoverlay/internal/monitoring"
)

// Metrics of the handler, served by controller-runtime's metrics endpoint.
var (
	applyDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "nmoverlay_apply_duration_seconds",
		Help:    "Time from the start of an apply to its commit or rollback, probes included, by result (committed, rolled_back, failed).",
		Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120},
	}, []string{"result"})
	rollbacks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "nmoverlay_rollbacks_total",
		Help: "Applies rolled back, by reason: probe (a probe failed after the apply) or engine (the backend rolled back a state that did not converge).",
	}, []string{"reason"})
	bootReconvergence = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "nmoverlay_boot_reconvergence_seconds",
		Help: "Time from the handler's start to the commit of every policy after the last new boot.",
	})
	overlayDegraded = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "nmoverlay_overlay_degraded",
		Help: "1 while the node's keyfile overlay is degraded (policies are refused), else 0.",
	})
	driftTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "nmoverlay_drift_total",
		Help: "Policies found changed outside nmoverlay, by action: reported (Failing) or reapplied.",
	}, []string{"action"})
	nnsWrites = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "nmoverlay_nodenetworkstate_writes_total",
		Help: "Writes of the node's NodeNetworkState (each one a change of its network state).",
	})
)

func init() {
	metrics.Registry.MustRegister(applyDuration, rollbacks, bootReconvergence, overlayDegraded, driftTotal, nnsWrites,
		monitoring.NetworkInterfaces, monitoring.Routes) // the peer's, of this node (Reporter)
}
