// Package paths is the one definition of every path, file and unit name the keyfile
// overlay uses, and of the overlay's layout. It does no I/O: the MachineConfig renderer
// (internal/machineconfigs), the host helper (cmd/nm-overlay, internal/overlay) and the
// handler all take their names from here.
package paths

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/coreos/go-systemd/v22/unit"

	"github.com/nmoverlay/nmoverlay/api/field"
)

// NetworkManager's own locations. Not configurable: NetworkManager decides them.
const (
	NMConfDir        = "/etc/NetworkManager/conf.d"
	NMRunConfDir     = "/run/NetworkManager/conf.d"
	NMSystemConfDir  = "/usr/lib/NetworkManager/conf.d"
	NMMainConf       = "/etc/NetworkManager/NetworkManager.conf"
	NMDefaultKeyfile = "/etc/NetworkManager/system-connections"
	// NMRunProfiles is NetworkManager's in-memory profile dir; it shadows [keyfile] path,
	// so it can be neither the lower nor the upper layer.
	NMRunProfiles = "/run/NetworkManager/system-connections"
	NMService     = "NetworkManager.service"
	// SystemdUnitDir is where MCO writes units and their drop-ins.
	SystemdUnitDir = "/etc/systemd/system"
)

// Names of what this project installs on a host.
const (
	// HelperService runs `nm-overlay setup` before NetworkManager on every boot.
	HelperService = "nm-overlay.service"
	// HelperBinary is where the helper lives on the host. /usr is read-only on RHCOS;
	// /usr/local/bin is the writable place for host binaries there.
	HelperBinary = "/usr/local/bin/nm-overlay"
	// EnablePath waits for HelperBinary and starts EnableService when it appears: the
	// MachineConfig usually reaches a node before the handler DaemonSet installs the
	// helper, and that boot's NetworkManager is moved onto the overlay without a reboot.
	EnablePath = "nm-overlay-enable.path"
	// MigrateService runs `nm-overlay migrate-profiles` before the overlay is mounted, in
	// a boot that finds a migration plan (MigrationPlan).
	MigrateService = "nm-overlay-migrate.service"
	// EnableService runs `nm-overlay enable` (a no-op in a boot whose setup verified the
	// overlay before NetworkManager started).
	EnableService = "nm-overlay-enable.service"
	// KeyfileDropIn (in NMConfDir) points NetworkManager at the merged dir. It is gated by
	// EnableTag, so NetworkManager only reads it in a boot where the helper verified the overlay.
	KeyfileDropIn = "90-nmoverlay.conf"
	// PersistentDropIn (in NMRunConfDir) names the persistent dir explicitly. NetworkManager
	// reads /run/NetworkManager/conf.d before /etc/NetworkManager/conf.d, so it is in effect
	// only while KeyfileDropIn is disabled: that is the fail-safe path.
	PersistentDropIn = "89-nmoverlay-persistent.conf"
	// NMServiceDropIn (in NetworkManager.service.d) orders NetworkManager after the helper
	// and hands it the environment file that enables KeyfileDropIn.
	NMServiceDropIn = "50-nmoverlay.conf"
	// EnableTag is the NM_CONFIG_ENABLE_TAG value that enables KeyfileDropIn ([.config] enable=env:...).
	EnableTag = "nmoverlay-verified"
	// TmpfilesConf creates the run dirs and the fail-safe defaults early in boot.
	TmpfilesConf = "/etc/tmpfiles.d/nmoverlay.conf"
	// SELinuxService loads SELinuxModuleFile before the overlay is mounted, on SELinux hosts.
	SELinuxService = "nm-overlay-selinux.service"
	// SELinuxModuleFile is the SELinux policy module (CIL) the overlay needs where the
	// mounting domain is confined (Debian's reference policy; on RHEL's targeted policy
	// mount_t is unconfined and the module changes nothing). Directly in /etc, as LayoutFile.
	SELinuxModuleFile = "/etc/" + SELinuxModuleName + ".cil"
	// SELinuxModuleName is the module's name in the policy store (semodule names a CIL
	// module after its file).
	SELinuxModuleName = "nmoverlay"
	// DefaultSELinuxContext is NetworkManager's keyfile type in both RHEL's targeted policy
	// and the reference policy Debian ships: the overlay's context= option gives it to every
	// file in the merged dir. Where SELinux is disabled the option is left out of the mount
	// (mount(8) drops it, and so does nm-overlay's own mount): the kernel would refuse it.
	DefaultSELinuxContext = "system_u:object_r:NetworkManager_etc_rw_t:s0"
	// LayoutFile records a non-default layout for the helper and for administrators' commands.
	// It sits directly in /etc so that removing it leaves no directory behind (MCO PR #2902).
	LayoutFile = "/etc/nmoverlay.json"
	// DefaultRunDir holds upper, work and merged, and the helper's state for this boot.
	// No '-' in it: systemd escapes '-' in mount unit names as \x2d, which once broke
	// enabling presets of such units (MCO PR #2543).
	DefaultRunDir = "/run/nmoverlay"
)

// SafetyOptions keep offline changes to the lower dir (MCO rewriting persistent keyfiles
// between boots) safe: no redirects, no index, no metacopy, no xino. Each is dropped where
// the kernel does not know it (KernelSafetyOptions).
var SafetyOptions = []string{"redirect_dir=off", "index=off", "metacopy=off", "xino=off"}

// Layout is where the overlay lives on a host.
type Layout struct {
	// Lower is the persistent keyfile dir, owned by MCO. Read-only through the overlay.
	Lower string `json:"lower"`
	// RunDir is a directory on tmpfs holding upper/, work/, merged/ and the boot's state.
	RunDir string `json:"runDir"`
	// SELinuxContext, when set, is given to the mount as context=, so NetworkManager may
	// read and write the merged files on SELinux hosts (MCO PR #2402), and the policy
	// module the mount needs is installed with it. Always written: "" (no context) differs
	// from the default.
	SELinuxContext string `json:"selinuxContext"`
}

// DefaultLayout is the layout every pool gets unless told otherwise.
func DefaultLayout() Layout {
	return Layout{Lower: NMDefaultKeyfile, RunDir: DefaultRunDir, SELinuxContext: DefaultSELinuxContext}
}

func (l Layout) Upper() string  { return filepath.Join(l.RunDir, "upper") }
func (l Layout) Work() string   { return filepath.Join(l.RunDir, "work") }
func (l Layout) Merged() string { return filepath.Join(l.RunDir, "merged") }

// DegradedMarker exists while the overlay is not verified in this boot. Its content is a
// JSON Degraded. The reconciler refuses to apply policies while it exists: they would land
// in the persistent dir.
func (l Layout) DegradedMarker() string { return filepath.Join(l.RunDir, "degraded") }

// NMEnvFile is read by NetworkManager.service (EnvironmentFile=-). The helper writes it
// only after the overlay verified; it enables KeyfileDropIn.
func (l Layout) NMEnvFile() string { return filepath.Join(l.RunDir, "NetworkManager.env") }

// LowerManifest is the lower dir's content as the helper saw it when it verified the
// overlay; a difference later means something wrote to lower while mounted.
func (l Layout) LowerManifest() string { return filepath.Join(l.RunDir, "lower.manifest") }

// BootIDFile is the boot ID of the boot the helper set the overlay up in, copied from
// KernelBootIDFile at setup. The handler takes it as the node's boot: a new one means an
// empty tmpfs layer to re-apply. It is the kernel's, read on the host, where a container
// sharing the host's kernel under another boot (a systemd-nspawn node) reads its own.
func (l Layout) BootIDFile() string { return filepath.Join(l.RunDir, "boot_id") }

// KernelBootIDFile is the running kernel's boot ID.
const KernelBootIDFile = "/proc/sys/kernel/random/boot_id"

// StateDir is nmoverlay's persistent state on a host: what a migration from
// kubernetes-nmstate keeps (internal/migration). On /var, which outlives boots and is
// not MCO's.
const StateDir = "/var/lib/nmoverlay"

// MigrationPlan is the plan the handler writes for a migration from kubernetes-nmstate:
// which persistent profiles the policies wrote. nm-overlay moves them at the next boot,
// before the overlay is mounted, when the file is there.
const MigrationPlan = StateDir + "/migration/plan.json"

// MigratedDir holds, per boot whose migration moved profiles, the profiles it moved and
// the plan it followed: the backup a rollback restores from.
const MigratedDir = StateDir + "/migrated"

// CheckpointRecord is where the handler's engine notes its open NetworkManager checkpoint
// (networkmanager.ApplyOptions.CheckpointRecord): on tmpfs, since checkpoints do not
// outlive a boot, in a dir of its own that the handler's pod may write.
func (l Layout) CheckpointRecord() string {
	return filepath.Join(l.RunDir, "handler", "checkpoint.json")
}

// NetplanScratch is the handler's dir where netplan's parser checks policies on a copy
// of the node's netplan configuration (the netplan backend), beside CheckpointRecord.
func (l Layout) NetplanScratch() string {
	return filepath.Join(l.RunDir, "handler", "netplan")
}

// MountUnit is the systemd mount unit's name, derived from Where= as systemd requires.
func (l Layout) MountUnit() string { return unit.UnitNamePathEscape(l.Merged()) + ".mount" }

func (l Layout) KeyfileDropInPath() string    { return filepath.Join(NMConfDir, KeyfileDropIn) }
func (l Layout) PersistentDropInPath() string { return filepath.Join(NMRunConfDir, PersistentDropIn) }

// KeyfileDropInContent is the NetworkManager drop-in that points it at the merged dir,
// enabled only when NM_CONFIG_ENABLE_TAG=EnableTag.
func (l Layout) KeyfileDropInContent() string {
	return "# Rendered by nmoverlay. NetworkManager reads this file only in a boot where\n" +
		"# nm-overlay verified the keyfile overlay (it then sets NM_CONFIG_ENABLE_TAG).\n" +
		"[.config]\nenable=env:" + EnableTag + "\n\n[keyfile]\npath=" + l.Merged() + "\n"
}

// PersistentDropInContent names the persistent dir for NetworkManager: the fail-safe path.
func (l Layout) PersistentDropInContent() string {
	return "# Written by nmoverlay: NetworkManager's persistent keyfile dir. Overridden by\n" +
		"# " + filepath.Join(NMConfDir, KeyfileDropIn) + " when the overlay is verified.\n" +
		"[keyfile]\npath=" + l.Lower + "\n"
}

// NMEnvContent is what the helper writes to NMEnvFile after verifying the overlay.
func NMEnvContent() string { return "NM_CONFIG_ENABLE_TAG=" + EnableTag + "\n" }

// MountOptions is the overlay's option string; safety lists the SafetyOptions to include.
func (l Layout) MountOptions(safety []string) string {
	opts := []string{"lowerdir=" + l.Lower, "upperdir=" + l.Upper(), "workdir=" + l.Work()}
	opts = append(opts, safety...)
	if l.SELinuxContext != "" {
		opts = append(opts, `context="`+l.SELinuxContext+`"`)
	}
	return strings.Join(opts, ",")
}

// Validate reports the first field that cannot work, naming it. A path is refused when
// NetworkManager or systemd would misread it, or when it would not be ephemeral / persistent
// as the layer needs (upper on /tmp is aged out by systemd-tmpfiles, upper under
// /run/NetworkManager collides with NetworkManager's own runtime profiles).
func (l Layout) Validate() error {
	if err := checkPath("lower", l.Lower); err != nil {
		return err
	}
	if err := checkPath("runDir", l.RunDir); err != nil {
		return err
	}
	switch {
	case under(l.Lower, "/run"), under(l.Lower, "/tmp"), under(l.Lower, "/dev"), under(l.Lower, "/proc"), under(l.Lower, "/sys"):
		return field.Invalid("lower", l.Lower, "is not persistent: the lower layer holds the keyfiles that must survive a reboot")
	case under(l.RunDir, "/run/NetworkManager"):
		return field.Invalid("runDir", l.RunDir, "is inside NetworkManager's runtime dir, whose system-connections shadow [keyfile] path")
	case under(l.RunDir, "/tmp"):
		return field.Invalid("runDir", l.RunDir, "is under /tmp, which systemd-tmpfiles ages out; the upper layer belongs under /run")
	case !under(l.RunDir, "/run") || l.RunDir == "/run":
		return field.Invalid("runDir", l.RunDir, "must be a directory below /run (tmpfs, emptied at every boot)")
	case under(l.Lower, l.RunDir) || under(l.RunDir, l.Lower):
		return field.Invalid("runDir", l.RunDir, "overlaps the lower dir "+l.Lower)
	}
	if strings.ContainsAny(l.SELinuxContext, "\",\n ") {
		return field.Invalid("selinuxContext", l.SELinuxContext, "must not contain quotes, commas or whitespace")
	}
	if l.SELinuxContext != "" && strings.Count(l.SELinuxContext, ":") < 3 {
		return field.Invalid("selinuxContext", l.SELinuxContext, "is not an SELinux context (user:role:type:level)")
	}
	return nil
}

func checkPath(path, p string) error {
	switch {
	case p == "":
		return field.Invalid(path, p, "is empty")
	case !filepath.IsAbs(p):
		return field.Invalid(path, p, "is not an absolute path")
	case filepath.Clean(p) != p:
		return field.Invalid(path, p, "is not a clean path (want "+filepath.Clean(p)+")")
	case strings.ContainsAny(p, ",:=\\\"' \t\n"):
		// The overlay's option parser splits on ',' and ':' and does not unescape.
		return field.Invalid(path, p, "contains a character overlayfs options or unit files cannot carry (one of , : = \\ quotes whitespace)")
	case p == NMRunProfiles || under(p, NMRunProfiles):
		return field.Invalid(path, p, "is NetworkManager's in-memory profile dir")
	}
	return nil
}

// under reports whether p is dir or below it.
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// ParseLayout reads a layout file's content; empty means the default layout (the
// handler's pod mounts the file with hostPath type FileOrCreate, which leaves an empty
// file on a node the MachineConfig has not reached yet).
func ParseLayout(b []byte) (Layout, error) {
	l := DefaultLayout()
	if strings.TrimSpace(string(b)) == "" {
		return l, nil
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return l, err
	}
	// Releases before 0.4.0 left selinuxContext out when it was "", their default: such a
	// file describes a mount without context=, not today's default.
	var keys map[string]json.RawMessage
	if json.Unmarshal(b, &keys) == nil {
		if _, ok := keys["selinuxContext"]; !ok {
			l.SELinuxContext = ""
		}
	}
	return l, l.Validate()
}

// MarshalLayoutFile is the content of LayoutFile for l.
func (l Layout) MarshalLayoutFile() []byte {
	b, _ := json.MarshalIndent(l, "", "  ")
	return append(b, '\n')
}

// TmpfilesContent is the tmpfiles.d config that prepares every boot before the helper
// runs: the run dirs, and the fail-safe state (degraded until verified, NetworkManager on
// the persistent dir). Only the helper moves the host out of that state, so a missing or
// crashing helper leaves NetworkManager on its persistent profiles.
func (l Layout) TmpfilesContent() string {
	var b strings.Builder
	b.WriteString("# Rendered by nmoverlay: the keyfile overlay's run dirs and fail-safe defaults.\n")
	b.WriteString("# Type Path Mode User Group Age Argument\n")
	for _, d := range []string{l.RunDir, l.Upper(), l.Work(), l.Merged()} {
		fmt.Fprintf(&b, "d %s 0700 root root -\n", d)
	}
	fmt.Fprintf(&b, "f %s 0644 root root - %s\n", l.DegradedMarker(), tmpfilesEscape(string(NotVerifiedMarker())))
	fmt.Fprintf(&b, "d %s 0755 root root -\n", NMRunConfDir)
	fmt.Fprintf(&b, "f %s 0644 root root - %s\n", l.PersistentDropInPath(), tmpfilesEscape(l.PersistentDropInContent()))
	return b.String()
}

// tmpfilesEscape turns content into one tmpfiles.d argument (C-style escapes are interpreted).
func tmpfilesEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\t", `\t`)
	s = r.Replace(s)
	if strings.HasPrefix(s, " ") {
		s = `\x20` + s[1:]
	}
	return s
}

// ReasonNotVerified is the reason of the degraded marker tmpfiles writes at boot (overlay.Degraded);
// only a verified setup removes it.
const ReasonNotVerified = "nm-overlay has not verified the keyfile overlay in this boot (helper not installed, not run, or failed before writing a reason); NetworkManager uses the persistent keyfile dir"

// NotVerifiedMarker is the degraded marker's boot-time content, as overlay.Degraded
// encodes it.
func NotVerifiedMarker() []byte {
	b, _ := json.Marshal(struct {
		Reason string `json:"reason"`
	}{ReasonNotVerified})
	return b
}

// MachineConfigFiles are the host paths the MachineConfig writes; MCO owns them, so only
// removing the MachineConfig may remove them (a helper that touches them degrades the node).
func (l Layout) MachineConfigFiles() []string {
	files := []string{
		l.KeyfileDropInPath(),
		TmpfilesConf,
		LayoutFile,
		filepath.Join(SystemdUnitDir, l.MountUnit()),
		filepath.Join(SystemdUnitDir, HelperService),
		filepath.Join(SystemdUnitDir, MigrateService),
		filepath.Join(SystemdUnitDir, EnablePath),
		filepath.Join(SystemdUnitDir, EnableService),
		l.NMServiceDropInPath(),
	}
	if l.SELinuxContext != "" {
		files = append(files, SELinuxModuleFile, filepath.Join(SystemdUnitDir, SELinuxService))
	}
	return files
}

// NMServiceDropInPath is the NetworkManager.service drop-in the MachineConfig writes.
func (l Layout) NMServiceDropInPath() string {
	return filepath.Join(SystemdUnitDir, NMService+".d", NMServiceDropIn)
}

// OVSDBService is Open vSwitch's database unit: the helper runs after it, so that it can
// remove at boot the OVN bridge mappings nmoverlay made in an earlier one.
const OVSDBService = "ovsdb-server.service"
