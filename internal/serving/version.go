package serving

import (
	"flag"
	"fmt"
	"os"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/nmoverlay/nmoverlay/internal/version"
)

// BuildInfoMetric is the constant gauge that says which build a daemon runs, as
// Kubernetes' own components export theirs: 1, with the version in its labels.
const BuildInfoMetric = "nmoverlay_build_info"

// VersionFlag adds --version to the daemon's flags; Announce prints the version and exits
// when it is set.
func VersionFlag() *bool {
	return flag.Bool("version", false, "print the version, the commit it was built from and Go's release, and exit")
}

// Announce starts a daemon's life with its version: --version prints it and exits; else
// the first log line names it and BuildInfoMetric exports it on /metrics.
func Announce(component string, printOnly bool) {
	if printOnly {
		fmt.Println(version.String(component))
		os.Exit(0)
	}
	ctrl.Log.Info("starting", "component", component, "version", version.Version, "revision", version.Revision, "go", runtime.Version())
	metrics.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: BuildInfoMetric,
		Help: "1, labelled with the build this process runs: its component, nmoverlay's version, the commit and Go's release.",
		ConstLabels: prometheus.Labels{"component": component, "version": version.Version, "revision": version.Revision,
			"goversion": runtime.Version()},
	}, func() float64 { return 1 }))
}
