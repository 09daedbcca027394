// Package migration moves a node from kubernetes-nmstate to nmoverlay. kubernetes-nmstate
// writes every policy's profiles into NetworkManager's persistent keyfile dir, which is
// the overlay's lower layer here: left there, they would outlive their policies and come
// back at every boot before the handler. The handler's backend decides which persistent
// profiles the policies in force account for (for NetworkManager,
// networkmanager.PersistentPlan) and the handler writes that plan for the node;
// nm-overlay, at the node's first boot on the overlay and before the overlay is mounted,
// moves them into a backup kept on the node (Move), from which Restore puts them back
// byte for byte. A profile no policy accounts for, or one the node needs to boot, stays.
package migration

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nmoverlay/nmoverlay/internal/keyfile"
)

// Profile is one persistent keyfile, by what the plan needs of it.
type Profile struct {
	// File is its name in the keyfile dir.
	File string `json:"file"`
	// SHA256 is its content's digest: a file changed since the plan was made is not moved.
	SHA256    string `json:"sha256"`
	ID        string `json:"id,omitempty"`
	UUID      string `json:"uuid,omitempty"`
	Type      string `json:"type,omitempty"`
	Interface string `json:"interface,omitempty"`
	// Controller is connection.controller (connection.master before NetworkManager 1.46):
	// a name or a UUID. PortType is connection.port-type (slave-type).
	Controller string `json:"controller,omitempty"`
	PortType   string `json:"portType,omitempty"`
}

// ReadProfiles reads every profile in dir, the persistent keyfile dir, sorted by file:
// the regular files NetworkManager loads there (it ignores hidden files and editors'
// leftovers). A file that is not a profile is skipped: it is nobody's to move.
func ReadProfiles(dir string) ([]Profile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []Profile
	for _, e := range entries {
		if !e.Type().IsRegular() || ignoredByNetworkManager(e.Name()) {
			continue
		}
		p, err := readProfile(filepath.Join(dir, e.Name()))
		if errors.Is(err, errNotProfile) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

var errNotProfile = errors.New("not a profile")

func readProfile(path string) (Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Profile{}, err
	}
	kf, err := keyfile.Read(path)
	if err != nil || kf["connection"] == nil {
		return Profile{}, errNotProfile
	}
	c := kf["connection"]
	p := Profile{File: filepath.Base(path), SHA256: digest(data), ID: c["id"], UUID: c["uuid"], Type: c["type"],
		Interface: c["interface-name"], Controller: c["controller"], PortType: c["port-type"]}
	if p.Controller == "" {
		p.Controller = c["master"]
	}
	if p.PortType == "" {
		p.PortType = c["slave-type"]
	}
	return p, nil
}

// ignoredByNetworkManager: the names NetworkManager's keyfile plugin skips in its dir
// (hidden files, and backup and package-manager leftovers).
func ignoredByNetworkManager(name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") {
		return true
	}
	return slices.ContainsFunc([]string{".swp", ".swpx", ".bak", ".orig", ".rej", ".rpmnew", ".rpmsave", ".rpmorig", ".dpkg-old",
		".dpkg-new", ".dpkg-dist", ".dpkg-bak", ".dpkg-tmp", ".pem", ".der", ".key"}, func(s string) bool { return strings.HasSuffix(name, s) })
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// fileDigest is the digest of the file at path; "" with fs.ErrNotExist when there is none.
func fileDigest(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return digest(b), nil
}
