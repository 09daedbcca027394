// Package clusterspec gives Ginkgo specs the local cluster (test/localcluster): its parts
// from the environment make sets, and a cluster for one container, closed after it and
// checked to leave nothing behind.
package clusterspec

import (
	"context"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/nmoverlay/nmoverlay/test/localcluster"
)

// Options are the cluster's parts as make test-boot and make test-upgrade pass them: the
// nodes' root (hack/node-rootfs.sh), the Kubernetes binaries (hack/kube-assets.sh) and the
// images the nodes import (hack/node-images.sh).
func Options(target string) localcluster.Options {
	GinkgoHelper()
	o := localcluster.Options{Rootfs: os.Getenv("NMOVERLAY_NODE_ROOTFS"), Kube: os.Getenv("KUBEBUILDER_ASSETS"), Images: os.Getenv("NMOVERLAY_NODE_IMAGES")}
	for _, p := range []string{o.Rootfs, o.Kube, o.Images} {
		Expect(p).NotTo(BeEmpty(), "NMOVERLAY_NODE_ROOTFS, KUBEBUILDER_ASSETS or NMOVERLAY_NODE_IMAGES is unset: run make "+target)
	}
	return o
}

// Start starts a cluster of the nodes named, its control plane's log in the spec's, and
// closes it when the container that started it ends, failing if anything it started is
// left.
func Start(ctx context.Context, o localcluster.Options, nodes ...string) *localcluster.Cluster {
	GinkgoHelper()
	o.Nodes, o.Log = nodes, GinkgoWriter
	c, err := localcluster.Start(ctx, o)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		c.Close()
		Expect(c.Leftovers()).To(BeEmpty())
	})
	return c
}
