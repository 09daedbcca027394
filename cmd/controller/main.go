// Command controller is the cluster-wide daemon (Deployment): it grants rollout slots on the
// nodes' enactments and is the one writer of policy status, both computed from enactments.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nmoverlay/nmoverlay/api"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/internal/cluster"
	"github.com/nmoverlay/nmoverlay/internal/monitoring"
	"github.com/nmoverlay/nmoverlay/internal/rebootgate"
	"github.com/nmoverlay/nmoverlay/internal/serving"
)

func main() {
	leaderElect := flag.Bool("leader-elect", true, "run only while holding the lease, so two replicas never both write policy status")
	leaseNamespace := flag.String("leader-election-namespace", os.Getenv("POD_NAMESPACE"),
		"namespace of the lease (POD_NAMESPACE; required out of cluster with --leader-elect)")
	metricsAddr := flag.String("metrics-bind-address", serving.ControllerMetricsAddr, `address serving Prometheus metrics ("0" disables)`)
	metricsSecure := flag.Bool("metrics-secure", true, serving.SecureFlagHelp)
	metricsTLS := serving.TLSFlags(flag.CommandLine)
	probeAddr := flag.String("health-probe-bind-address", serving.ControllerHealthAddr, `address serving /healthz and /readyz ("0" disables)`)
	// A rollout costs the controller one write per node-policy pair (the grant): at
	// client-go's default 20 per second, 200 nodes x 20 policies took 3 min 48 s for that
	// alone. The API server's priority and fairness still applies.
	qps := flag.Float64("kube-api-qps", 200, "requests per second to the API server the controller may send (client-go's rate limiter)")
	burst := flag.Int("kube-api-burst", 400, "burst of requests to the API server above --kube-api-qps")
	var gate gateFlags
	flag.StringVar(&gate.mode, "reboot-gate", nmstatev1.RebootGateNone, "after a node reboots, "+nmstatev1.RebootGateTaint+
		" taints it "+rebootgate.TaintKey+":NoSchedule until its policies are Available in the new boot (the NMState's spec.rebootGate); "+
		nmstatev1.RebootGateNone+" does not")
	flag.DurationVar(&gate.timeout, "reboot-gate-timeout", rebootgate.DefaultTimeout,
		"how long the reboot gate may hold a node whose policies are not all Available in its new boot")
	printVersion := serving.VersionFlag()
	setupLogging := serving.Logging(flag.CommandLine)
	flag.Parse()
	setupLogging()
	serving.Announce("controller", *printVersion)
	cfg := ctrl.GetConfigOrDie()
	cfg.QPS, cfg.Burst = float32(*qps), *burst
	if gate.mode != nmstatev1.RebootGateTaint && gate.mode != nmstatev1.RebootGateNone {
		fmt.Fprintf(os.Stderr, "controller: --reboot-gate %q: not %s or %s\n", gate.mode, nmstatev1.RebootGateTaint, nmstatev1.RebootGateNone)
		os.Exit(2)
	}
	metrics, err := serving.Metrics(*metricsAddr, *metricsSecure, metricsTLS)
	if err == nil {
		err = run(cfg, *leaderElect, *leaseNamespace, metrics, *probeAddr, gate)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
}

// gateFlags are the reboot gate's flags.
type gateFlags struct {
	mode    string
	timeout time.Duration
}

func run(cfg *rest.Config, leaderElect bool, leaseNamespace string, metrics metricsserver.Options, probeAddr string, gate gateFlags) error {
	scheme, err := api.NewScheme()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		LeaderElection:          leaderElect,
		LeaderElectionID:        "nmoverlay-controller.nmstate.io",
		LeaderElectionNamespace: leaseNamespace,
		// A new leader starts only after the old one has stopped writing.
		LeaderElectionReleaseOnCancel: true,
		Metrics:                       metrics,
		HealthProbeBindAddress:        probeAddr,
	})
	if err != nil {
		return err
	}
	if err := serving.AddChecks(mgr, nil); err != nil {
		return err
	}
	// kubernetes-nmstate's policy, enactment and feature gauges, from this cache.
	ctrlmetrics.Registry.MustRegister(&monitoring.Cluster{Reader: mgr.GetCache(), Elected: mgr.Elected()})
	if err := (&cluster.PolicyController{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Events: mgr.GetEventRecorder("nmoverlay-controller")}).SetupWithManager(mgr); err != nil {
		return err
	}
	// Off, the gate costs nothing: what an earlier gate left is the operator's to clear.
	if gate.mode == nmstatev1.RebootGateTaint {
		if err := (&cluster.RebootGateController{Client: mgr.GetClient(), Events: mgr.GetEventRecorder("nmoverlay-controller"),
			Timeout: gate.timeout}).SetupWithManager(mgr); err != nil {
			return err
		}
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
