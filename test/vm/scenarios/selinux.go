package scenarios

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nmoverlay/nmoverlay/internal/machineconfigs"
	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/overlay"
	"github.com/nmoverlay/nmoverlay/internal/paths"
)

// The SELinux guest's suites: the Debian 13 image booted enforcing with Debian's reference
// policy, three times on one disk. The first boot installs the rendered MachineConfig (after
// a negative control), as MCO's daemon would before it reboots the node; the second runs on
// the overlay the units set up at boot; the third shows the reboot.
const (
	SELinuxInstall = "selinux-install"
	SELinuxApply   = "selinux-apply"
	SELinuxReboot  = "selinux-reboot"
)

// SELinuxBoots are the SELinux guest's suites, one per boot, in order.
var SELinuxBoots = []string{SELinuxInstall, SELinuxApply, SELinuxReboot}

// helperInShare is the nm-overlay binary the host builds into the share.
const helperInShare = "/mnt/share/nm-overlay"

// selinuxState keeps what one boot leaves for the next on the guest's disk.
const selinuxState = "/var/lib/nmoverlay-vm-test"

// The guest's persistent profiles, made with nmcli before the overlay exists: the
// administrator's, which nmoverlay never changes, in the keyfile dir or through the overlay.
const (
	persistentBridge = "persist0" // br-p, 10.9.0.1/24: the policy takes the interface with a profile of its own
	persistentEdited = "persist1" // br-q: the administrator changes it through the overlay (a copy-up)
	persistentGone   = "persist2" // br-r: the administrator deletes it through the overlay (a whiteout), and adds it again
)

// selinuxPolicy is the committed policy: a new bridge, and the persistent bridge's
// interface readdressed.
const selinuxPolicy = `
interfaces:
- name: br-pol
  type: linux-bridge
  state: up
  bridge: {options: {stp: {enabled: false}}, port: []}
  ipv4: {enabled: true, address: [{ip: 10.9.2.1, prefix-length: 24}]}
- name: br-p
  type: linux-bridge
  state: up
  bridge: {options: {stp: {enabled: false}}, port: []}
  ipv4: {enabled: true, address: [{ip: 10.9.0.2, prefix-length: 24}]}
`

// selinuxRolledBack is applied over selinuxPolicy and rolled back: a bridge added and the
// policy's bridge readdressed (its keyfile rewritten), both undone by the rollback (a keyfile
// of the tmpfs layer deleted, another rewritten).
const selinuxRolledBack = `
interfaces:
- name: br-rb
  type: linux-bridge
  state: up
  bridge: {options: {stp: {enabled: false}}, port: []}
- name: br-pol
  type: linux-bridge
  state: up
  bridge: {options: {stp: {enabled: false}}, port: []}
  ipv4: {enabled: true, address: [{ip: 10.9.3.1, prefix-length: 24}]}
- name: br-p
  type: linux-bridge
  state: up
  bridge: {options: {stp: {enabled: false}}, port: []}
  ipv4: {enabled: true, address: [{ip: 10.9.0.2, prefix-length: 24}]}
`

func init() {
	for suite, scenarios := range selinuxScenarios {
		Suites[suite] = scenarios
	}
}

var selinuxScenarios = map[string][]Scenario{
	SELinuxInstall: {
		{"booted enforcing with Debian's reference policy, NetworkManager confined and its keyfile dir labelled", func(ctx context.Context, e *Env) error {
			if err := enforcing(); err != nil {
				return err
			}
			nm, err := processLabel("NetworkManager")
			if err != nil {
				return err
			}
			if selinuxType(nm) != "NetworkManager_t" {
				return fmt.Errorf("NetworkManager runs as %s, want NetworkManager_t", nm)
			}
			for path, typ := range map[string]string{paths.NMDefaultKeyfile: "NetworkManager_etc_rw_t", "/": "root_t"} {
				if err := wantType(path, typ); err != nil {
					return fmt.Errorf("the image's labels: %w", err)
				}
			}
			self, _ := os.ReadFile("/proc/self/attr/current")
			fmt.Printf("SETUP the payload (the handler's stand-in) runs as %s\n", strings.TrimRight(string(self), "\x00\n"))
			for _, args := range [][]string{
				{"nmcli", "connection", "add", "type", "bridge", "ifname", "br-p", "con-name", persistentBridge, "bridge.stp", "no",
					"ipv4.method", "manual", "ipv4.addresses", "10.9.0.1/24", "ipv6.method", "disabled"},
				{"nmcli", "connection", "add", "type", "bridge", "ifname", "br-q", "con-name", persistentEdited, "bridge.stp", "no",
					"ipv4.method", "disabled", "ipv6.method", "disabled"},
				{"nmcli", "connection", "add", "type", "bridge", "ifname", "br-r", "con-name", persistentGone, "bridge.stp", "no",
					"ipv4.method", "disabled", "ipv6.method", "disabled"},
				// Debian's reference policy does not let Open vSwitch's init scripts run
				// (openvswitch_t may not execute the shell): the distribution's gap, outside
				// this guest's question, and 20 s of every boot.
				{"systemctl", "mask", "openvswitch-switch.service", "ovs-vswitchd.service", "ovsdb-server.service"},
			} {
				if err := expect(args); err != nil {
					return err
				}
			}
			return nil
		}},
		{"the rendered MachineConfig installed with its policy module and the helper, labelled", func(ctx context.Context, e *Env) error {
			l := paths.DefaultLayout()
			cfg, err := machineconfigs.Ignition(machineconfigs.Options{Pools: []string{"worker"}, Layout: l})
			if err != nil {
				return err
			}
			if err := installRendered(cfg); err != nil {
				return err
			}
			for path, typ := range map[string]string{paths.HelperBinary: "bin_t", filepath.Join(paths.SystemdUnitDir, l.MountUnit()): "systemd_unit_t"} {
				if err := wantType(path, typ); err != nil {
					return err
				}
			}
			return os.MkdirAll(selinuxState, 0o755)
		}},
	},
	SELinuxApply: {
		{"the overlay set up at boot under enforcing, mounted with context= after its module was loaded, and verified by nm-overlay", func(ctx context.Context, e *Env) error {
			if err := enforcing(); err != nil {
				return err
			}
			if err := overlayUp(); err != nil {
				return err
			}
			if err := moduleLoaded(); err != nil {
				return err
			}
			// The module's store entry, for the next boot to see that it was not loaded again.
			info, err := os.Stat(moduleStoreEntry)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(selinuxState, "module-mtime"), []byte(info.ModTime().String()), 0o644)
		}},
		{"a policy committed through the overlay, its profiles in the tmpfs layer and labelled", func(ctx context.Context, e *Env) error {
			if err := e.Apply(ctx, selinuxPolicy); err != nil {
				return err
			}
			return policyInEffect()
		}},
		{"an administrator's change through the overlay, a persistent profile changed, another deleted and added again", func(ctx context.Context, e *Env) error {
			for _, args := range [][]string{
				{"nmcli", "connection", "modify", persistentEdited, "ipv4.method", "manual", "ipv4.addresses", "10.9.4.1/24"},
				{"nmcli", "connection", "delete", persistentGone},
			} {
				if err := expect(args); err != nil {
					return err
				}
			}
			if err := adminChanges(overlay.Deleted); err != nil {
				return err
			}
			// Added again: its keyfile replaces its whiteout.
			if err := expect([]string{"nmcli", "connection", "add", "type", "bridge", "ifname", "br-r", "con-name", persistentGone, "bridge.stp", "no",
				"ipv4.method", "disabled", "ipv6.method", "disabled"}); err != nil {
				return err
			}
			return adminChanges(overlay.Modified)
		}},
		{"a change rolled back through the overlay, a profile of the tmpfs layer removed and another rewritten", func(ctx context.Context, e *Env) error {
			desired, err := e.Desired(selinuxRolledBack)
			if err != nil {
				return err
			}
			tx, err := e.NM.Apply(ctx, desired, networkmanager.ApplyOptions{ActivationTimeout: 60 * time.Second})
			if err != nil {
				return err
			}
			if err := ownedBy("br-pol", "10.9.3.1/24", "br-rb"); err != nil {
				_ = tx.Rollback(ctx)
				return fmt.Errorf("before the rollback: %w", err)
			}
			if err := tx.Rollback(ctx); err != nil {
				return err
			}
			return eventually(30*time.Second, func() error {
				if err := gone("br-rb"); err != nil {
					return err
				}
				return policyInEffect()
			})
		}},
		{"no denial for NetworkManager, the overlay's mount, nm-overlay or the payload in this boot", func(ctx context.Context, e *Env) error {
			return noOwnDenials(bootStart())
		}},
	},
	SELinuxReboot: {
		{"after a reboot the overlay is back, its tmpfs layer empty, and the module was not loaded again", func(ctx context.Context, e *Env) error {
			if err := overlayUp(); err != nil {
				return err
			}
			changes, err := overlay.Status(paths.DefaultLayout())
			if err != nil {
				return err
			}
			if len(changes) > 0 {
				return fmt.Errorf("the tmpfs layer holds %v after a reboot", changes)
			}
			if err := gone("br-pol"); err != nil {
				return err
			}
			// The administrator's changes were ephemeral too.
			if out, _ := sh("nmcli", "-g", "ipv4.addresses", "connection", "show", persistentEdited); strings.TrimSpace(out) != "" {
				return fmt.Errorf("%s has addresses %q after the reboot", persistentEdited, out)
			}
			before, err := os.ReadFile(filepath.Join(selinuxState, "module-mtime"))
			if err != nil {
				return err
			}
			info, err := os.Stat(moduleStoreEntry)
			if err != nil {
				return err
			}
			if info.ModTime().String() != string(before) {
				return fmt.Errorf("the policy module was installed again at boot (%s, was %s): every boot pays the policy rebuild", info.ModTime(), before)
			}
			return nil
		}},
		{"the committed policy re-applied in the new boot", func(ctx context.Context, e *Env) error {
			if err := e.Apply(ctx, selinuxPolicy); err != nil {
				return err
			}
			return policyInEffect()
		}},
		{"no denial for NetworkManager, the overlay's mount, nm-overlay or the payload in this boot", func(ctx context.Context, e *Env) error {
			return noOwnDenials(bootStart())
		}},
		// Last: it leaves the guest on the mount it shows.
		{"negative control, the same overlay rendered without context= is mislabelled and NetworkManager's writes through it are denied", func(ctx context.Context, e *Env) error {
			return negativeControl(ctx)
		}},
	},
}

// moduleStoreEntry is the policy module as Debian's policy store holds it.
var moduleStoreEntry = "/var/lib/selinux/default/active/modules/400/" + paths.SELinuxModuleName

// negativeControl mounts the overlay as rendered without context=, the policy module
// still loaded (so that only the context differs), moves NetworkManager onto it, and shows
// what goes wrong. It runs last in the guest's last boot: nothing is undone.
func negativeControl(ctx context.Context) error {
	l := paths.DefaultLayout()
	l.SELinuxContext = ""
	cfg, err := machineconfigs.Ignition(machineconfigs.Options{Pools: []string{"worker"}, Layout: l})
	if err != nil {
		return err
	}
	start := time.Now()
	var steps []string
	step := func(what string) {
		steps = append(steps, fmt.Sprintf("%s %s", what, time.Since(start).Round(100*time.Millisecond)))
	}
	for _, args := range [][]string{{"systemctl", "stop", "NetworkManager"}, {"systemctl", "stop", l.MountUnit()}} {
		if err := expect(args); err != nil {
			return err
		}
	}
	if err := installRendered(cfg); err != nil {
		return err
	}
	if err := expect([]string{"systemctl", "start", l.MountUnit()}); err != nil {
		return err
	}
	label, err := overlay.FileLabel(l.Merged())
	if err != nil {
		return err
	}
	if selinuxType(label) == "NetworkManager_etc_rw_t" {
		return fmt.Errorf("without context= the merged dir is labelled %s all the same: the control shows nothing", label)
	}
	step("mount")
	// NetworkManager starts on it (the boot's setup enabled the overlay), and nm-overlay
	// verifies it, saying what a mount without a context costs: RHEL's policy, which leaves
	// mount_t unconfined, runs such a mount.
	if err := restartNM(); err != nil {
		return err
	}
	if err := expect([]string{helperInShare, "verify"}, "overlay verified", "no SELinux context on the mount: the merged dir is labelled "+label); err != nil {
		return err
	}
	if err := expect([]string{"nmcli", "-g", "NAME,FILENAME", "connection", "show"}, persistentBridge+":"+filepath.Join(l.Merged(), persistentBridge+".nmconnection")); err != nil {
		return fmt.Errorf("NetworkManager did not move onto the overlay without context=: %w", err)
	}
	step("restart")
	addOut, addErr := sh("nmcli", "--wait", "20", "connection", "add", "type", "bridge", "ifname", "br-ctl", "con-name", "control",
		"ipv4.method", "disabled", "ipv6.method", "disabled")
	time.Sleep(time.Second) // the audit record reaches auditd's log
	denials, err := readDenials()
	if err != nil {
		return err
	}
	var seen []string
	for _, d := range denials {
		if !d.Time.Before(start) && (d.Source == "mount_t" || d.Source == "NetworkManager_t") && !d.harness() && !d.distribution() {
			seen = append(seen, d.Line)
		}
	}
	step("add")
	fmt.Printf("SETUP control (%s): merged dir %s; nmcli add: %v %s; denials:\n  %s\n",
		strings.Join(steps, ", "), label, addErr, strings.TrimSpace(addOut), strings.Join(seen, "\n  "))
	if len(seen) == 0 || addErr == nil {
		return fmt.Errorf("without context= NetworkManager wrote through the overlay (%v), with %d denials", addErr, len(seen))
	}
	return nil
}

// installRendered writes an Ignition config's files and units as MCO's daemon does, the
// helper as the handler's init container does, and labels what it wrote as Ignition and
// the policy's file contexts would (restorecon).
func installRendered(cfg []byte) error {
	if err := machineconfigs.ApplyIgnition("/", cfg); err != nil {
		return err
	}
	if err := expect([]string{"install", "-m", "0755", helperInShare, paths.HelperBinary}); err != nil {
		return err
	}
	// What the config wrote, and the directories it may have made (a drop-in dir).
	written := []string{paths.HelperBinary}
	for _, f := range paths.DefaultLayout().MachineConfigFiles() {
		written = append(written, f, filepath.Dir(f))
	}
	if err := expect(append([]string{"restorecon", "-F"}, written...)); err != nil {
		return err
	}
	return expect([]string{"systemctl", "daemon-reload"})
}

// overlayUp checks the overlay is mounted with the default context and verified, with
// NetworkManager's persistent profiles read through it.
func overlayUp() error {
	l := paths.DefaultLayout()
	if err := expect([]string{"findmnt", "-n", "-o", "OPTIONS", l.Merged()}, "context=\""+paths.DefaultSELinuxContext+"\""); err != nil {
		// findmnt prints the option unquoted on some versions
		if err2 := expect([]string{"findmnt", "-n", "-o", "OPTIONS", l.Merged()}, "context="+paths.DefaultSELinuxContext); err2 != nil {
			return err
		}
	}
	if err := expect([]string{helperInShare, "verify"}, "overlay verified", "ok  "+overlay.CheckSELinuxLabel); err != nil {
		return err
	}
	if err := wantType(l.Merged(), "NetworkManager_etc_rw_t"); err != nil {
		return err
	}
	return expect([]string{"nmcli", "-g", "NAME,FILENAME", "connection", "show"},
		persistentBridge+":"+filepath.Join(l.Merged(), persistentBridge+".nmconnection"),
		persistentEdited+":"+filepath.Join(l.Merged(), persistentEdited+".nmconnection"))
}

// moduleLoaded checks the policy store holds the rendered module, loaded at boot by its unit.
func moduleLoaded() error {
	if err := expect([]string{"semodule", "-l"}, paths.SELinuxModuleName); err != nil {
		return err
	}
	return expect([]string{"systemctl", "show", "-p", "ActiveState,Result", paths.SELinuxService}, "ActiveState=active", "Result=success")
}

// policyInEffect checks selinuxPolicy is what the node runs, its profiles in the tmpfs
// layer, labelled, and the persistent keyfile dir untouched.
func policyInEffect() error {
	if err := ownedBy("br-pol", "10.9.2.1/24", "br-p"); err != nil {
		return err
	}
	if err := expect([]string{"ip", "addr", "show", "br-p"}, "10.9.0.2/24"); err != nil {
		return err
	}
	changes, err := overlay.Status(paths.DefaultLayout())
	if err != nil {
		return err
	}
	added := 0
	for _, c := range changes {
		if c.Change != overlay.Added {
			continue
		}
		added++
		if err := wantType(filepath.Join(paths.DefaultLayout().Merged(), c.File), "NetworkManager_etc_rw_t"); err != nil {
			return err
		}
	}
	if added < 2 {
		return fmt.Errorf("the tmpfs layer holds %v, want the policy's two profiles", changes)
	}
	return persistentUnchanged()
}

// adminChanges checks the administrator's changes are in the tmpfs layer: persistentEdited
// copied up, and persistentGone as deleted (a whiteout) or modified (added again over it).
func adminChanges(gone overlay.Change) error {
	changes, err := overlay.Status(paths.DefaultLayout())
	if err != nil {
		return err
	}
	got := map[string]overlay.Change{}
	for _, c := range changes {
		got[c.File] = c.Change
	}
	if got[persistentEdited+".nmconnection"] != overlay.Modified || got[persistentGone+".nmconnection"] != gone {
		return fmt.Errorf("the tmpfs layer holds %v, want %s modified and %s %s", changes, persistentEdited, persistentGone, gone)
	}
	return persistentUnchanged()
}

// persistentUnchanged checks the persistent keyfile dir still holds the profiles as made.
func persistentUnchanged() error {
	for _, id := range []string{persistentBridge, persistentEdited, persistentGone} {
		if _, err := os.Stat(filepath.Join(paths.NMDefaultKeyfile, id+".nmconnection")); err != nil {
			return fmt.Errorf("the persistent keyfile dir: %w", err)
		}
	}
	return expect([]string{"grep", "-h", "address1=", filepath.Join(paths.NMDefaultKeyfile, persistentBridge+".nmconnection")}, "10.9.0.1/24")
}

// ownedBy checks bridge dev has addr and that other exists.
func ownedBy(dev, addr, other string) error {
	if err := expect([]string{"ip", "addr", "show", dev}, addr); err != nil {
		return err
	}
	_, err := os.Stat(filepath.Join("/sys/class/net", other))
	return err
}

func enforcing() error {
	b, err := os.ReadFile("/sys/fs/selinux/enforce")
	if err != nil {
		return fmt.Errorf("SELinux is not enabled: %w", err)
	}
	if strings.TrimSpace(string(b)) != "1" {
		return fmt.Errorf("SELinux is permissive, want enforcing")
	}
	return nil
}

// processLabel is the SELinux label of the first process named comm.
func processLabel(comm string) (string, error) {
	dirs, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, f := range dirs {
		if b, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(b)) == comm {
			l, err := os.ReadFile(filepath.Join(filepath.Dir(f), "attr", "current"))
			return strings.TrimRight(string(l), "\x00\n"), err
		}
	}
	return "", fmt.Errorf("no process %s", comm)
}

func wantType(path, typ string) error {
	l, err := overlay.FileLabel(path)
	if err != nil {
		return err
	}
	if selinuxType(l) != typ {
		return fmt.Errorf("%s is labelled %s, want type %s", path, l, typ)
	}
	return nil
}

// selinuxType is a label's type (user:role:type:level).
func selinuxType(label string) string {
	parts := strings.SplitN(label, ":", 4)
	if len(parts) < 3 {
		return label
	}
	return parts[2]
}

// restartNM restarts NetworkManager and waits until it answers: not until its startup
// completes, which waits out the DHCP attempts on the guest's NICs that have no server.
func restartNM() error {
	if err := expect([]string{"systemctl", "restart", "NetworkManager"}); err != nil {
		return err
	}
	return eventually(30*time.Second, func() error { return expect([]string{"nmcli", "-t", "-f", "RUNNING", "general"}, "running") })
}

// bootStart is when this boot began.
func bootStart() time.Time {
	b, _ := os.ReadFile("/proc/stat")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			s, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Unix(s, 0)
		}
	}
	return time.Time{}
}

// Denial is one AVC denial.
type Denial struct {
	Time                        time.Time
	Source, Target, Class, Comm string
	Perms, Dev                  string
	Line                        string
}

var (
	avcRe   = regexp.MustCompile(`audit\((\d+)\.(\d+):\d+\): avc:\s+denied\s+\{ ([^}]*) \} for .*?comm="([^"]*)"`)
	fieldRe = regexp.MustCompile(`(scontext|tcontext|tclass|dev)=("[^"]*"|\S+)`)
)

// readDenials reads the AVC denials: auditd's log (every boot on this disk), and this
// boot's kernel log for what came before auditd started (both carry the audit timestamp).
func readDenials() ([]Denial, error) {
	var lines []string
	if f, err := os.Open("/var/log/audit/audit.log"); err == nil {
		s := bufio.NewScanner(f)
		s.Buffer(make([]byte, 1<<20), 1<<20)
		for s.Scan() {
			lines = append(lines, s.Text())
		}
		f.Close()
	}
	lines = append(lines, kernelLog()...)
	seen := map[string]bool{}
	var out []Denial
	for _, line := range lines {
		m := avcRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		key := line[strings.Index(line, "audit("):]
		if seen[key] {
			continue
		}
		seen[key] = true
		sec, _ := strconv.ParseInt(m[1], 10, 64)
		ms, _ := strconv.ParseInt(m[2], 10, 64)
		d := Denial{Time: time.Unix(sec, ms*int64(time.Millisecond)), Perms: m[3], Comm: m[4], Line: key}
		for _, f := range fieldRe.FindAllStringSubmatch(line, -1) {
			v := strings.Trim(f[2], `"`)
			switch f[1] {
			case "scontext":
				d.Source = selinuxType(v)
			case "tcontext":
				d.Target = selinuxType(v)
			case "tclass":
				d.Class = v
			case "dev":
				d.Dev = v
			}
		}
		out = append(out, d)
	}
	return out, nil
}

// kernelLog is this boot's kernel log, read from /dev/kmsg (journalctl would run in a
// domain of its own, which the reference policy does not let read the journal for this one).
func kernelLog() []string {
	// A raw descriptor: an os.File opened non-blocking would park in Go's poller at the end
	// of the log instead of returning EAGAIN.
	fd, err := syscall.Open("/dev/kmsg", syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	var lines []string
	buf := make([]byte, 8192)
	for {
		n, err := syscall.Read(fd, buf)
		if errors.Is(err, syscall.EPIPE) {
			continue // records overwritten while reading
		}
		if err != nil || n <= 0 {
			return lines
		}
		lines = append(lines, string(buf[:n]))
	}
}

// harness says whether the test's own plumbing caused the denial: the host's 9p share,
// which the reference policy does not label, mounted and written by the payload unit.
func (d Denial) harness() bool {
	return d.Dev == "9p" || (d.Target == "unlabeled_t" && d.Class == "filesystem")
}

// distribution says whether the denial is Debian's policy against Debian's own packages,
// which nmoverlay neither ships nor touches: Open vSwitch's init scripts, which the
// reference policy does not let run (masked after the first boot), NetworkManager 1.52's
// Open vSwitch plugin looking for their socket, and systemd's own helpers and getty.
func (d Denial) distribution() bool {
	switch {
	case d.Source == "openvswitch_t", d.Target == "openvswitch_runtime_t", d.Target == "openvswitch_t":
		return true
	case strings.HasPrefix(d.Source, "systemd_") || d.Source == "getty_t" || d.Source == "syslogd_t":
		return true
	}
	return false
}

// ownDomains are the domains whose denials are nmoverlay's: NetworkManager's (its keyfiles
// through the overlay), the overlay's mount (mount_t, whose credentials overlayfs uses for
// every access through it), the policy module's loading, and the unconfined-to-Debian
// domain the payload (the handler's stand-in) and nm-overlay run in.
var ownDomains = []string{"NetworkManager_t", "mount_t", "semanage_t", "load_policy_t", "setfiles_t", "initrc_t", "init_t", "unconfined_service_t"}

// noOwnDenials fails on any denial since start that is not the harness's or the
// distribution's, and lists the others for the log.
func noOwnDenials(since time.Time) error {
	denials, err := readDenials()
	if err != nil {
		return err
	}
	var own, other []string
	for _, d := range denials {
		if d.Time.Before(since) || d.harness() {
			continue
		}
		switch {
		case d.distribution():
			other = append(other, d.Line)
		case slices.Contains(ownDomains, d.Source) || d.Comm == "nm-overlay" || d.Comm == "NetworkManager":
			own = append(own, d.Line)
		default:
			other = append(other, d.Line)
		}
	}
	fmt.Printf("SETUP denials since %s that are not nmoverlay's (%d):\n  %s\n", since.Format(time.TimeOnly), len(other), strings.Join(other, "\n  "))
	if len(own) > 0 {
		return fmt.Errorf("%d denials:\n  %s", len(own), strings.Join(own, "\n  "))
	}
	return nil
}
