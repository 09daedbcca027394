package machineconfigs

import (
	"fmt"
	"strings"

	"github.com/nmoverlay/nmoverlay/internal/paths"
)

// SELinuxRule is one allow rule of the policy module, with why the overlay needs it.
type SELinuxRule struct {
	Source, Target, Class string
	Perms                 []string
	Why                   string
}

// SELinuxBlock is rules that are enabled together, only where the policy declares every
// type they name (a CIL optional block): RHEL's targeted policy and the reference policy
// name some types differently, and a module naming a missing type would not install.
type SELinuxBlock struct {
	Name  string
	Rules []SELinuxRule
}

// SELinuxBlocks are the module's rules: only what overlayfs does for NetworkManager on its
// layers, on NetworkManager's keyfile type and mount_t's own runtime type, with which the VM
// tier's enforcing guest (Debian 13, reference policy) shows no denial while NetworkManager
// adds, rewrites, deletes and restores keyfiles through the overlay. overlayfs checks its
// access to the layers with the credentials of whoever mounted it, mount_t, on every
// access made through the merged dir; the reference policy lets mount_t mount the overlay
// with context= but not touch NetworkManager's keyfiles. RHEL's targeted policy makes
// mount_t unconfined (mount.te: unconfined_domain(mount_t)), so there the module adds
// nothing. The README lists each rule against both policies.
var SELinuxBlocks = []SELinuxBlock{
	{Name: "nmoverlay_keyfiles", Rules: []SELinuxRule{
		{"mount_t", "NetworkManager_etc_rw_t", "filesystem", []string{"relabelfrom"},
			"mount the overlay with context=, whose superblock carries that label when the mount applies it"},
		{"mount_t", "NetworkManager_etc_rw_t", "dir", []string{"read"},
			"list the persistent keyfile dir (the lower layer) when NetworkManager reads the merged dir"},
		{"mount_t", "NetworkManager_etc_rw_t", "file", []string{"getattr", "open", "read"},
			"read a persistent keyfile, to copy it up into the tmpfs when NetworkManager changes it"},
		{"mount_t", "NetworkManager_etc_rw_t", "file", []string{"create", "write", "setattr", "rename", "unlink"},
			"create, write, rename and delete keyfiles in the tmpfs layer as NetworkManager does in the merged dir (its files carry the context= label)"},
	}},
	// A whiteout (a 0/0 character device) hides a deleted persistent keyfile. overlayfs
	// makes it in its work dir, which mount_t labels with its own runtime type, and links
	// or renames it into the upper dir.
	{Name: "nmoverlay_whiteouts", Rules: []SELinuxRule{
		{"mount_t", "mount_runtime_t", "chr_file", []string{"create", "getattr", "link", "rename", "unlink"},
			"make, move and remove the whiteouts of deleted persistent keyfiles (reference policy's name)"},
	}},
	{Name: "nmoverlay_whiteouts_var_run", Rules: []SELinuxRule{
		{"mount_t", "mount_var_run_t", "chr_file", []string{"create", "getattr", "link", "rename", "unlink"},
			"the same, under the name RHEL's targeted policy gives mount_t's runtime files"},
	}},
}

// SELinuxModule is the CIL module the MachineConfig installs (SELinuxModuleFile).
func SELinuxModule() string {
	var b strings.Builder
	b.WriteString("; Rendered by nmoverlay: what overlayfs needs to do, as the domain that mounted the\n" +
		"; NetworkManager keyfile overlay (mount_t), for NetworkManager. Loaded by " + paths.SELinuxService + ".\n")
	for _, block := range SELinuxBlocks {
		fmt.Fprintf(&b, "(optional %s\n", block.Name)
		for _, r := range block.Rules {
			fmt.Fprintf(&b, "    ; %s\n    (allow %s %s (%s (%s)))\n", r.Why, r.Source, r.Target, r.Class, strings.Join(r.Perms, " "))
		}
		b.WriteString(")\n")
	}
	return b.String()
}
