package machineconfigs

import (
	"os"
	"strings"

	"github.com/nmoverlay/nmoverlay/overlay"
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

// HostFiles are the files the MachineConfig writes, for validated options.
func HostFiles(o Options) []File {
	l := o.WithDefaults().Layout
	return []File{
		{Path: l.KeyfileDropInPath(), Mode: 0o644, Contents: l.KeyfileDropInContent()},
		{Path: overlay.TmpfilesConf, Mode: 0o644, Contents: l.TmpfilesContent()},
		{Path: overlay.LayoutFile, Mode: 0o644, Contents: string(l.MarshalLayoutFile())},
	}
}

// HostUnits are the units the MachineConfig writes. None is enabled: the NetworkManager
// drop-in pulls the helper in, the helper pulls the mount in. No preset or [Install]
// section is involved, so nothing depends on how a systemd version enables units.
func HostUnits(o Options) []Unit {
	o = o.WithDefaults()
	l := o.Layout
	mount := lines(
		"# Rendered by nmoverlay. Nothing requires this mount on purpose (no",
		"# RequiredBy=NetworkManager.service): NetworkManager reads the merged dir only in a boot",
		"# where nm-overlay verified this mount, so a failed mount must not stop NetworkManager.",
		"[Unit]",
		"Description=NetworkManager keyfile overlay (persistent lower, tmpfs upper)",
		"Documentation=https://github.com/nmoverlay/nmoverlay",
		"DefaultDependencies=no",
		// tmpfiles-setup creates upper/work; it runs after local-fs.target, so this mount
		// must not be ordered before local-fs.target.
		"Requires=systemd-tmpfiles-setup.service",
		"After=systemd-tmpfiles-setup.service",
		"Before="+overlay.HelperService+" "+overlay.NMService+" umount.target",
		"Conflicts=umount.target",
		"",
		"[Mount]",
		"What=overlay",
		"Where="+l.Merged(),
		"Type=overlay",
		"Options="+l.MountOptions(o.SafetyOptions),
	)
	helper := lines(
		"# Rendered by nmoverlay. Pulled in by "+overlay.NMService+" ("+overlay.NMServiceDropIn+").",
		"# Until the handler DaemonSet installs the helper this unit is skipped: NetworkManager",
		"# then runs on the persistent keyfile dir and the node stays marked degraded.",
		"[Unit]",
		"Description=Set up and verify the NetworkManager keyfile overlay",
		"Documentation=https://github.com/nmoverlay/nmoverlay",
		"Wants="+l.MountUnit(),
		"After="+l.MountUnit()+" systemd-tmpfiles-setup.service",
		"Before="+overlay.NMService,
		"ConditionFileIsExecutable="+overlay.HelperBinary,
		"",
		"[Service]",
		"Type=oneshot",
		"RemainAfterExit=yes",
		"NotifyAccess=main",
		"ExecStart="+overlay.HelperBinary+" setup",
	)
	nm := lines(
		"# Rendered by nmoverlay: run nm-overlay first, and hand NetworkManager the environment",
		"# that enables the overlay's keyfile path once nm-overlay verified it in this boot.",
		"[Unit]",
		"Wants="+overlay.HelperService,
		"After="+overlay.HelperService,
		"",
		"[Service]",
		"EnvironmentFile=-"+l.NMEnvFile(),
	)
	return []Unit{
		{Name: l.MountUnit(), Contents: mount},
		{Name: overlay.HelperService, Contents: helper},
		{Name: overlay.NMService, Dropins: []Dropin{{Name: overlay.NMServiceDropIn, Contents: nm}}},
	}
}

func lines(l ...string) string { return strings.Join(l, "\n") + "\n" }
