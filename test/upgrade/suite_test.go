//go:build upgrade

// The upgrade tier: nmoverlay upgraded from an earlier version (N, a fixed commit of this
// repository, hack/upgrade-from.sh) to this tree's (N+1) and back, on the local cluster
// with kubelets, with policies in force. Root only.
package upgrade_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/nmoverlay/nmoverlay/test/kit"
	"github.com/nmoverlay/nmoverlay/test/localcluster"
)

var (
	// The local cluster's parts, as the boot tier's (make test-boot).
	cluster localcluster.Options
	kubectl string
	// from is version N as hack/upgrade-from.sh built it.
	from struct{ dir, image, archive, cli, deploy string }
)

func TestUpgrade(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "upgrade tier: version N to this tree and back, on the local cluster")
}

var _ = BeforeSuite(func() {
	Expect(os.Geteuid()).To(Equal(0), "the upgrade tier needs root")
	cluster = localcluster.Options{Rootfs: os.Getenv("NMOVERLAY_NODE_ROOTFS"), Kube: os.Getenv("KUBEBUILDER_ASSETS"), Images: os.Getenv("NMOVERLAY_NODE_IMAGES")}
	kubectl = os.Getenv("KUBECTL")
	from.dir = os.Getenv("NMOVERLAY_UPGRADE_FROM")
	for _, p := range []string{cluster.Rootfs, cluster.Kube, cluster.Images, kubectl, from.dir} {
		Expect(p).NotTo(BeEmpty(), "NMOVERLAY_NODE_ROOTFS, KUBEBUILDER_ASSETS, NMOVERLAY_NODE_IMAGES, KUBECTL or NMOVERLAY_UPGRADE_FROM is unset: run make test-upgrade")
	}
	Expect(filepath.Join(from.dir, ".complete")).To(BeAnExistingFile())
	image, err := os.ReadFile(filepath.Join(from.dir, "image"))
	Expect(err).NotTo(HaveOccurred())
	from.image = string(image[:len(image)-1])
	from.archive = filepath.Join(from.dir, "nmoverlay.tar")
	from.cli = filepath.Join(from.dir, "nmoverlay")
	from.deploy = filepath.Join(from.dir, "deploy")
	DeferCleanup(kit.RemoveBinaries)
})
