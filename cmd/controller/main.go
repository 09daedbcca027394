// Command controller is the cluster-wide daemon (Deployment): the one writer of policy
// status, computed from enactments.
package main

import (
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nmoverlay/nmoverlay/api"
	"github.com/nmoverlay/nmoverlay/reconciler/cluster"
)

func main() {
	ctrl.SetLogger(zap.New())
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
}

func run() error {
	scheme, err := api.NewScheme()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:           scheme,
		LeaderElection:   true,
		LeaderElectionID: "nmoverlay-controller.nmstate.io",
	})
	if err != nil {
		return err
	}
	if err := (&cluster.PolicyStatus{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
