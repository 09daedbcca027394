//go:build node

// The node tier: the overlay and the nm-overlay helper against real overlayfs on tmpfs and a
// real NetworkManager over D-Bus, inside a test node's own namespaces (test/nmhost). Root only.
package node_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var helper string // the nm-overlay binary under test

func TestNode(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "node tier: overlayfs + NetworkManager")
}

var _ = BeforeSuite(func() {
	Expect(os.Geteuid()).To(Equal(0), "the node tier needs root (make test-node runs it with sudo where needed)")
	for _, tool := range []string{"NetworkManager", "nmcli", "nm-online", "dbus-daemon", "ip", "nsenter", "unshare", "systemd-tmpfiles"} {
		_, err := exec.LookPath(tool)
		Expect(err).NotTo(HaveOccurred(), "%s is missing: run hack/install-deps.sh", tool)
	}
	dir := GinkgoT().TempDir()
	helper = filepath.Join(dir, "nm-overlay")
	out, err := exec.Command("go", "build", "-o", helper, "github.com/nmoverlay/nmoverlay/cmd/nm-overlay").CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
})
