//go:build boot

package boot_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/nmoverlay/nmoverlay/internal/machineconfigs"
	"github.com/nmoverlay/nmoverlay/internal/overlay"
	"github.com/nmoverlay/nmoverlay/internal/paths"
	"github.com/nmoverlay/nmoverlay/test/nmhost"
	"github.com/nmoverlay/nmoverlay/test/nspawn"
)

const persistentProfile = `[connection]
id=persist0
uuid=0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0
type=ethernet
interface-name=veth0

[ipv4]
method=manual
address1=192.0.2.10/24

[ipv6]
method=disabled
`

// testNICs gives the node a NIC before NetworkManager starts, as hardware would.
const testNICs = `[Unit]
Description=test NICs
DefaultDependencies=no
Before=NetworkManager.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/sbin/ip link add veth0 type veth peer name veth0p
ExecStart=/usr/sbin/ip link set veth0p up
`

var (
	layout  = paths.DefaultLayout()
	mcOpts  = machineconfigs.Options{Pools: []string{"worker"}}
	nmReady = "NetworkManager.service"
)

// newNode is a pristine machine with a persistent profile and a NIC: a node before the
// nmoverlay MachineConfig reaches it.
func newNode(name string) *nspawn.Machine {
	m, err := nspawn.New(baseRootfs, name)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(m.Close)
	installNodeBasics(m)
	return m
}

// installNodeBasics gives a pristine machine a persistent profile and its NIC.
func installNodeBasics(m *nspawn.Machine) {
	writeFile(m, filepath.Join(paths.NMDefaultKeyfile, "persist0.nmconnection"), persistentProfile, 0o600)
	writeFile(m, "/etc/systemd/system/test-nics.service", testNICs, 0o644)
	Expect(os.MkdirAll(filepath.Join(m.Root, "/etc/systemd/system/NetworkManager.service.wants"), 0o755)).To(Succeed())
	Expect(os.Symlink("/etc/systemd/system/test-nics.service",
		filepath.Join(m.Root, "/etc/systemd/system/NetworkManager.service.wants/test-nics.service"))).To(Succeed())
}

// applyMachineConfig writes the MachineConfig's files and units and installs the helper,
// as MCO and the handler DaemonSet would, while the machine is off.
func applyMachineConfig(m *nspawn.Machine, withHelper bool) {
	Expect(machineconfigs.WriteToRoot(m.Root, mcOpts)).To(Succeed())
	if withHelper {
		b, err := os.ReadFile(helper)
		Expect(err).NotTo(HaveOccurred())
		writeFile(m, paths.HelperBinary, string(b), 0o755)
	}
}

func writeFile(m *nspawn.Machine, path, content string, mode os.FileMode) {
	p := filepath.Join(m.Root, path)
	Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
	Expect(os.WriteFile(p, []byte(content), mode)).To(Succeed())
}

func trim(s string) string { return strings.TrimSpace(s) }

func run(m *nspawn.Machine, args ...string) string {
	out, err := m.Exec(context.Background(), args[0], args[1:]...)
	Expect(err).NotTo(HaveOccurred())
	return strings.TrimSpace(out)
}

func unitProp(m *nspawn.Machine, unit, prop string) string {
	return run(m, "systemctl", "show", "-P", prop, unit)
}

func monotonic(m *nspawn.Machine, unit, prop string) int64 {
	v, err := strconv.ParseInt(unitProp(m, unit, prop), 10, 64)
	Expect(err).NotTo(HaveOccurred())
	return v
}

// nmKeyfilePath is the keyfile path NetworkManager prints as its effective configuration,
// evaluated with the environment the running NetworkManager got from systemd.
func nmKeyfilePath(m *nspawn.Machine) string {
	env := nmEnviron(m)
	args := []string{"env"}
	if tag, ok := env["NM_CONFIG_ENABLE_TAG"]; ok {
		args = append(args, "NM_CONFIG_ENABLE_TAG="+tag)
	}
	printed := run(m, append(args, "NetworkManager", "--print-config")...)
	return nmhost.KeyfilePathFromPrintConfig(printed, paths.NMDefaultKeyfile)
}

// nmEnviron is the running NetworkManager's environment.
func nmEnviron(m *nspawn.Machine) map[string]string {
	pid := unitProp(m, nmReady, "MainPID")
	raw := run(m, "cat", "/proc/"+pid+"/environ")
	env := map[string]string{}
	for _, kv := range strings.Split(raw, "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

func profileFile(m *nspawn.Machine, id string) string {
	for _, line := range strings.Split(run(m, "nmcli", "-g", "NAME,FILENAME", "connection", "show"), "\n") {
		if name, file, ok := strings.Cut(line, ":"); ok && name == id {
			return file
		}
	}
	return ""
}

func waitForAddress(m *nspawn.Machine, dev, addr string) {
	Eventually(func() string {
		out, _ := m.Exec(context.Background(), "nmcli", "-g", "IP4.ADDRESS", "device", "show", dev)
		return strings.TrimSpace(out)
	}, "20s", "100ms").Should(Equal(addr))
}

func verifyReport(m *nspawn.Machine) overlay.Report {
	out, _ := m.Exec(context.Background(), paths.HelperBinary, "verify", "-o", "json")
	var r overlay.Report
	Expect(json.Unmarshal([]byte(out), &r)).To(Succeed(), out)
	return r
}

// expectPersistentFallback: NetworkManager is up on the persistent dir with the persistent
// profile active, and the node is marked degraded with reasonPart.
func expectPersistentFallback(m *nspawn.Machine, reasonPart string) {
	Expect(unitProp(m, nmReady, "ActiveState")).To(Equal("active"))
	Expect(nmKeyfilePath(m)).To(Equal(layout.Lower))
	Expect(profileFile(m, "persist0")).To(Equal(filepath.Join(layout.Lower, "persist0.nmconnection")))
	waitForAddress(m, "veth0", "192.0.2.10/24")
	marker := run(m, "cat", layout.DegradedMarker())
	var d overlay.Degraded
	Expect(json.Unmarshal([]byte(marker), &d)).To(Succeed(), marker)
	Expect(d.Reason).To(ContainSubstring(reasonPart))
}

var _ = Describe("a node booted with the nmoverlay MachineConfig", Ordered, func() {
	var (
		m        *nspawn.Machine
		ctx      = context.Background()
		pristine []string // /etc and /usr/local before the MachineConfig
	)

	BeforeAll(func() {
		m = newNode("mc")
		// A baseline boot settles what systemd creates on first boot (/etc/.updated ...).
		Expect(m.Boot(ctx)).To(Succeed(), m.Console())
		Expect(m.Poweroff(ctx)).To(Succeed())
		pristine = tree(m.Root, "etc", "usr/local")
		applyMachineConfig(m, true)
		Expect(m.Boot(ctx)).To(Succeed(), m.Console())
	})

	It("mounts the overlay and verifies it before NetworkManager starts", func() {
		Expect(unitProp(m, layout.MountUnit(), "ActiveState")).To(Equal("active"))
		Expect(unitProp(m, paths.HelperService, "ActiveState")).To(Equal("active"))
		Expect(unitProp(m, nmReady, "ActiveState")).To(Equal("active"))
		nmStart := monotonic(m, nmReady, "ExecMainStartTimestampMonotonic")
		Expect(monotonic(m, layout.MountUnit(), "ActiveEnterTimestampMonotonic")).To(BeNumerically("<", nmStart))
		Expect(monotonic(m, paths.HelperService, "ActiveEnterTimestampMonotonic")).To(BeNumerically("<", nmStart))
		Expect(unitProp(m, paths.HelperService, "StatusText")).To(ContainSubstring("verified"), "sd_notify STATUS=")
		// As an administrator reads it (README): by its unit. The entry names its unit itself,
		// as journald may not tie an exited process's entry to it.
		Eventually(func() (string, error) {
			return m.Exec(ctx, "journalctl", "-b", "-u", paths.HelperService, "-o", "verbose", "--no-pager")
		}, "10s").Should(SatisfyAll(ContainSubstring("NMOVERLAY_RESULT=verified"), ContainSubstring("OBJECT_SYSTEMD_UNIT="+paths.HelperService)),
			"the helper's structured journal entry, under its unit")
	})

	It("has NetworkManager on the merged dir", func() {
		Expect(nmEnviron(m)).To(HaveKeyWithValue("NM_CONFIG_ENABLE_TAG", paths.EnableTag))
		Expect(nmKeyfilePath(m)).To(Equal(layout.Merged()))
		Expect(profileFile(m, "persist0")).To(Equal(filepath.Join(layout.Merged(), "persist0.nmconnection")))
		waitForAddress(m, "veth0", "192.0.2.10/24")
		r := verifyReport(m)
		Expect(r.OK).To(BeTrue(), "%+v", r.Failed())
		_, err := m.Exec(ctx, "test", "-e", layout.DegradedMarker())
		Expect(err).To(HaveOccurred(), "no degraded marker on a verified node")
	})

	It("passes systemd-analyze verify for every rendered unit", func() {
		var units []string
		for _, f := range layout.MachineConfigFiles() {
			if strings.HasPrefix(f, paths.SystemdUnitDir+"/") && !strings.Contains(f, ".d/") {
				units = append(units, f)
			}
		}
		// The mount, the helper, its enable path and service, the migration, and the SELinux
		// module's loader (skipped here: this kernel has no SELinux).
		Expect(units).To(HaveLen(6))
		Expect(units).To(ContainElement(filepath.Join(paths.SystemdUnitDir, paths.SELinuxService)))
		out, err := m.Exec(ctx, "systemd-analyze", append(append([]string{"verify", "--man=no"}, units...), nmReady)...)
		Expect(err).NotTo(HaveOccurred(), out)
	})

	It("forgets a profile added in one boot and keeps the persistent one in the next", func() {
		run(m, "nmcli", "connection", "add", "type", "dummy", "ifname", "eph0", "con-name", "eph0",
			"ipv4.method", "manual", "ipv4.addresses", "203.0.113.1/24", "autoconnect", "no")
		run(m, "nmcli", "connection", "modify", "persist0", "ipv4.addresses", "192.0.2.99/24")
		Expect(run(m, "ls", layout.Upper())).To(ContainSubstring("eph0.nmconnection"))
		_, err := os.Stat(filepath.Join(m.Root, layout.Lower, "eph0.nmconnection"))
		Expect(os.IsNotExist(err)).To(BeTrue())

		Expect(m.Reboot(ctx)).To(Succeed(), m.Console())
		Expect(run(m, "nmcli", "-g", "NAME", "connection", "show")).NotTo(ContainSubstring("eph0"))
		Expect(run(m, "nmcli", "-g", "ipv4.addresses", "connection", "show", "persist0")).To(Equal("192.0.2.10/24"))
		waitForAddress(m, "veth0", "192.0.2.10/24")
		r := verifyReport(m)
		Expect(r.OK).To(BeTrue(), r.Reason())
	})

	It("keeps NetworkManager on the persistent profiles when the overlay is broken", func() {
		Expect(m.Poweroff(ctx)).To(Succeed())
		// Sorted before nmoverlay.conf, so its entry wins: work/ becomes a file, which
		// neither the mount unit nor the helper can use.
		writeFile(m, "/etc/tmpfiles.d/00-break-nmoverlay.conf", "f "+layout.Work()+" 0644 root root -\n", 0o644)
		DeferCleanup(os.Remove, filepath.Join(m.Root, "/etc/tmpfiles.d/00-break-nmoverlay.conf"))
		Expect(m.Boot(ctx)).To(Succeed(), m.Console())
		Expect(unitProp(m, layout.MountUnit(), "ActiveState")).To(Equal("failed"))
		Expect(unitProp(m, paths.HelperService, "ActiveState")).To(Equal("failed"))
		Expect(nmEnviron(m)).NotTo(HaveKey("NM_CONFIG_ENABLE_TAG"))
		expectPersistentFallback(m, overlay.CheckMounted+":")
		Expect(m.Poweroff(ctx)).To(Succeed())
	})

	It("keeps NetworkManager on the persistent profiles when the helper is not installed yet, and moves it onto the overlay once it is", func() {
		Expect(os.Remove(filepath.Join(m.Root, paths.HelperBinary))).To(Succeed())
		Expect(m.Boot(ctx)).To(Succeed(), m.Console())
		Expect(unitProp(m, paths.HelperService, "ConditionResult")).To(Equal("no"))
		expectPersistentFallback(m, "has not verified")
		Expect(unitProp(m, paths.EnablePath, "ActiveState")).To(Equal("active"), "waiting for the helper")
		Expect(unitProp(m, paths.EnableService, "ActiveState")).To(Equal("inactive"))
		nmPID := unitProp(m, nmReady, "MainPID")

		// As the handler's init container does: a complete file renamed into place.
		b, err := os.ReadFile(helper)
		Expect(err).NotTo(HaveOccurred())
		writeFile(m, paths.HelperBinary+".new", string(b), 0o755)
		Expect(os.Rename(filepath.Join(m.Root, paths.HelperBinary+".new"), filepath.Join(m.Root, paths.HelperBinary))).To(Succeed())
		Eventually(func() string { return unitProp(m, paths.EnableService, "ActiveState") }, "30s", "200ms").Should(Equal("active"))
		Expect(unitProp(m, nmReady, "MainPID")).NotTo(Equal(nmPID), "NetworkManager restarted")
		Expect(nmEnviron(m)).To(HaveKeyWithValue("NM_CONFIG_ENABLE_TAG", paths.EnableTag))
		Expect(profileFile(m, "persist0")).To(Equal(filepath.Join(layout.Merged(), "persist0.nmconnection")))
		waitForAddress(m, "veth0", "192.0.2.10/24")
		r := verifyReport(m)
		Expect(r.OK).To(BeTrue(), "%+v", r.Failed())
		_, err = m.Exec(ctx, "test", "-e", layout.DegradedMarker())
		Expect(err).To(HaveOccurred(), "the marker is gone once NetworkManager runs on the overlay")

		// Run again (by hand, or the path unit after a reinstall): nothing to do.
		pid := unitProp(m, nmReady, "MainPID")
		out, err := m.Exec(ctx, paths.HelperBinary, "enable")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(unitProp(m, nmReady, "MainPID")).To(Equal(pid), "no second restart")
		Expect(m.Poweroff(ctx)).To(Succeed())
	})

	It("leaves nothing behind when the MachineConfig is removed", func() {
		Expect(machineconfigs.RemoveFromRoot(m.Root, mcOpts)).To(Succeed())
		b, err := os.ReadFile(helper)
		Expect(err).NotTo(HaveOccurred())
		writeFile(m, paths.HelperBinary, string(b), 0o755) // still installed by the DaemonSet
		Expect(m.Boot(ctx)).To(Succeed(), m.Console())
		Expect(nmKeyfilePath(m)).To(Equal(paths.NMDefaultKeyfile))
		Expect(profileFile(m, "persist0")).To(Equal(filepath.Join(paths.NMDefaultKeyfile, "persist0.nmconnection")))

		out, err := m.Exec(ctx, paths.HelperBinary, "uninstall", "--check")
		Expect(err).To(HaveOccurred(), "before uninstall, leftovers are listed and exit 1")
		Expect(out).To(ContainSubstring(filepath.Dir(layout.NMServiceDropInPath())))
		out, err = m.Exec(ctx, paths.HelperBinary, "uninstall", "--keep-binary")
		Expect(err).NotTo(HaveOccurred(), out)
		out, err = m.Exec(ctx, paths.HelperBinary, "uninstall", "--check", "-o", "json")
		Expect(err).To(HaveOccurred())
		Expect(out).To(MatchJSON(`["` + paths.HelperBinary + `"]`))
		out, err = m.Exec(ctx, paths.HelperBinary, "uninstall")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(m.Poweroff(ctx)).To(Succeed())
		Expect(tree(m.Root, "etc", "usr/local")).To(Equal(pristine))
	})
})

// tree lists every path under the given dirs of root, sorted.
func tree(root string, dirs ...string) []string {
	var paths []string
	for _, d := range dirs {
		_ = filepath.WalkDir(filepath.Join(root, d), func(p string, _ fs.DirEntry, err error) error {
			if err == nil {
				rel, _ := filepath.Rel(root, p)
				paths = append(paths, rel)
			}
			return nil
		})
	}
	sort.Strings(paths)
	return paths
}
