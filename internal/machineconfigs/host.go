package machineconfigs

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/nmoverlay/nmoverlay/internal/paths"
)

// File is a file the MachineConfig writes on the host.
type File struct {
	Path     string
	Mode     os.FileMode
	Contents string
}

// Unit is a systemd unit the MachineConfig writes: a whole unit, or drop-ins only.
type Unit struct {
	Name     string
	Contents string // empty for a drop-in-only entry
	Dropins  []Dropin
}

// Dropin is a drop-in for a unit.
type Dropin struct {
	Name     string
	Contents string
}

// Path is where MCO writes the unit file on the host ("" for a drop-in-only entry).
func (u Unit) Path() string {
	if u.Contents == "" {
		return ""
	}
	return filepath.Join(paths.SystemdUnitDir, u.Name)
}

// DropinPath is where MCO writes one of the unit's drop-ins on the host.
func (u Unit) DropinPath(d Dropin) string {
	return filepath.Join(paths.SystemdUnitDir, u.Name+".d", d.Name)
}

// fileMode is the mode of every file and unit the MachineConfig writes (420 in Ignition's JSON).
const fileMode os.FileMode = 0o644

// Files are the files the MachineConfig writes (root-owned, mode 0644, overwritten), for
// validated options.
func Files(o Options) []File {
	l := o.WithDefaults().Layout
	files := []File{
		{Path: l.KeyfileDropInPath(), Mode: fileMode, Contents: l.KeyfileDropInContent()},
		{Path: paths.TmpfilesConf, Mode: fileMode, Contents: l.TmpfilesContent()},
		{Path: paths.LayoutFile, Mode: fileMode, Contents: string(l.MarshalLayoutFile())},
	}
	if l.SELinuxContext != "" {
		files = append(files, File{Path: paths.SELinuxModuleFile, Mode: fileMode, Contents: SELinuxModule()})
	}
	return files
}

// Units are the units the MachineConfig writes, for validated options. None is enabled:
// the NetworkManager drop-in pulls the helper in, the helper pulls the mount in. No preset
// or [Install] section is involved, so nothing depends on how a systemd version enables
// units (and an escaped mount unit name never meets `systemctl enable`, MCO PR #2543).
func Units(o Options) []Unit {
	o = o.WithDefaults()
	l := o.Layout
	// With a context, the mounting domain must be allowed what overlayfs does for
	// NetworkManager: the policy module is loaded first (Wants: without it the mount or the
	// first write is refused, and nm-overlay then keeps NetworkManager on the persistent dir).
	selinuxWants := ""
	if l.SELinuxContext != "" {
		selinuxWants = " " + paths.SELinuxService
	}
	mount := lines(
		"# Rendered by nmoverlay. Nothing requires this mount on purpose (no",
		"# RequiredBy="+paths.NMService+"): NetworkManager's keyfile path only switches to the merged",
		"# dir in a boot where nm-overlay verified this mount, so a failed mount must not keep",
		"# NetworkManager from starting.",
		"[Unit]",
		"Description=NetworkManager keyfile overlay (persistent lower, tmpfs upper)",
		"Documentation=https://github.com/nmoverlay/nmoverlay",
		"DefaultDependencies=no",
		// tmpfiles-setup creates upper/ and work/. It runs after local-fs.target, so this
		// mount is not ordered before local-fs.target (that would be a cycle).
		"Requires=systemd-tmpfiles-setup.service",
		// A migration from kubernetes-nmstate moves profiles out of the lower dir: only
		// before the overlay is mounted on it. Wants: a failed move must not keep the
		// overlay off.
		"Wants="+paths.MigrateService+selinuxWants,
		"After=systemd-tmpfiles-setup.service "+paths.MigrateService+selinuxWants,
		"Before="+paths.HelperService+" "+paths.NMService+" umount.target",
		"Conflicts=umount.target",
		"",
		"[Mount]",
		"What=overlay",
		"Where="+l.Merged(),
		"Type=overlay",
		"Options="+l.MountOptions(o.SafetyOptions),
	)
	helper := lines(
		"# Rendered by nmoverlay. Pulled in by "+paths.NMService+" ("+paths.NMServiceDropIn+").",
		"# Until the handler DaemonSet installs the helper this unit is skipped: NetworkManager",
		"# then starts on the persistent keyfile dir, the node is marked degraded, and",
		"# "+paths.EnablePath+" enables the overlay once the helper appears.",
		"[Unit]",
		"Description=Set up and verify the NetworkManager keyfile overlay",
		"Documentation=https://github.com/nmoverlay/nmoverlay",
		"Wants="+l.MountUnit(),
		// After Open vSwitch's database, where it runs: it removes the OVN bridge mappings
		// nmoverlay made in an earlier boot (OVSDB is persistent).
		"After="+l.MountUnit()+" systemd-tmpfiles-setup.service "+paths.OVSDBService,
		"Before="+paths.NMService,
		"ConditionFileIsExecutable="+paths.HelperBinary,
		"",
		"[Service]",
		"Type=oneshot",
		"RemainAfterExit=yes",
		"NotifyAccess=main",
		"ExecStart="+paths.HelperBinary+" setup",
	)
	migrate := lines(
		"# Rendered by nmoverlay. Pulled in by the overlay's mount; runs only in a boot that finds",
		"# the plan the handler writes when a node moves from kubernetes-nmstate (nmoverlay migrate).",
		"[Unit]",
		"Description=Move the persistent profiles kubernetes-nmstate's policies wrote out of the keyfile dir",
		"Documentation=https://github.com/nmoverlay/nmoverlay",
		"DefaultDependencies=no",
		"After=local-fs.target",
		"Before="+l.MountUnit()+" "+paths.HelperService+" "+paths.NMService+" shutdown.target",
		"Conflicts=shutdown.target",
		"ConditionPathExists="+paths.MigrationPlan,
		"ConditionFileIsExecutable="+paths.HelperBinary,
		"",
		"[Service]",
		"Type=oneshot",
		"RemainAfterExit=yes",
		"ExecStart="+paths.HelperBinary+" migrate-profiles",
	)
	enablePath := lines(
		"# Rendered by nmoverlay. Pulled in by "+paths.NMService+" ("+paths.NMServiceDropIn+").",
		"# The MachineConfig usually reaches a node before the handler DaemonSet installs the",
		"# helper: once it appears, "+paths.EnableService+" moves this boot's NetworkManager onto",
		"# the overlay, without a reboot. In a boot that had the helper, that is a no-op.",
		"[Unit]",
		"Description=Enable the NetworkManager keyfile overlay once nm-overlay is installed",
		"Documentation=https://github.com/nmoverlay/nmoverlay",
		"",
		"[Path]",
		"PathExists="+paths.HelperBinary,
		"Unit="+paths.EnableService,
	)
	enable := lines(
		"# Rendered by nmoverlay. Started by "+paths.EnablePath+".",
		"[Unit]",
		"Description=Enable the NetworkManager keyfile overlay in a boot that started without it",
		"Documentation=https://github.com/nmoverlay/nmoverlay",
		// After NetworkManager: it restarts a NetworkManager that runs, and must not miss
		// one that is starting (it would have read the environment without the enable file).
		"After="+paths.HelperService+" "+paths.NMService,
		"ConditionFileIsExecutable="+paths.HelperBinary,
		"",
		"[Service]",
		"Type=oneshot",
		"RemainAfterExit=yes",
		// '-': a failure is in the degraded marker and the journal; a failed unit would make
		// the path unit start it again at once, and again.
		"ExecStart=-"+paths.HelperBinary+" enable",
	)
	nm := lines(
		"# Rendered by nmoverlay: run nm-overlay first, and hand NetworkManager the environment",
		"# that enables the overlay's keyfile path once nm-overlay verified it in this boot;",
		"# "+paths.EnablePath+" enables it later in a boot that started without the helper.",
		"[Unit]",
		"Wants="+paths.HelperService+" "+paths.EnablePath,
		"After="+paths.HelperService,
		"",
		"[Service]",
		"EnvironmentFile=-"+l.NMEnvFile(),
	)
	selinuxRunDir := strings.TrimSuffix(paths.SELinuxService, ".service")
	selinux := lines(
		"# Rendered by nmoverlay. Pulled in by the overlay's mount on a host with SELinux: loads",
		"# the policy module the overlay needs ("+paths.SELinuxModuleFile+") unless the policy",
		"# store holds the same one (semodule -E extracts it as installed): installing rebuilds",
		"# the whole policy, seconds that only a changed module should cost a boot. The",
		"# distribution's own tools, not the helper: this runs before the handler installs it.",
		"[Unit]",
		"Description=Load the SELinux policy module of the NetworkManager keyfile overlay",
		"Documentation=https://github.com/nmoverlay/nmoverlay",
		"DefaultDependencies=no",
		"After=local-fs.target",
		"Before="+l.MountUnit()+" "+paths.HelperService+" "+paths.NMService+" shutdown.target",
		"Conflicts=shutdown.target",
		"ConditionSecurity=selinux",
		"",
		"[Service]",
		"Type=oneshot",
		"RemainAfterExit=yes",
		"RuntimeDirectory="+selinuxRunDir,
		"WorkingDirectory=%t/"+selinuxRunDir,
		"ExecStart=/bin/sh -c 'semodule -E "+paths.SELinuxModuleName+" >/dev/null 2>&1 && cmp -s "+paths.SELinuxModuleName+".cil "+paths.SELinuxModuleFile+
			" || semodule -i "+paths.SELinuxModuleFile+"'",
	)
	units := []Unit{
		{Name: l.MountUnit(), Contents: mount},
		{Name: paths.HelperService, Contents: helper},
		{Name: paths.MigrateService, Contents: migrate},
		{Name: paths.EnablePath, Contents: enablePath},
		{Name: paths.EnableService, Contents: enable},
		{Name: paths.NMService, Dropins: []Dropin{{Name: paths.NMServiceDropIn, Contents: nm}}},
	}
	if l.SELinuxContext != "" {
		units = append(units, Unit{Name: paths.SELinuxService, Contents: selinux})
	}
	return units
}

// Paths lists every host path the MachineConfig writes: files, unit files and drop-ins.
func Paths(o Options) []string {
	var paths []string
	for _, f := range Files(o) {
		paths = append(paths, f.Path)
	}
	for _, u := range Units(o) {
		if p := u.Path(); p != "" {
			paths = append(paths, p)
		}
		for _, d := range u.Dropins {
			paths = append(paths, u.DropinPath(d))
		}
	}
	return paths
}

func lines(l ...string) string { return strings.Join(l, "\n") + "\n" }
