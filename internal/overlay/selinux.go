package overlay

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/nmoverlay/nmoverlay/internal/paths"
)

// CheckSELinuxLabel is the check that NetworkManager's keyfiles in the merged dir carry the
// layout's SELinux context, on a host where SELinux is enabled.
const CheckSELinuxLabel = "selinux-label"

// selinuxFS is where the kernel's SELinux filesystem is mounted when SELinux is enabled.
var selinuxFS = "/sys/fs/selinux"

// SELinuxEnabled says whether the kernel runs SELinux (enforcing or permissive).
func SELinuxEnabled() bool {
	_, err := os.Stat(filepath.Join(selinuxFS, "enforce"))
	return err == nil
}

// FileLabel is path's SELinux label, as its security.selinux attribute holds it.
func FileLabel(path string) (string, error) {
	buf := make([]byte, 256)
	n, err := unix.Lgetxattr(path, "security.selinux", buf)
	if err != nil {
		return "", fmt.Errorf("reading the SELinux label of %s: %w", path, err)
	}
	return strings.TrimRight(string(buf[:n]), "\x00"), nil
}

// verifySELinux checks the merged dir's label where SELinux is enabled; elsewhere it adds
// no check (the mount then has no context=: mount(8) and mountOverlay leave it out).
func verifySELinux(l paths.Layout, add func(string, bool, string, ...any)) {
	if !SELinuxEnabled() {
		return
	}
	label, err := FileLabel(l.Merged())
	if err != nil {
		add(CheckSELinuxLabel, false, "%v", err)
		return
	}
	ok, detail := judgeLabel(l.SELinuxContext, label)
	add(CheckSELinuxLabel, ok, "%s", detail)
}

// judgeLabel decides whether the merged dir carries the layout's context, which the mount's
// context= option gives every file in it: a mount that lost it is refused, naming the label.
// A layout without a context (rendered with --selinux-context "", or by a release before
// 0.4.0) passes, and says what it costs: keyfiles NetworkManager creates take its runtime
// type, and where the mounting domain is confined (Debian's reference policy) overlayfs is
// denied creating them; RHEL's targeted policy leaves mount_t unconfined, so an overlay
// rendered so before 0.4.0 keeps working there until its MachineConfig is rendered again.
func judgeLabel(want, got string) (bool, string) {
	switch {
	case want == "":
		return true, fmt.Sprintf("no SELinux context on the mount: the merged dir is labelled %s, and where mount_t is confined "+
			"NetworkManager's new keyfiles are denied (render the MachineConfig again: its default is NetworkManager's keyfile type)", got)
	case got != want:
		return false, fmt.Sprintf("the merged dir is labelled %s, want %s (the mount's context= option)", got, want)
	default:
		return true, "merged dir labelled " + got
	}
}

// selinuxModuleInstalled says whether the policy store holds the overlay's module.
func selinuxModuleInstalled() bool {
	if !SELinuxEnabled() {
		return false
	}
	out, err := exec.Command("semodule", "-l").Output()
	return err == nil && slices.Contains(strings.Fields(string(out)), paths.SELinuxModuleName)
}

// removeSELinuxModule takes the overlay's module out of the policy store: removing the
// MachineConfig removes its file, not what the store loaded from it.
func removeSELinuxModule() error {
	if out, err := exec.Command("semodule", "-r", paths.SELinuxModuleName).CombinedOutput(); err != nil {
		return fmt.Errorf("semodule -r %s: %w: %s", paths.SELinuxModuleName, err, strings.TrimSpace(string(out)))
	}
	return nil
}
