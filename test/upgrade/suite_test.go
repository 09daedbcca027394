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

	"github.com/nmoverlay/nmoverlay/test/clusterspec"
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
	cluster = clusterspec.Options("test-upgrade")
	kubectl = os.Getenv("KUBECTL")
	from.dir = os.Getenv("NMOVERLAY_UPGRADE_FROM")
	Expect(kubectl).NotTo(BeEmpty(), "KUBECTL is unset: run make test-upgrade")
	Expect(from.dir).NotTo(BeEmpty(), "NMOVERLAY_UPGRADE_FROM is unset: run make test-upgrade (hack/upgrade-from.sh builds version N)")
	Expect(filepath.Join(from.dir, ".complete")).To(BeAnExistingFile())
	image, err := os.ReadFile(filepath.Join(from.dir, "image"))
	Expect(err).NotTo(HaveOccurred())
	from.image = string(image[:len(image)-1])
	from.archive = filepath.Join(from.dir, "nmoverlay.tar")
	from.cli = filepath.Join(from.dir, "nmoverlay")
	from.deploy = filepath.Join(from.dir, "deploy")
	DeferCleanup(kit.RemoveBinaries)
})
