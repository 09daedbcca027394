// Package atomicfile writes files so that a crash or a power cut leaves either the old
// content or the new one, never a part (MCO's pkg/daemon file writers do the same).
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path with data in one rename, so a crash never leaves half a
// file; the data is synced before the rename and the directory after it (MCO's file
// writers do the same), so the new name never points at blocks not yet written and the
// rename itself survives a power cut.
func Write(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	// The rename is durable only once the directory is on disk too (as MCO's writer does).
	return SyncDir(filepath.Dir(path))
}

// SyncDir puts dir's entries on disk: a rename, or a removal, in it survives a power cut.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
