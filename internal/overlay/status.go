package overlay

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/nmoverlay/nmoverlay/internal/keyfile"
	"github.com/nmoverlay/nmoverlay/internal/paths"
)

// Change is what the upper layer does to one entry of the lower layer.
type Change string

const (
	Added    Change = "added"    // only in upper: an ephemeral profile
	Modified Change = "modified" // copied up: the persistent profile is shadowed until reboot
	Deleted  Change = "deleted"  // whiteout: the persistent profile is hidden until reboot
	Opaque   Change = "opaque"   // a directory whose lower content is hidden as a whole
)

// ProfileChange is one file of the upper layer and the profile it holds (for deleted
// profiles, the hidden lower one).
type ProfileChange struct {
	File      string            `json:"file"`
	Change    Change            `json:"change"`
	ID        string            `json:"id,omitempty"`
	UUID      string            `json:"uuid,omitempty"`
	Type      string            `json:"type,omitempty"`
	Interface string            `json:"interface,omitempty"`
	User      map[string]string `json:"user,omitempty"` // the [user] section: ownership markers live here
}

// Status lists what the upper layer adds, modifies and hides relative to lower, sorted by file.
// It reads the layers directly, so it works whether or not NetworkManager runs.
func Status(l paths.Layout) ([]ProfileChange, error) {
	changes := []ProfileChange{}
	upper := l.Upper()
	err := filepath.WalkDir(upper, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == upper {
			return nil
		}
		rel, _ := filepath.Rel(upper, path)
		lowerPath := filepath.Join(l.Lower, rel)
		c := ProfileChange{File: rel}
		info, err := os.Lstat(path)
		if err != nil {
			return err
		}
		switch {
		case isWhiteout(info):
			c.Change = Deleted
			describeProfile(&c, lowerPath)
		case info.IsDir():
			if !isOpaque(path) {
				return nil
			}
			c.Change = Opaque
		default:
			c.Change = Added
			if _, err := os.Lstat(lowerPath); err == nil {
				c.Change = Modified
			}
			describeProfile(&c, path)
		}
		changes = append(changes, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].File < changes[j].File })
	return changes, nil
}

// isWhiteout: overlayfs hides a lower entry with a 0/0 character device in upper.
func isWhiteout(info fs.FileInfo) bool {
	if info.Mode()&fs.ModeCharDevice == 0 {
		return false
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	return st.Rdev == 0
}

func isOpaque(dir string) bool {
	buf := make([]byte, 8)
	n, err := unix.Lgetxattr(dir, "trusted.overlay.opaque", buf)
	return err == nil && n > 0 && buf[0] == 'y'
}

func describeProfile(c *ProfileChange, path string) {
	kf, err := keyfile.Read(path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			c.ID = "(unreadable: " + err.Error() + ")"
		}
		return
	}
	c.ID = kf.Get("connection", "id")
	c.UUID = kf.Get("connection", "uuid")
	c.Type = kf.Get("connection", "type")
	c.Interface = kf.Get("connection", "interface-name")
	if u := kf["user"]; len(u) > 0 {
		c.User = u
	}
}
