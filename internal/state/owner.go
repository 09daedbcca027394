package state

import "strings"

// OwnerOf is the one of names (interface names or keys) a field path is about: the
// longest one the path is, or starts with before a field (".") or a selector (","), or
// before a verification line's text (":"); "" for none. So a VLAN's path (eth0.100.mtu)
// is its own, not its base's (eth0).
func OwnerOf(path string, names []string) string {
	best := ""
	for _, name := range names {
		if len(name) <= len(best) || !strings.HasPrefix(path, name) {
			continue
		}
		if rest := path[len(name):]; rest == "" || strings.ContainsRune(".,:", rune(rest[0])) {
			best = name
		}
	}
	return best
}
