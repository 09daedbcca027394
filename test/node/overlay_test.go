//go:build node

package node_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/overlay"
	"github.com/nmoverlay/nmoverlay/internal/paths"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/nmhost"
)

// Persistent profiles, as MCO would have written them into the lower dir.
var lowerProfiles = map[string]string{
	"persist0.nmconnection": keyfile("persist0", "7d8a1f4e-1111-4c1e-9b1a-000000000000", "veth0", "192.0.2.10/24"),
	"persist1.nmconnection": keyfile("persist1", "7d8a1f4e-1111-4c1e-9b1a-000000000001", "veth1", "198.51.100.10/24"),
}

func keyfile(id, uuid, ifname, addr string) string {
	return "[connection]\nid=" + id + "\nuuid=" + uuid + "\ntype=ethernet\ninterface-name=" + ifname +
		"\n\n[ipv4]\nmethod=manual\naddress1=" + addr + "\n\n[ipv6]\nmethod=disabled\n"
}

var _ = Describe("the keyfile overlay on a node", Ordered, func() {
	var (
		n      *nmhost.Node
		ctx    context.Context
		layout = paths.DefaultLayout()
	)

	// helperRun runs nm-overlay inside the node; it returns stdout and the exit code.
	helperRun := func(args ...string) (string, int) {
		cmd := n.Command(ctx, helper, args...)
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); ok {
			GinkgoWriter.Printf("nm-overlay %v: exit %d: %s\n", args, ee.ExitCode(), ee.Stderr)
			return string(out), ee.ExitCode()
		}
		Expect(err).NotTo(HaveOccurred())
		return string(out), 0
	}
	verify := func() overlay.Report {
		out, _ := helperRun("verify", "-o", "json")
		var r overlay.Report
		Expect(json.Unmarshal([]byte(out), &r)).To(Succeed(), out)
		return r
	}
	nmcli := func(args ...string) string {
		out, err := n.Run(ctx, "nmcli", args...)
		Expect(err).NotTo(HaveOccurred())
		return strings.TrimSpace(out)
	}
	// nodeFile is the path of a file in the node's /run, read from the host through the holder.
	upperFile := func(name string) string { return filepath.Join(layout.Upper(), name) }
	statInNode := func(path string) (os.FileInfo, error) {
		// /proc/<pid>/root reaches into the node's mount namespace.
		return os.Lstat(n.PathInNode(path))
	}
	// bootNode is a boot up to NetworkManager: tmpfiles, nm-overlay setup (its exit code is
	// returned), NetworkManager with the environment file.
	bootNode := func() int {
		Expect(n.Boot(ctx)).To(Succeed())
		_, code := helperRun("setup")
		Expect(n.StartNM(ctx, layout.NMEnvFile())).To(Succeed(), n.NMLog())
		return code
	}

	BeforeAll(func() {
		ctx = context.Background()
		var err error
		n, err = nmhost.New("overlay")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(n.Close)
		for name, content := range lowerProfiles {
			Expect(os.WriteFile(filepath.Join(n.Lower(), name), []byte(content), 0o600)).To(Succeed())
		}
		// What the MachineConfig puts on the host.
		Expect(os.WriteFile(filepath.Join(n.ConfD(), paths.KeyfileDropIn), []byte(layout.KeyfileDropInContent()), 0o644)).To(Succeed())
		tmpfiles := filepath.Join(n.Dir, "nmoverlay-tmpfiles.conf")
		Expect(os.WriteFile(tmpfiles, []byte(layout.TmpfilesContent()), 0o644)).To(Succeed())
		nics := withNICs(ctx, "veth0", "veth1", "veth2")
		n.BootSetup = func(n *nmhost.Node) error {
			if err := nics(n); err != nil {
				return err
			}
			// systemd-tmpfiles-setup.service's part of the boot.
			_, err := n.Run(ctx, "systemd-tmpfiles", "--create", tmpfiles)
			return err
		}
	})

	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Println(n.NMLog())
		}
	})

	It("boots degraded until setup verifies, then NetworkManager loads the persistent profiles through the merged dir", func() {
		Expect(n.Boot(ctx)).To(Succeed())
		marker, err := n.ReadFile(ctx, layout.DegradedMarker())
		Expect(err).NotTo(HaveOccurred(), "tmpfiles must create the degraded marker at boot")
		Expect(marker).To(ContainSubstring("has not verified"))

		out, code := helperRun("setup")
		Expect(code).To(Equal(0), out)
		_, err = statInNode(layout.DegradedMarker())
		Expect(os.IsNotExist(err)).To(BeTrue(), "setup removes the marker")

		Expect(n.StartNM(ctx, layout.NMEnvFile())).To(Succeed(), n.NMLog())
		Expect(nmcli("-g", "connection.id,GENERAL.STATE", "connection", "show", "persist0")).To(ContainSubstring("activated"))
		Expect(profileFile(n, "persist0")).To(Equal(filepath.Join(layout.Merged(), "persist0.nmconnection")))
		Expect(nmcli("-g", "IP4.ADDRESS", "device", "show", "veth0")).To(Equal("192.0.2.10/24"))

		r := verify()
		Expect(r.OK).To(BeTrue(), "%+v", r.Failed())
		Expect(checkNamed(r, overlay.CheckNMRunning).Detail).To(ContainSubstring("loaded 2 profiles from " + layout.Merged()))
	})

	It("agrees with NetworkManager --print-config on the effective keyfile path", func() {
		for _, tag := range []string{"", paths.EnableTag} {
			cmd := n.Command(ctx, "env", "NM_CONFIG_ENABLE_TAG="+tag, "NetworkManager", "--print-config")
			out, err := cmd.Output()
			Expect(err).NotTo(HaveOccurred())
			want := nmhost.KeyfilePathFromPrintConfig(string(out), paths.NMDefaultKeyfile)
			got, err := inNodeEffectivePath(n, tag)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(Equal(want), "tag %q", tag)
		}
	})

	It("writes a profile added through NetworkManager only to the upper layer", func() {
		nmcli("connection", "add", "type", "ethernet", "ifname", "veth2", "con-name", "eph2",
			"ipv4.method", "manual", "ipv4.addresses", "203.0.113.1/24", "ipv6.method", "disabled")
		Expect(nmcli("-g", "IP4.ADDRESS", "device", "show", "veth2")).To(Equal("203.0.113.1/24"))
		info, err := statInNode(upperFile("eph2.nmconnection"))
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().IsRegular()).To(BeTrue())
		_, err = os.Stat(filepath.Join(n.Lower(), "eph2.nmconnection"))
		Expect(os.IsNotExist(err)).To(BeTrue(), "nothing may reach the persistent dir")
	})

	It("copies a modified persistent profile up and leaves the lower copy intact", func() {
		nmcli("connection", "modify", "persist0", "ipv4.addresses", "192.0.2.11/24")
		nmcli("connection", "up", "persist0")
		Expect(nmcli("-g", "IP4.ADDRESS", "device", "show", "veth0")).To(Equal("192.0.2.11/24"))
		up, err := os.ReadFile(n.PathInNode(upperFile("persist0.nmconnection")))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(up)).To(ContainSubstring("192.0.2.11/24"))
		low, err := os.ReadFile(filepath.Join(n.Lower(), "persist0.nmconnection"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(low)).To(Equal(lowerProfiles["persist0.nmconnection"]))
	})

	It("hides a deleted persistent profile with a whiteout", func() {
		nmcli("connection", "delete", "persist1")
		info, err := statInNode(upperFile("persist1.nmconnection"))
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode() & os.ModeCharDevice).NotTo(BeZero())
		Expect(info.Sys().(*syscall.Stat_t).Rdev).To(BeZero())
		low, err := os.ReadFile(filepath.Join(n.Lower(), "persist1.nmconnection"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(low)).To(Equal(lowerProfiles["persist1.nmconnection"]))
	})

	It("reports the added, modified and deleted profiles in status", func() {
		out, code := helperRun("status", "-o", "json")
		Expect(code).To(Equal(0))
		var changes []overlay.ProfileChange
		Expect(json.Unmarshal([]byte(out), &changes)).To(Succeed())
		byFile := map[string]overlay.ProfileChange{}
		for _, c := range changes {
			byFile[c.File] = c
		}
		Expect(byFile).To(HaveLen(3))
		Expect(byFile["eph2.nmconnection"]).To(MatchFields(overlay.Added, "eph2", "veth2"))
		Expect(byFile["persist0.nmconnection"]).To(MatchFields(overlay.Modified, "persist0", "veth0"))
		Expect(byFile["persist1.nmconnection"]).To(MatchFields(overlay.Deleted, "persist1", "veth1"))

		text, _ := helperRun("status")
		Expect(text).To(MatchRegexp(`added\s+eph2.nmconnection\s+eph2\s+ethernet\s+veth2`))
		Expect(text).To(MatchRegexp(`deleted\s+persist1.nmconnection\s+persist1`))
	})

	It("resets: drops every ephemeral change and NetworkManager gets the persistent profiles back", func() {
		out, code := helperRun("reset", "-o", "json")
		Expect(code).To(Equal(0), out)
		var dropped []overlay.ProfileChange
		Expect(json.Unmarshal([]byte(out), &dropped)).To(Succeed())
		Expect(dropped).To(HaveLen(3))

		entries, err := os.ReadDir(n.PathInNode(layout.Upper()))
		Expect(err).NotTo(HaveOccurred())
		Expect(entries).To(BeEmpty())
		Expect(nmcli("-g", "ipv4.addresses", "connection", "show", "persist0")).To(Equal("192.0.2.10/24"))
		Expect(nmcli("-g", "ipv4.addresses", "connection", "show", "persist1")).To(Equal("198.51.100.10/24"))
		Expect(nmcli("-g", "NAME", "connection", "show")).NotTo(ContainSubstring("eph2"))
		r := verify()
		Expect(r.OK).To(BeTrue(), "%+v", r.Failed())
	})

	It("forgets ephemeral profiles across a reboot and keeps the persistent ones", func() {
		nmcli("connection", "add", "type", "ethernet", "ifname", "veth2", "con-name", "eph2",
			"ipv4.method", "manual", "ipv4.addresses", "203.0.113.1/24", "ipv6.method", "disabled")
		nmcli("connection", "modify", "persist0", "ipv4.addresses", "192.0.2.12/24")
		n.Shutdown()
		Expect(bootNode()).To(Equal(0))
		Expect(nmcli("-g", "NAME", "connection", "show")).NotTo(ContainSubstring("eph2"))
		Expect(waitForAddress(n, "veth0", "192.0.2.10/24")).To(Succeed())
		r := verify()
		Expect(r.OK).To(BeTrue(), r.Reason())
	})

	It("keeps the engine's profiles in the tmpfs layer, marked as owned", func() {
		nm, err := n.ConnectNM(ctx)
		Expect(err).NotTo(HaveOccurred())
		defer nm.Close()
		desired, err := state.Parse([]byte(`interfaces: [{name: veth2, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 203.0.113.7, prefix-length: 24}]}}]`))
		Expect(err).NotTo(HaveOccurred())
		tx, err := nm.Apply(ctx, desired, networkmanager.ApplyOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(tx.Commit(ctx)).To(Succeed())

		entries, err := os.ReadDir(n.Lower())
		Expect(err).NotTo(HaveOccurred())
		for _, e := range entries {
			Expect(e.Name()).NotTo(ContainSubstring("veth2"), "nothing may reach the persistent dir")
		}
		out, _ := helperRun("status", "-o", "json")
		var changes []overlay.ProfileChange
		Expect(json.Unmarshal([]byte(out), &changes)).To(Succeed())
		Expect(changes).To(ContainElement(SatisfyAll(
			HaveField("Change", overlay.Added), HaveField("Interface", "veth2"),
			HaveField("User", HaveKeyWithValue(networkmanager.OwnerKey, networkmanager.OwnerValue)))))
	})

	It("detects a write into the lower dir while mounted", func() {
		path := filepath.Join(n.Lower(), "sneaky.nmconnection")
		Expect(os.WriteFile(path, []byte(keyfile("sneaky", "7d8a1f4e-1111-4c1e-9b1a-00000000000f", "veth2", "203.0.113.9/24")), 0o600)).To(Succeed())
		DeferCleanup(os.Remove, path)
		r := verify()
		Expect(r.OK).To(BeFalse())
		Expect(checkNamed(r, overlay.CheckLowerStable)).To(SatisfyAll(
			HaveField("OK", BeFalse()), HaveField("Detail", ContainSubstring("added sneaky.nmconnection"))))
	})

	It("detects NetworkManager configured to another keyfile dir", func() {
		admin := filepath.Join(n.ConfD(), "99-admin.conf")
		Expect(os.WriteFile(admin, []byte("[keyfile]\npath=/var/lib/elsewhere\n"), 0o644)).To(Succeed())
		DeferCleanup(os.Remove, admin)
		c := checkNamed(verify(), overlay.CheckNMConfig)
		Expect(c.OK).To(BeFalse())
		Expect(c.Detail).To(ContainSubstring("/var/lib/elsewhere (from /etc/NetworkManager/conf.d/99-admin.conf)"))
	})

	It("detects a missing mount, and an overlay mounted with other layers", func() {
		_, err := n.Run(ctx, "umount", layout.Merged())
		Expect(err).NotTo(HaveOccurred())
		Expect(checkNamed(verify(), overlay.CheckMounted)).To(HaveField("OK", BeFalse()))

		other := filepath.Join(n.Dir, "other-lower")
		Expect(os.MkdirAll(other, 0o700)).To(Succeed())
		_, err = n.Run(ctx, "mount", "-t", "overlay", "overlay", "-o",
			"lowerdir="+other+",upperdir="+layout.Upper()+",workdir="+layout.Work(), layout.Merged())
		Expect(err).NotTo(HaveOccurred())
		r := verify()
		Expect(r.OK).To(BeFalse())
		Expect(checkNamed(r, overlay.CheckMounted).OK).To(BeTrue(), r.Reason())
		Expect(checkNamed(r, overlay.CheckLayers)).To(SatisfyAll(
			HaveField("OK", BeFalse()), HaveField("Detail", ContainSubstring(`lowerdir="`+other+`"`))))
		// reset refuses to empty layers of an overlay it does not recognise
		_, code := helperRun("reset")
		Expect(code).To(Equal(1))
	})

	It("refuses an upper layer that is not on tmpfs, and NetworkManager keeps the persistent dir", func() {
		n.Shutdown()
		disk := filepath.Join(n.Dir, "disk-upper")
		Expect(os.MkdirAll(disk, 0o700)).To(Succeed())
		setup := n.BootSetup
		n.BootSetup = func(n *nmhost.Node) error {
			if err := setup(n); err != nil {
				return err
			}
			// As if the run dir had been mounted from disk (an edited mount unit, a host
			// whose /run is not tmpfs): upper and work end up on persistent storage.
			_, err := n.Run(ctx, "mount", "--bind", disk, layout.RunDir)
			return err
		}
		DeferCleanup(func() { n.BootSetup = setup })
		Expect(bootNode()).To(Equal(1))
		assertDegradedOnPersistent(n, layout, overlay.CheckTmpfs)
	})

	It("fails safe when the overlay cannot be set up at all: NetworkManager runs on the persistent profiles", func() {
		n.Shutdown()
		setup := n.BootSetup
		n.BootSetup = func(n *nmhost.Node) error {
			if err := setup(n); err != nil {
				return err
			}
			// work/ replaced by a file: neither the mount nor the helper can use it.
			if _, err := n.Run(ctx, "rmdir", layout.Work()); err != nil {
				return err
			}
			_, err := n.Run(ctx, "touch", layout.Work())
			return err
		}
		DeferCleanup(func() { n.BootSetup = setup })
		Expect(bootNode()).To(Equal(1))
		assertDegradedOnPersistent(n, layout, overlay.CheckMounted)
	})

	It("repairs a degraded node without a reboot: setup, a NetworkManager restart, setup (the node stays marked until NetworkManager moved)", func() {
		_, err := n.Run(ctx, "rm", layout.Work())
		Expect(err).NotTo(HaveOccurred())
		out, code := helperRun("setup")
		Expect(code).To(Equal(0), out)
		r := verify()
		Expect(checkNamed(r, overlay.CheckNMRunning)).To(SatisfyAll(
			HaveField("OK", BeFalse()), HaveField("Detail", ContainSubstring("persist0"))),
			"NetworkManager still runs on the persistent dir until it restarts")
		marker, err := n.ReadFile(ctx, layout.DegradedMarker())
		Expect(err).NotTo(HaveOccurred(), "the node stays marked: its handler must refuse until NetworkManager moved")
		Expect(marker).To(ContainSubstring("until it restarts"))
		n.StopNM()
		Expect(n.StartNM(ctx, layout.NMEnvFile())).To(Succeed(), n.NMLog())
		// On a systemd host `nm-overlay enable` restarts NetworkManager itself (boot tier);
		// here the test restarts it, and setup clears the marker once it runs on the overlay.
		out, code = helperRun("setup")
		Expect(code).To(Equal(0), out)
		r = verify()
		Expect(r.OK).To(BeTrue(), "%+v", r.Failed())
		Expect(profileFile(n, "persist0")).To(Equal(filepath.Join(layout.Merged(), "persist0.nmconnection")))
	})

	It("rejects a layout it cannot use, with the field named", func() {
		bad := filepath.Join(n.Dir, "layout.json")
		Expect(os.WriteFile(bad, []byte(`{"lower":"/etc/NetworkManager/system-connections","runDir":"tmp/x"}`), 0o644)).To(Succeed())
		cmd := n.Command(ctx, helper, "setup", "--layout", bad)
		out, err := cmd.CombinedOutput()
		Expect(err).To(HaveOccurred())
		Expect(err.(*exec.ExitError).ExitCode()).To(Equal(2))
		Expect(string(out)).To(ContainSubstring(`runDir: "tmp/x" is not an absolute path`))
	})
})

// assertDegradedOnPersistent: the helper marked the node degraded for the named check,
// and NetworkManager runs on the persistent dir with the persistent profiles active.
func assertDegradedOnPersistent(n *nmhost.Node, layout paths.Layout, failedCheck string) {
	ctx := context.Background()
	marker, err := n.ReadFile(ctx, layout.DegradedMarker())
	Expect(err).NotTo(HaveOccurred(), "the degraded marker must exist")
	var d overlay.Degraded
	Expect(json.Unmarshal([]byte(marker), &d)).To(Succeed())
	Expect(d.Reason).To(ContainSubstring(failedCheck + ":"))
	_, err = os.Stat(n.PathInNode(layout.NMEnvFile()))
	Expect(os.IsNotExist(err)).To(BeTrue(), "the overlay must not be enabled for NetworkManager")

	printed, err := n.Run(ctx, "NetworkManager", "--print-config")
	Expect(err).NotTo(HaveOccurred())
	Expect(nmhost.KeyfilePathFromPrintConfig(printed, paths.NMDefaultKeyfile)).To(Equal(layout.Lower))
	Expect(profileFile(n, "persist0")).To(Equal(filepath.Join(layout.Lower, "persist0.nmconnection")))
	Expect(waitForAddress(n, "veth0", "192.0.2.10/24")).To(Succeed())
}

// profileFile is the file NetworkManager loaded the profile from.
func profileFile(n *nmhost.Node, id string) string {
	out, err := n.Run(context.Background(), "nmcli", "-g", "NAME,FILENAME", "connection", "show")
	Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(out, "\n") {
		if name, file, ok := strings.Cut(line, ":"); ok && name == id {
			return file
		}
	}
	Fail("NetworkManager has no profile " + id + ": " + out)
	return ""
}

func checkNamed(r overlay.Report, name string) overlay.Check {
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	Fail("no check named " + name)
	return overlay.Check{}
}

// MatchFields matches a ProfileChange's change, id and interface.
func MatchFields(change overlay.Change, id, iface string) OmegaMatcher {
	return SatisfyAll(HaveField("Change", change), HaveField("ID", id), HaveField("Interface", iface))
}

// inNodeEffectivePath evaluates overlay.NMConfig inside the node's view of the config dirs.
func inNodeEffectivePath(n *nmhost.Node, tag string) (string, error) {
	c := overlay.NMConfig{
		Main:      n.PathInNode(paths.NMMainConf),
		ConfDir:   n.PathInNode(paths.NMConfDir),
		RunDir:    n.PathInNode(paths.NMRunConfDir),
		SystemDir: n.PathInNode(paths.NMSystemConfDir),
	}
	kp, err := c.EffectiveKeyfilePath(tag)
	return kp.Path, err
}

func waitForAddress(n *nmhost.Node, dev, addr string) error {
	deadline := time.Now().Add(15 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		out, _ := n.Run(context.Background(), "nmcli", "-g", "IP4.ADDRESS", "device", "show", dev)
		if last = strings.TrimSpace(out); last == addr {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return &addrError{dev, addr, last}
}

type addrError struct{ dev, want, got string }

func (e *addrError) Error() string {
	return e.dev + " has address " + e.got + ", want " + e.want
}
