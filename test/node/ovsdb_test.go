//go:build node

package node_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/nmoverlay/nmoverlay/internal/overlay"
	"github.com/nmoverlay/nmoverlay/internal/ovsdb"
)

// The bridge mappings client against Debian's ovsdb-server with Open vSwitch's own schema:
// a private server on a database and socket of its own. ovs-vsctl, the administrator's
// tool, writes what others write and reads what nmoverlay wrote.
var _ = Describe("OVN bridge mappings in a real ovsdb-server", Ordered, func() {
	var (
		ctx  = context.Background()
		sock string
		c    *ovsdb.Client
	)
	vsctl := func(args ...string) string {
		out, err := exec.Command("ovs-vsctl", append([]string{"--db=unix:" + sock, "--no-wait"}, args...)...).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		return strings.TrimSpace(string(out))
	}
	externalID := func(key string) string {
		out, err := exec.Command("ovs-vsctl", "--db=unix:"+sock, "--if-exists", "get", "Open_vSwitch", ".", "external_ids:"+key).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		return strings.Trim(strings.TrimSpace(string(out)), `"`)
	}
	mappings := func(s string) ovsdb.Mappings {
		m, err := ovsdb.ParseMappings(s)
		Expect(err).NotTo(HaveOccurred())
		return m
	}

	BeforeAll(func() {
		for _, tool := range []string{"ovsdb-tool", "ovsdb-server", "ovs-vsctl"} {
			_, err := exec.LookPath(tool)
			Expect(err).NotTo(HaveOccurred(), "%s is missing: run hack/install-deps.sh", tool)
		}
		dir := GinkgoT().TempDir()
		db, socket := filepath.Join(dir, "conf.db"), filepath.Join(dir, "db.sock")
		out, err := exec.Command("ovsdb-tool", "create", db, "/usr/share/openvswitch/vswitch.ovsschema").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		server := exec.Command("ovsdb-server", db, "--remote=punix:"+socket, "--unixctl="+filepath.Join(dir, "ctl"),
			"--no-chdir", "--log-file="+filepath.Join(dir, "ovsdb-server.log"), "--pidfile="+filepath.Join(dir, "pid"))
		Expect(server.Start()).To(Succeed())
		DeferCleanup(func() { _ = server.Process.Kill(); _ = server.Wait() })
		Eventually(func() error { _, err := os.Stat(socket); return err }, "10s", "50ms").Should(Succeed())
		sock = socket
		vsctl("init")
		vsctl("set", "Open_vSwitch", ".", "external_ids:system-id=node-1", "external_ids:ovn-bridge-mappings=physnet:br-ex")
		c, err = ovsdb.Dial(ctx, socket)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.Close)
	})

	It("adds a mapping next to another's, marks it as nmoverlay's, and leaves the rest of external_ids alone", func() {
		prev, err := c.Apply(ctx, mappings("localnet1:ovs-br1"), nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(prev.All.String()).To(Equal("physnet:br-ex"))
		Expect(externalID(ovsdb.BridgeMappingsKey)).To(Equal("localnet1:ovs-br1,physnet:br-ex"))
		Expect(externalID(ovsdb.OwnedMappingsKey)).To(Equal("localnet1:ovs-br1"))
		Expect(externalID("system-id")).To(Equal("node-1"))
	})

	It("undoes an apply with what it returned, as a rollback does", func() {
		prev, err := c.Apply(ctx, mappings("localnet1:ovs-br2,localnet2:ovs-br1"), nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(externalID(ovsdb.BridgeMappingsKey)).To(Equal("localnet1:ovs-br2,localnet2:ovs-br1,physnet:br-ex"))
		_, err = c.Apply(ctx, prev.Owned, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(externalID(ovsdb.BridgeMappingsKey)).To(Equal("localnet1:ovs-br1,physnet:br-ex"))
		Expect(externalID(ovsdb.OwnedMappingsKey)).To(Equal("localnet1:ovs-br1"))
	})

	It("refuses to remove or move a mapping it did not make, changing nothing", func() {
		_, err := c.Apply(ctx, mappings("localnet1:ovs-br1"), []string{"physnet"})
		Expect(err).To(MatchError(ContainSubstring(`localnet "physnet" (bridge "br-ex") was not mapped by nmoverlay`)))
		_, err = c.Apply(ctx, mappings("localnet1:ovs-br1,physnet:ovs-br1"), nil)
		Expect(err).To(MatchError(ContainSubstring(`mapped to bridge "br-ex" outside nmoverlay`)))
		Expect(externalID(ovsdb.BridgeMappingsKey)).To(Equal("localnet1:ovs-br1,physnet:br-ex"))
	})

	It("keeps the keys others set in external_ids since its last write", func() {
		vsctl("set", "Open_vSwitch", ".", "external_ids:hostname=node-1.example")
		_, err := c.Apply(ctx, mappings("localnet1:ovs-br1,localnet3:ovs-br3"), nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(externalID("hostname")).To(Equal("node-1.example"))
		Expect(externalID("system-id")).To(Equal("node-1"))
		Expect(externalID(ovsdb.BridgeMappingsKey)).To(Equal("localnet1:ovs-br1,localnet3:ovs-br3,physnet:br-ex"))
	})

	It("removes at boot (nm-overlay setup) only the mappings it made, whatever others added since", func() {
		vsctl("set", "Open_vSwitch", ".", `external_ids:ovn-bridge-mappings="localnet1:ovs-br1,localnet3:ovs-br3,physnet:br-ex,late:br-late"`)
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		removed, err := overlay.ClearBridgeMappings(ctx, sock)
		Expect(err).NotTo(HaveOccurred())
		Expect(removed.String()).To(Equal("localnet1:ovs-br1,localnet3:ovs-br3"))
		Expect(externalID(ovsdb.BridgeMappingsKey)).To(Equal("late:br-late,physnet:br-ex"))
		Expect(externalID(ovsdb.OwnedMappingsKey)).To(Equal(""))
	})
})
