// Command operator deploys the handler and the controller for the NMState CR named nmstate
// and removes them with it; on the platforms where nmoverlay is on by default it creates
// that CR itself.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api"
	"github.com/nmoverlay/nmoverlay/deploy"
	"github.com/nmoverlay/nmoverlay/internal/operator"
	"github.com/nmoverlay/nmoverlay/internal/serving"
)

type options struct {
	leaderElect                                                      bool
	namespace, image, metricsAddr, probeAddr, defaultMode, platforms string
	metricsSecure                                                    bool
	metricsTLS                                                       *serving.TLS
}

func main() {
	var o options
	flag.BoolVar(&o.leaderElect, "leader-elect", true, "run only while holding the lease, so that two operators never both apply")
	flag.StringVar(&o.namespace, "namespace", os.Getenv("POD_NAMESPACE"),
		"namespace the handler and the controller are deployed in, and of the lease (POD_NAMESPACE)")
	flag.StringVar(&o.image, "operand-image", "", "image of the handler and the controller (default: the image of this Pod's operator container, POD_NAME in --namespace)")
	flag.StringVar(&o.defaultMode, "default-nmstate", operator.DefaultOnPlatform,
		`"platform": create the NMState named nmstate once on the platforms of --default-platforms (OpenShift's Infrastructure); "never": only an administrator creates it`)
	flag.StringVar(&o.platforms, "default-platforms", strings.Join(operator.DefaultPlatforms, ","),
		"OpenShift platform types (Infrastructure status.platformStatus.type) where nmoverlay is on by default")
	flag.StringVar(&o.metricsAddr, "metrics-bind-address", serving.ControllerMetricsAddr, `address serving Prometheus metrics ("0" disables)`)
	flag.BoolVar(&o.metricsSecure, "metrics-secure", true, serving.SecureFlagHelp)
	o.metricsTLS = serving.TLSFlags(flag.CommandLine)
	flag.StringVar(&o.probeAddr, "health-probe-bind-address", serving.ControllerHealthAddr, `address serving /healthz and /readyz ("0" disables)`)
	printVersion := serving.VersionFlag()
	setupLogging := serving.Logging(flag.CommandLine)
	flag.Parse()
	setupLogging()
	serving.Announce("operator", *printVersion)
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "operator:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.namespace == "" {
		return fmt.Errorf("no namespace: set POD_NAMESPACE or --namespace")
	}
	if o.defaultMode != operator.DefaultOnPlatform && o.defaultMode != operator.DefaultNever {
		return fmt.Errorf("--default-nmstate: %q is neither %q nor %q", o.defaultMode, operator.DefaultOnPlatform, operator.DefaultNever)
	}
	scheme, err := api.NewScheme()
	if err != nil {
		return err
	}
	cfg := ctrl.GetConfigOrDie()
	if o.image == "" {
		if o.image, err = ownImage(cfg, scheme, o.namespace, os.Getenv("POD_NAME")); err != nil {
			return err
		}
	}
	base, err := deploy.Operand(deploy.Options{Image: o.image, Namespace: o.namespace})
	if err != nil {
		return fmt.Errorf("rendering the operand: %w", err)
	}
	ctrl.Log.Info("operand", "image", o.image, "namespace", o.namespace)
	metrics, err := serving.Metrics(o.metricsAddr, o.metricsSecure, o.metricsTLS)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         operator.CacheOptions(o.namespace, base),
		Client:                        client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		LeaderElection:                o.leaderElect,
		LeaderElectionID:              "nmoverlay-operator.nmstate.io",
		LeaderElectionNamespace:       o.namespace,
		LeaderElectionReleaseOnCancel: true,
		Metrics:                       metrics,
		HealthProbeBindAddress:        o.probeAddr,
	})
	if err != nil {
		return err
	}
	if err := serving.AddChecks(mgr, nil); err != nil {
		return err
	}
	served, err := operator.Served(mgr.GetRESTMapper(), operator.InfrastructureGVK)
	if err != nil {
		return err
	}
	apiServerServed, err := operator.Served(mgr.GetRESTMapper(), operator.APIServerGVK)
	if err != nil {
		return err
	}
	if err := (&operator.Operator{Client: mgr.GetClient(), Base: base, APIReader: mgr.GetAPIReader(),
		InfrastructureServed: served, APIServerServed: apiServerServed}).SetupWithManager(mgr); err != nil {
		return err
	}
	d := &operator.Defaulter{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespace: o.namespace,
		Mode: o.defaultMode, Platforms: strings.Split(o.platforms, ","), Served: served}
	if err := d.SetupWithManager(mgr); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

// operatorContainer is the operator's container in deploy/operator.yaml.
const operatorContainer = "operator"

// ownImage is the image the operator's own Pod runs: the one to deploy the handler and the
// controller with, so that an image set by a kustomization overlay, a registry mirror or
// a digest pin applies to all three.
func ownImage(cfg *rest.Config, scheme *runtime.Scheme, namespace, pod string) (string, error) {
	if pod == "" {
		return "", fmt.Errorf("no operand image: set --operand-image, or POD_NAME to read this Pod's")
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return "", err
	}
	p := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: pod}, p); err != nil {
		return "", fmt.Errorf("reading this Pod's image: %w", err)
	}
	for _, ct := range p.Spec.Containers {
		if ct.Name == operatorContainer {
			return ct.Image, nil
		}
	}
	return "", fmt.Errorf("pod %s/%s has no container %q", namespace, pod, operatorContainer)
}
