package keyfile

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Marshal writes k as a key file: the sections named in first in that order, then the
// others sorted, each with its keys sorted, values escaped as GLib reads them back.
// Section and key names are written as they are; a name GLib would read otherwise (a
// bracket, an equals sign, a line break) is an error.
func (k File) Marshal(first ...string) ([]byte, error) {
	sections := slices.Sorted(maps.Keys(k))
	slices.SortStableFunc(sections, func(a, b string) int {
		ia, ib := slices.Index(first, a), slices.Index(first, b)
		switch {
		case ia >= 0 && ib >= 0:
			return ia - ib
		case ia >= 0:
			return -1
		case ib >= 0:
			return 1
		}
		return 0
	})
	var b bytes.Buffer
	for i, s := range sections {
		if len(k[s]) == 0 {
			continue
		}
		if strings.ContainsAny(s, "[]\n") || s == "" {
			return nil, fmt.Errorf("section %q: not a key file section name", s)
		}
		if i > 0 && b.Len() > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "[%s]\n", s)
		for _, key := range slices.Sorted(maps.Keys(k[s])) {
			if key == "" || strings.ContainsAny(key, "=[]\n") || strings.TrimSpace(key) != key {
				return nil, fmt.Errorf("[%s] key %q: not a key file key", s, key)
			}
			fmt.Fprintf(&b, "%s=%s\n", key, escape(k[s][key]))
		}
	}
	return b.Bytes(), nil
}

// escape is unescape's inverse: backslashes, line breaks and tabs, and a space at either
// end (which GLib would trim).
func escape(v string) string {
	v = strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\t", `\t`, "\r", `\r`).Replace(v)
	if strings.HasPrefix(v, " ") {
		v = `\s` + v[1:]
	}
	if len(v) > 2 && strings.HasSuffix(v, " ") {
		v = v[:len(v)-1] + `\s`
	}
	return v
}
