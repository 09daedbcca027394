package overlay

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/nmoverlay/nmoverlay/internal/paths"
)

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// fsType is the statfs magic of the filesystem holding path.
func fsType(path string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Type), nil
}

func onTmpfs(path string) (bool, error) {
	t, err := fsType(path)
	return t == unix.TMPFS_MAGIC, err
}

// mountAt returns the topmost mount whose mount point is exactly path, or nil.
func mountAt(path string) (*mountinfo.Info, error) {
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(path))
	if err != nil {
		return nil, err
	}
	if len(mounts) == 0 {
		return nil, nil
	}
	// Stacked mounts: the last one listed is on top.
	return mounts[len(mounts)-1], nil
}

// KernelSafetyOptions returns the paths.SafetyOptions the running kernel's overlayfs knows,
// judged by its module parameters (present for built-in overlayfs too).
func KernelSafetyOptions() []string {
	param := map[string]string{
		"redirect_dir=off": "redirect_dir",
		"index=off":        "index",
		"metacopy=off":     "metacopy",
		"xino=off":         "xino_auto",
	}
	var known []string
	for _, o := range paths.SafetyOptions {
		if _, err := os.Stat(filepath.Join("/sys/module/overlay/parameters", param[o])); err == nil {
			known = append(known, o)
		}
	}
	return known
}

// LowerInUse says whether an overlay mounted on this host has dir as a lower layer:
// overlayfs does not allow changing a lower dir under a mount.
func LowerInUse(dir string) (bool, error) {
	mounts, err := mountinfo.GetMounts(mountinfo.FSTypeFilter("overlay"))
	if err != nil {
		return false, err
	}
	for _, m := range mounts {
		for _, lower := range strings.Split(overlayLayers(m.VFSOptions)["lowerdir"], ":") {
			if filepath.Clean(lower) == filepath.Clean(dir) {
				return true, nil
			}
		}
	}
	return false, nil
}
