package machineconfigs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	v3_5 "github.com/coreos/ignition/v2/config/v3_5"
	"github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/vincent-petithory/dataurl"

	"github.com/nmoverlay/nmoverlay/internal/paths"
)

// ApplyIgnition writes an Ignition config's files, units and drop-ins under root the way
// MCO's daemon does on a node. It covers what this project renders (inline files, unit
// contents and drop-ins) and refuses anything else, so tests and the demo put exactly the
// rendered config on their nodes.
func ApplyIgnition(root string, config []byte) error {
	cfg, err := parseAny(config)
	if err != nil {
		return err
	}
	for i, f := range cfg.Storage.Files {
		if f.Contents.Source == nil || len(f.Append) > 0 {
			return fmt.Errorf("storage.files[%d] (%s): only inline contents are supported", i, f.Path)
		}
		data, err := dataurl.DecodeString(*f.Contents.Source)
		if err != nil {
			return fmt.Errorf("storage.files[%d] (%s): %w", i, f.Path, err)
		}
		mode := os.FileMode(0o644)
		if f.Mode != nil {
			mode = os.FileMode(*f.Mode)
		}
		if err := writeUnder(root, f.Path, data.Data, mode); err != nil {
			return err
		}
	}
	for i, u := range cfg.Systemd.Units {
		if (u.Enabled != nil && *u.Enabled) || (u.Mask != nil && *u.Mask) {
			return fmt.Errorf("systemd.units[%d] (%s): enabling or masking is not supported", i, u.Name)
		}
		if u.Contents != nil {
			if err := writeUnder(root, filepath.Join(paths.SystemdUnitDir, u.Name), []byte(*u.Contents), 0o644); err != nil {
				return err
			}
		}
		for _, d := range u.Dropins {
			if d.Contents == nil {
				continue
			}
			if err := writeUnder(root, filepath.Join(paths.SystemdUnitDir, u.Name+".d", d.Name), []byte(*d.Contents), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// RemoveIgnition deletes under root what ApplyIgnition wrote, as MCO's daemon does when a
// MachineConfig is removed (deleteStaleData): the files, the unit files and the drop-ins.
// Like MCO it leaves every directory in place, including a drop-in dir that is now empty
// (/etc/systemd/system/NetworkManager.service.d): `nm-overlay uninstall` removes that one.
// Unlike MCO it does not also delete /etc/systemd/system/NetworkManager.service, which MCO
// removes for a drop-in-only unit entry too; this project never writes that file and MCO
// finds none on RHCOS.
func RemoveIgnition(root string, config []byte) error {
	cfg, err := parseAny(config)
	if err != nil {
		return err
	}
	var files []string
	for _, f := range cfg.Storage.Files {
		files = append(files, f.Path)
	}
	for _, u := range cfg.Systemd.Units {
		if u.Contents != nil {
			files = append(files, filepath.Join(paths.SystemdUnitDir, u.Name))
		}
		for _, d := range u.Dropins {
			files = append(files, filepath.Join(paths.SystemdUnitDir, u.Name+".d", d.Name))
		}
	}
	var errs []error
	for _, p := range files {
		if err := os.Remove(filepath.Join(root, p)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// WriteToRoot renders the Ignition config for o and applies it under root.
func WriteToRoot(root string, o Options) error {
	cfg, err := Ignition(o)
	if err != nil {
		return err
	}
	return ApplyIgnition(root, cfg)
}

// RemoveFromRoot removes what WriteToRoot wrote, as removing the MachineConfig would.
func RemoveFromRoot(root string, o Options) error {
	cfg, err := Ignition(o)
	if err != nil {
		return err
	}
	return RemoveIgnition(root, cfg)
}

// parseAny reads any config version this project renders into the newest types.
func parseAny(config []byte) (types.Config, error) {
	cfg, rpt, err := v3_5.ParseCompatibleVersion(config)
	if err != nil {
		return cfg, fmt.Errorf("parsing the Ignition config: %w %s", err, rpt.String())
	}
	return cfg, nil
}

func writeUnder(root, path string, data []byte, mode os.FileMode) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%s: not an absolute path", path)
	}
	p := filepath.Join(root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(p, data, mode); err != nil {
		return err
	}
	return os.Chmod(p, mode) // WriteFile keeps an existing file's mode
}
