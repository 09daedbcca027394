package overlay

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nmoverlay/nmoverlay/internal/keyfile"
	"github.com/nmoverlay/nmoverlay/internal/paths"
)

// NMConfig locates NetworkManager's configuration files. The zero value is NetworkManager's
// defaults; tests and hosts with other locations set the fields.
type NMConfig struct {
	Main      string // NetworkManager.conf
	ConfDir   string // /etc/NetworkManager/conf.d
	RunDir    string // /run/NetworkManager/conf.d
	SystemDir string // /usr/lib/NetworkManager/conf.d
}

func (c NMConfig) withDefaults() NMConfig {
	if c.Main == "" {
		c.Main = paths.NMMainConf
	}
	if c.ConfDir == "" {
		c.ConfDir = paths.NMConfDir
	}
	if c.RunDir == "" {
		c.RunDir = paths.NMRunConfDir
	}
	if c.SystemDir == "" {
		c.SystemDir = paths.NMSystemConfDir
	}
	return c
}

// KeyfilePath is NetworkManager's effective [keyfile] path and the file that set it.
type KeyfilePath struct {
	Path   string `json:"path"`
	Source string `json:"source"` // "" when NetworkManager's built-in default applies
}

// EffectiveKeyfilePath merges NetworkManager's configuration the way NetworkManager does
// (see NetworkManager.conf(5)): /usr/lib conf.d, then /run conf.d, then NetworkManager.conf,
// then /etc conf.d, each dir in file-name order; a file name in a later dir shadows the same
// name in an earlier one; a later value wins. enableTag is the NM_CONFIG_ENABLE_TAG that
// NetworkManager would run with ("" for none).
func (c NMConfig) EffectiveKeyfilePath(enableTag string) (KeyfilePath, error) {
	c = c.withDefaults()
	sys, err := confFiles(c.SystemDir)
	if err != nil {
		return KeyfilePath{}, err
	}
	run, err := confFiles(c.RunDir)
	if err != nil {
		return KeyfilePath{}, err
	}
	etc, err := confFiles(c.ConfDir)
	if err != nil {
		return KeyfilePath{}, err
	}
	shadow := func(files []string, by ...[]string) []string {
		names := map[string]bool{}
		for _, list := range by {
			for _, f := range list {
				names[filepath.Base(f)] = true
			}
		}
		var kept []string
		for _, f := range files {
			if !names[filepath.Base(f)] {
				kept = append(kept, f)
			}
		}
		return kept
	}
	order := append(shadow(sys, run, etc), shadow(run, etc)...)
	if _, err := os.Stat(c.Main); err == nil {
		order = append(order, c.Main)
	}
	order = append(order, etc...)

	res := KeyfilePath{Path: paths.NMDefaultKeyfile}
	for _, f := range order {
		kf, err := keyfile.Read(f)
		if err != nil {
			return KeyfilePath{}, err
		}
		if f != c.Main && !configEnabled(kf.Get(".config", "enable"), enableTag) {
			continue
		}
		if p, ok := kf.Lookup("keyfile", "path"); ok {
			res = KeyfilePath{Path: filepath.Clean(p), Source: f}
		}
	}
	return res, nil
}

// confFiles lists the *.conf files NetworkManager reads from dir, in name order.
func confFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".conf") {
			continue
		}
		files = append(files, filepath.Join(dir, n))
	}
	sort.Strings(files)
	return files, nil
}

// configEnabled evaluates a [.config] enable= value: a list of predicates, any match
// enables, any matching except: disables. Version predicates are taken as matching: this
// project renders none and does not guess NetworkManager's version.
func configEnabled(value, enableTag string) bool {
	if value == "" {
		return true
	}
	switch strings.ToLower(value) {
	case "true", "yes", "1", "on":
		return true
	case "false", "no", "0", "off":
		return false
	}
	match := func(pred string) bool {
		if tag, ok := strings.CutPrefix(pred, "env:"); ok {
			return enableTag != "" && tag == enableTag
		}
		return strings.HasPrefix(pred, "nm-version")
	}
	matched, positives := false, 0
	for _, p := range strings.Split(value, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if neg, ok := strings.CutPrefix(p, "except:"); ok {
			if match(neg) {
				return false
			}
			continue
		}
		positives++
		matched = matched || match(p)
	}
	return matched || positives == 0
}
