// Package serving is how nmoverlay's daemons serve metrics and health checks. Metrics go
// over HTTPS behind the API server's authentication and authorization: a bearer token
// whose user may get the /metrics path scrapes, anyone else is refused (401 without a
// valid token, 403 without the permission), as OpenShift's host-network components serve
// theirs behind kube-rbac-proxy. The handler runs on the node's own network, so its ports
// are in the host-service range OpenShift reserves (9000-9999) and its health checks
// listen on loopback, where only the kubelet reaches them.
package serving

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
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

// Metrics is the metrics server's options: addr ("0" disables), secure as above, over t's
// TLS (nil: the defaults of TLSFlags).
func Metrics(addr string, secure bool, t *TLS) (metricsserver.Options, error) {
	o := metricsserver.Options{BindAddress: addr}
	if !secure {
		return o, nil
	}
	if t == nil {
		t = defaultTLS()
	}
	cfg, err := t.config()
	if err != nil {
		return o, err
	}
	o.SecureServing = true
	o.FilterProvider = Authorized
	o.TLSOpts = append(o.TLSOpts, cfg)
	if t.CertDir != "" {
		o.CertDir, o.CertName, o.KeyName = t.CertDir, "tls.crt", "tls.key"
	}
	return o, nil
}

// AddChecks answers the kubelet's probes: /healthz as soon as the process serves it (a
// ping: a restart would not cure what the other checks see), /readyz once the manager's
// caches have synced and every check in ready passes.
func AddChecks(mgr ctrl.Manager, ready map[string]healthz.Checker) error {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("caches", CachesSynced(mgr.GetCache())); err != nil {
		return err
	}
	for name, check := range ready {
		if err := mgr.AddReadyzCheck(name, check); err != nil {
			return err
		}
	}
	return nil
}

// CachesSynced passes once every informer the cache has started has synced.
func CachesSynced(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), 100*time.Millisecond)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("the caches have not synced")
		}
		return nil
	}
}

// Answering passes while ping succeeds, and while it has failed for less than grace: a
// dependency that restarts (NetworkManager takes a second or two) does not take the pod
// out of its Service, one that stays gone does. now is time.Now, but in tests.
func Answering(what string, ping func(context.Context) error, grace time.Duration, now func() time.Time) healthz.Checker {
	var mu sync.Mutex
	var failingSince time.Time
	unready := false
	log := ctrl.Log.WithName("readiness")
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
		defer cancel()
		err := ping(ctx)
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			if unready {
				log.Info("ready again", "dependency", what, "gone", now().Sub(failingSince).Round(time.Second).String())
			}
			failingSince, unready = time.Time{}, false
			return nil
		}
		if failingSince.IsZero() {
			failingSince = now()
		}
		if gone := now().Sub(failingSince); gone >= grace {
			err = fmt.Errorf("%s has not answered for %s: %w", what, gone.Round(time.Second), err)
			if !unready {
				log.Info("not ready", "dependency", what, "reason", err.Error()) // once: the probe asks again and again
			}
			unready = true
			return err
		}
		return nil
	}
}
