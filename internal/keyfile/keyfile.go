// Package keyfile reads the GLib key-file format NetworkManager uses for its
// configuration and its connection profiles.
package keyfile

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// File is a parsed key file: section -> key -> value.
type File map[string]map[string]string

// Lookup is the value of key in section, and whether it is there.
func (k File) Lookup(section, key string) (string, bool) {
	v, ok := k[section][key]
	return v, ok
}

// Get is the value of key in section, "" when it is not there.
func (k File) Get(section, key string) string { return k[section][key] }

// Read parses the key file at path. Escapes other than \s \n \t \r \\ are kept as is.
func Read(path string) (File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	kf := File{}
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
			kf[section][strings.TrimSpace(key)] = unescape(strings.TrimSpace(val))
		}
	}
	return kf, sc.Err()
}

func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	return strings.NewReplacer(`\s`, " ", `\n`, "\n", `\t`, "\t", `\r`, "\r", `\\`, `\`).Replace(s)
}
