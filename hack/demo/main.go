// Command demo is `make demo`: nmoverlay's main job on a fresh machine, one command. It
// starts a local control plane (kube-apiserver and etcd), boots two nodes with
// systemd-nspawn from a Debian root on which the rendered MachineConfig was laid down
// (nm-overlay and the handler running as units, as on a cluster node), runs the
// controller, and walks through a policy, a reboot, a rolled-back policy and a delete
// (test/demo), printing each step with its time. It leaves nothing running.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nmoverlay/nmoverlay/test/demo"
)

func main() {
	var o demo.Options
	flag.StringVar(&o.Cluster.Rootfs, "rootfs", os.Getenv("NMOVERLAY_ROOTFS"), "Debian root filesystem for the nodes (hack/rootfs.sh)")
	flag.StringVar(&o.Cluster.CRDs, "crds", "deploy/crds", "the CRDs to install")
	flag.StringVar(&o.Cluster.Binaries.Helper, "helper", "bin/nm-overlay", "nm-overlay binary for the nodes")
	flag.StringVar(&o.Cluster.Binaries.Handler, "handler", "bin/handler", "handler binary for the nodes")
	flag.StringVar(&o.Cluster.Binaries.Controller, "controller", "bin/controller", "controller binary")
	flag.StringVar(&o.Kubectl, "kubectl", os.Getenv("KUBECTL"), "kubectl binary (hack/kubectl.sh)")
	controllerLog := flag.String("controller-log", "", "file for the controller's log (default: discarded)")
	flag.Parse()
	o.Cluster.Nodes = []string{"worker-a", "worker-b"}
	o.Out = os.Stdout
	if *controllerLog != "" {
		f, err := os.Create(*controllerLog)
		if err != nil {
			fmt.Fprintln(os.Stderr, "demo:", err)
			os.Exit(2)
		}
		defer f.Close()
		o.Cluster.Log = f
	}
	// Ctrl-C still takes everything down (Run cleans up when its steps return).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	_, err := demo.Run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "\ndemo failed:", err)
		os.Exit(1)
	}
	fmt.Printf("\ndemo done in %s\n", time.Since(start).Round(time.Second))
}
