package overlay

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

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
		kf, err := parseKeyfile(f)
		if err != nil {
			return KeyfilePath{}, err
		}
		if f != c.Main && !configEnabled(kf.get(".config", "enable"), enableTag) {
			continue
		}
		if p, ok := kf.lookup("keyfile", "path"); ok {
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

// keyfile is a parsed GLib key file: section -> key -> value.
type keyfile map[string]map[string]string

func (k keyfile) lookup(section, key string) (string, bool) {
	v, ok := k[section][key]
	return v, ok
}

func (k keyfile) get(section, key string) string { return k[section][key] }

// parseKeyfile reads the GLib key-file format NetworkManager uses for both its
// configuration and its connection profiles. Escapes other than \s \n \t \\ are kept as is.
func parseKeyfile(path string) (keyfile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	kf := keyfile{}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			if kf[section] == nil {
				kf[section] = map[string]string{}
			}
		default:
			key, val, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				return nil, fmt.Errorf("%s:%d: not a key=value line in a section", path, n)
			}
			kf[section][strings.TrimSpace(key)] = unescapeKeyfile(strings.TrimSpace(val))
		}
	}
	return kf, sc.Err()
}

func unescapeKeyfile(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	return strings.NewReplacer(`\s`, " ", `\n`, "\n", `\t`, "\t", `\\`, `\`).Replace(s)
}
