package overlay

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/nmoverlay/nmoverlay/internal/paths"
)

// Leftovers lists what of the overlay is still on the host: MachineConfig files, this
// boot's state, the helper binary and an empty drop-in dir. Empty after a clean removal.
func Leftovers(l paths.Layout) []string {
	var left []string
	for _, p := range append(l.MachineConfigFiles(), l.RunDir, l.PersistentDropInPath(), paths.HelperBinary) {
		if _, err := os.Lstat(p); err == nil {
			left = append(left, p)
		}
	}
	if dir := filepath.Dir(l.NMServiceDropInPath()); isEmptyDir(dir) {
		left = append(left, dir)
	}
	if selinuxModuleInstalled() {
		left = append(left, "SELinux policy module "+paths.SELinuxModuleName)
	}
	return left
}

// Uninstall removes what the MachineConfig's removal leaves behind: this boot's state under
// /run, the /run drop-in, an empty NetworkManager.service.d and (unless keepBinary) the
// helper. It refuses while any MachineConfig file is still present: remove the
// MachineConfig first and let the pool roll out.
func Uninstall(l paths.Layout, keepBinary bool) ([]string, error) {
	var owned []string
	for _, p := range l.MachineConfigFiles() {
		if _, err := os.Lstat(p); err == nil {
			owned = append(owned, p)
		}
	}
	if len(owned) > 0 {
		return nil, fmt.Errorf("the nmoverlay MachineConfig is still applied on this host (%s): delete the MachineConfig and let the pool roll out first",
			strings.Join(owned, ", "))
	}
	var removed []string
	var errs []error
	for _, mp := range []string{l.Merged(), l.RunDir} {
		for isMountpoint(mp) {
			if err := unix.Unmount(mp, 0); err != nil {
				return removed, fmt.Errorf("unmounting %s: %w", mp, err)
			}
			removed = append(removed, "mount "+mp)
		}
	}
	targets := []string{l.RunDir, l.PersistentDropInPath()}
	if !keepBinary {
		targets = append(targets, paths.HelperBinary)
	}
	for _, p := range targets {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, p)
	}
	if dir := filepath.Dir(l.NMServiceDropInPath()); isEmptyDir(dir) {
		if err := os.Remove(dir); err != nil {
			errs = append(errs, err)
		} else {
			removed = append(removed, dir)
		}
	}
	if selinuxModuleInstalled() {
		if err := removeSELinuxModule(); err != nil {
			errs = append(errs, err)
		} else {
			removed = append(removed, "SELinux policy module "+paths.SELinuxModuleName)
		}
	}
	return removed, errors.Join(errs...)
}

func isEmptyDir(dir string) bool {
	entries, err := os.ReadDir(dir)
	return err == nil && len(entries) == 0
}
