package kit

import (
	"context"
	"sync"
	"time"

	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nmoverlay/nmoverlay/internal/cluster"
)

// StartController runs the cluster controller (rollout slots and policy status, as
// cmd/controller runs it, without leader election) in this process until stop is called.
// Handlers apply a new generation only once it grants them a slot. The reboot gate is off.
func StartController(cfg *rest.Config, scheme *kruntime.Scheme) (stop func() error, err error) {
	return StartControllerWith(cfg, scheme, Gate{})
}

// Gate is the controller's reboot gate (cmd/controller's --reboot-gate and
// --reboot-gate-timeout): off unless On.
type Gate struct {
	On      bool
	Timeout time.Duration
	// Lease, when set, runs the controller with leader election on this lease in the
	// default namespace, as cmd/controller runs with --leader-elect.
	Lease string
}

// StartControllerWith runs the cluster controller (StartController) with the reboot gate
// as gate says.
func StartControllerWith(cfg *rest.Config, scheme *kruntime.Scheme, gate Gate) (stop func() error, err error) {
	skipNameValidation := true // a process may start it again after stopping it
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller:     config.Controller{SkipNameValidation: &skipNameValidation},
		LeaderElection: gate.Lease != "", LeaderElectionID: gate.Lease, LeaderElectionNamespace: "default"})
	if err != nil {
		return nil, err
	}
	events := mgr.GetEventRecorder("nmoverlay-controller")
	if err := (&cluster.PolicyController{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Events: events}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if gate.On {
		if err := (&cluster.RebootGateController{Client: mgr.GetClient(), Events: events, Timeout: gate.Timeout}).SetupWithManager(mgr); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	// Safe to call more than once: each call returns what the manager returned.
	return sync.OnceValue(func() error { cancel(); return <-done }), nil
}

// StartController runs the cluster controller against this API server (StartController).
func (a *API) StartController() (stop func() error, err error) {
	return StartController(a.Config, a.Scheme)
}
