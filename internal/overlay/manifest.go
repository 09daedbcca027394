package overlay

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"github.com/nmoverlay/nmoverlay/internal/atomicfile"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Manifest is the lower dir's content by relative path: a digest of mode and bytes.
type Manifest map[string]string

// ReadManifest snapshots dir. Keyfile dirs hold a handful of small files: hashing them is cheap.
func ReadManifest(dir string) (Manifest, error) {
	m := Manifest{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		h := sha256.New()
		h.Write([]byte(info.Mode().String()))
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			h.Write(b)
		} else if info.Mode()&fs.ModeSymlink != 0 {
			t, _ := os.Readlink(path)
			h.Write([]byte(t))
		}
		m[rel] = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	return m, err
}

// Diff describes how now differs from m, one entry per path, sorted; empty when equal.
func (m Manifest) Diff(now Manifest) []string {
	var d []string
	for p, sum := range now {
		old, ok := m[p]
		switch {
		case !ok:
			d = append(d, "added "+p)
		case old != sum:
			d = append(d, "changed "+p)
		}
	}
	for p := range m {
		if _, ok := now[p]; !ok {
			d = append(d, "removed "+p)
		}
	}
	sort.Slice(d, func(i, j int) bool {
		return strings.SplitN(d[i], " ", 2)[1] < strings.SplitN(d[j], " ", 2)[1]
	})
	return d
}

func loadManifest(path string) (Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := Manifest{}
	return m, json.Unmarshal(b, &m)
}

func saveManifest(path string, m Manifest) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o600)
}
