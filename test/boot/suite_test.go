//go:build boot

// The boot tier: the rendered MachineConfig's files and units on a Debian root filesystem,
// booted by real systemd in systemd-nspawn, rebooted, broken on purpose. Root only.
package boot_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/nmoverlay/nmoverlay/test/clusterspec"
	"github.com/nmoverlay/nmoverlay/test/kit"
	"github.com/nmoverlay/nmoverlay/test/localcluster"
)

var (
	baseRootfs string // pristine Debian root filesystem (hack/rootfs.sh)
	// The local cluster's parts: the nodes' root (hack/node-rootfs.sh), the Kubernetes
	// binaries (hack/kube-assets.sh), the images the nodes import (hack/node-images.sh).
	cluster localcluster.Options
	// nm-overlay, built from this tree (the local cluster runs the image's).
	helper string
)

func TestBoot(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "boot tier: systemd-nspawn")
}

var _ = BeforeSuite(func() {
	setup()
	DeferCleanup(kit.RemoveBinaries)
})

// setup finds the base root filesystem and builds the commands; shared by the specs
// and the benchmarks.
func setup() {
	Expect(os.Geteuid()).To(Equal(0), "the boot tier needs root")
	baseRootfs = os.Getenv("NMOVERLAY_ROOTFS")
	Expect(baseRootfs).NotTo(BeEmpty(), "NMOVERLAY_ROOTFS is unset: run make test-boot (hack/rootfs.sh builds it)")
	Expect(filepath.Join(baseRootfs, ".complete")).To(BeAnExistingFile())
	for _, tool := range []string{"systemd-nspawn", "nsenter", "unshare"} {
		_, err := exec.LookPath(tool)
		Expect(err).NotTo(HaveOccurred(), "%s is missing: run hack/install-deps.sh", tool)
	}
	cluster = clusterspec.Options("test-boot")
	helper = buildCommand("nm-overlay")
}

// buildCommand builds one of the module's commands as make build does, once per process.
func buildCommand(name string) string {
	bin, err := kit.Binary("cmd/" + name)
	Expect(err).NotTo(HaveOccurred())
	return bin
}
