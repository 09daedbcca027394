//go:build node

// The node tier: the overlay and the nm-overlay helper against real overlayfs on tmpfs and a
// real NetworkManager over D-Bus, inside a test node's own namespaces (test/nmhost). Root only.
package node_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/kit"
	"github.com/nmoverlay/nmoverlay/test/snapshots"
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
	var err error
	helper, err = kit.Binary("cmd/nm-overlay")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(kit.RemoveBinaries)
})

// mustParse is a desired state the spec states, parsed as the handler parses policies.
func mustParse(doc string) state.State {
	GinkgoHelper()
	s, err := state.Parse([]byte(doc))
	Expect(err).NotTo(HaveOccurred())
	return s
}

// mergePolicies is the node's desired state from policies' desiredStates, as the handler
// merges them (policies named a, b, ... in order).
func mergePolicies(docs ...string) state.State {
	var sources []state.Source
	for i, doc := range docs {
		sources = append(sources, state.Source{Policy: string(rune('a' + i)), State: mustParse(doc)})
	}
	m, err := state.Merge(sources)
	Expect(err).NotTo(HaveOccurred())
	return m.State
}

// recorded counts the recordings of this process, to name them apart.
var recorded int

// record keeps what the engine reads of the node with what was just applied, when
// NMOVERLAY_RECORD_SNAPSHOTS asks for it (the engine's read-back tests use them).
func record(ctx context.Context, what string, desired state.State, nm *networkmanager.Client) {
	dir := os.Getenv(snapshots.Env)
	if dir == "" {
		return
	}
	recorded++
	name := fmt.Sprintf("node %s %02d %s", what, recorded, CurrentSpecReport().LeafNodeText)
	Expect(snapshots.Record(ctx, dir, name, desired, nm)).To(Succeed())
}
