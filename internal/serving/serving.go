// Package serving is how nmoverlay's daemons serve metrics and health checks. Metrics go
// over HTTPS behind the API server's authentication and authorization: a bearer token
// whose user may get the /metrics path scrapes, anyone else is refused (401 without a
// valid token, 403 without the permission), as OpenShift's host-network components serve
// theirs behind kube-rbac-proxy. The handler runs on the node's own network, so its ports
// are in the host-service range OpenShift reserves (9000-9999) and its health checks
// listen on loopback, where only the kubelet reaches them.
package serving

import (
	"strconv"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The handler's ports on its node (deploy/operand/handler.yaml passes the same).
const (
	HandlerMetricsPort = 9089
	HandlerHealthPort  = 9088
)

// Default addresses of the handler's metrics (every address of the node) and health
// checks (loopback), and of the controller's (its pod's own network).
var (
	HandlerMetricsAddr    = ":" + strconv.Itoa(HandlerMetricsPort)
	HandlerHealthAddr     = "127.0.0.1:" + strconv.Itoa(HandlerHealthPort)
	ControllerMetricsAddr = ":8443"
	ControllerHealthAddr  = ":8081"
)

// SecureFlagHelp explains --metrics-secure.
const SecureFlagHelp = "serve metrics over HTTPS to bearer tokens allowed to get /metrics (false: plain HTTP to anyone, for a loopback-only address)"

// Metrics is the metrics server's options: addr ("0" disables), secure as above. The
// serving certificate is self-signed unless the process is given one.
func Metrics(addr string, secure bool) metricsserver.Options {
	o := metricsserver.Options{BindAddress: addr}
	if secure {
		o.SecureServing = true
		o.FilterProvider = Authorized
	}
	return o
}

// AddPing answers /healthz and /readyz as soon as the process serves them: what the
// kubelet's probes of every nmoverlay daemon ask.
func AddPing(mgr ctrl.Manager) error {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("ping", healthz.Ping)
}
