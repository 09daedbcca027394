// Command demo is `make demo`: nmoverlay's main job on a fresh machine, one command. It
// starts a local control plane (kube-apiserver, etcd, kube-controller-manager,
// kube-scheduler), boots two nodes with systemd-nspawn, each with containerd, a kubelet
// and kube-proxy, installs nmoverlay with kubectl apply -k, rolls the MachineConfig out
// with a reboot per node, and walks through a policy per node, a reboot, the metrics, a
// rolled-back policy and a delete (test/demo), printing each step with its time. It leaves
// nothing running.
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
	flag.StringVar(&o.Cluster.Rootfs, "rootfs", os.Getenv("NMOVERLAY_NODE_ROOTFS"), "the nodes' Debian root filesystem (hack/node-rootfs.sh)")
	flag.StringVar(&o.Cluster.Kube, "kube", os.Getenv("KUBEBUILDER_ASSETS"), "the Kubernetes binaries (hack/kube-assets.sh)")
	flag.StringVar(&o.Cluster.Images, "images", os.Getenv("NMOVERLAY_NODE_IMAGES"), "the images the nodes import (hack/node-images.sh)")
	flag.StringVar(&o.Deploy, "deploy", "deploy", "deploy/'s kustomization directory")
	flag.StringVar(&o.Kubectl, "kubectl", os.Getenv("KUBECTL"), "kubectl binary (hack/kube-assets.sh)")
	flag.StringVar(&o.Topology, "topology", "", "file for the picture of the first node's network (SVG; default: not kept)")
	controlPlaneLog := flag.String("control-plane-log", "", "file for the control plane's log (default: discarded)")
	flag.Parse()
	o.Cluster.Nodes = []string{"worker-a", "worker-b"}
	o.Out = os.Stdout
	if *controlPlaneLog != "" {
		f, err := os.Create(*controlPlaneLog)
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
