package netplan

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/nmoverlay/nmoverlay/internal/atomicfile"
	"github.com/nmoverlay/nmoverlay/internal/backend"
	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// Where netplan reads and writes on the host (netplan.io 0.106).
const (
	// RunDir is netplan's runtime configuration dir: read with /etc/netplan and
	// /lib/netplan, on tmpfs.
	RunDir = "/run/netplan"
	// FilePrefix begins the name of each policy's file in RunDir: netplan reads its
	// files in name order, and 90 comes after an installer's (00-installer-config.yaml,
	// 50-cloud-init.yaml), so a policy's keys win over the node's own.
	FilePrefix = "90-nmoverlay-"
	// ProfileDir is where netplan's generator writes NetworkManager's profiles
	// (netplan-<id>.nmconnection), which NetworkManager reads as runtime profiles.
	ProfileDir = "/run/NetworkManager/system-connections"
	// profilePrefix begins the name of every profile netplan generates.
	profilePrefix = "netplan-"
	// Generator is netplan's generator, what `netplan generate` runs (netplan.io's
	// get_generator_path), without the CLI's Python start-up: 9 ms a run here against
	// 93 ms. By its path: in a pod the handler runs it chrooted into the host's root, which
	// its own image's PATH knows nothing of.
	Generator = "/lib/netplan/generate"
)

// configDirs are netplan's configuration dirs, as netplan merges them.
var configDirs = []string{"/etc/netplan", "/lib/netplan", RunDir}

// Host is the node as the netplan backend reaches it.
type Host struct {
	// Root is the host's root dir as this process sees it: "/" for a process on the
	// host, the hostPath mount of / in a pod.
	Root string
	// Scratch is a dir of the host's the backend owns, on tmpfs (paths.Layout's
	// NetplanScratch): netplan's parser checks policies there, on a copy of the node's
	// configuration, before anything is written where it counts.
	Scratch string
	// Run runs a command on the host (netplan, as the host has it), with its output.
	Run func(ctx context.Context, args ...string) ([]byte, error)
}

// NewHost is the host at root as this process sees it ("/" on the host): commands run
// as they are there, chrooted into root elsewhere (a pod: CAP_SYS_CHROOT; the image has no
// chroot binary, so the child chroots before it execs).
func NewHost(root, scratch string) Host {
	return Host{Root: root, Scratch: scratch, Run: func(ctx context.Context, args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		if filepath.Clean(root) != "/" {
			cmd.SysProcAttr, cmd.Dir = &syscall.SysProcAttr{Chroot: root}, "/"
		}
		return cmd.CombinedOutput()
	}}
}

func (h Host) path(p string) string { return filepath.Join(h.Root, p) }

// Backend is the netplan backend: netplan's schema, applied through NetworkManager.
type Backend struct {
	Schema
	NM      *networkmanager.Client
	Options networkmanager.ApplyOptions
	Host    Host

	mu     sync.Mutex
	checks map[string]error // netplan's verdicts, by what it read (checkKey)
}

// Check has netplan's parser read the policy's document with the node's own
// configuration, on a scratch copy: what it refuses is refused with its message (file,
// line, column), nothing written where it counts. Verdicts are kept by input, so an
// unchanged policy is not parsed again at every pass.
func (b *Backend) Check(ctx context.Context, policy string, desired []byte) error {
	network, err := parse(desired)
	if err != nil {
		return nil // Parse says why, when the handler plans
	}
	cfg := Config{Documents: []Document{{Policy: policy, Network: network}}}
	files, err := policyFiles(cfg)
	if err != nil {
		return err
	}
	own, err := b.Host.nodeFiles()
	if err != nil {
		return err
	}
	key := checkKey(files, own)
	b.mu.Lock()
	verdict, ok := b.checks[key]
	b.mu.Unlock()
	if ok {
		return verdict
	}
	_, err = b.Host.generateScratch(ctx, cfg, files, own)
	var refused *backend.PoliciesRefused
	if errors.As(err, &refused) {
		err = errors.New(refused.Reasons[policy])
	} else if err != nil {
		return err // the host's trouble, not the policy's: not kept
	}
	b.mu.Lock()
	if b.checks == nil || len(b.checks) > 256 {
		b.checks = map[string]error{}
	}
	b.checks[key] = err
	b.mu.Unlock()
	return err
}

// Apply writes every policy's file under /run/netplan (and removes those of policies
// gone), has netplan generate NetworkManager's profiles, and activates the new and changed
// ones in a NetworkManager checkpoint; then verifies the result against the documents.
// The documents are checked together on a scratch copy first: nothing changes when
// netplan refuses them (*backend.PoliciesRefused names the policies). Rollback puts the
// previous files back, generates again and rolls the checkpoint back.
func (b *Backend) Apply(ctx context.Context, d backend.Desired) (backend.Transaction, error) {
	cfg, err := ConfigOf(d)
	if err != nil {
		return nil, err
	}
	files, err := policyFiles(cfg)
	if err != nil {
		return nil, err
	}
	own, err := b.Host.nodeFiles()
	if err != nil {
		return nil, err
	}
	generated, err := b.Host.generateScratch(ctx, cfg, files, own)
	if err != nil {
		return nil, err
	}
	before, err := readDir(b.Host.path(ProfileDir), profilePrefix)
	if err != nil {
		return nil, err
	}
	previous, err := readDir(b.Host.path(RunDir), FilePrefix)
	if err != nil {
		return nil, err
	}
	expected := Expected(cfg)
	activate, err := b.toActivate(ctx, expected, generated, before)
	if err != nil {
		return nil, err
	}
	tx, err := b.NM.ApplyFiles(ctx, networkmanager.FileChange{
		Write:    func(ctx context.Context) error { return b.Host.install(ctx, files) },
		Undo:     func(ctx context.Context) error { return b.Host.install(ctx, previous) },
		Activate: activate,
		Verify:   func(current state.State) []string { return state.Verify(expected, current) },
	}, b.Options)
	if err != nil {
		return nil, networkmanager.BackendError(err) // a typed nil *Transaction must not become a non-nil interface
	}
	return tx, nil
}

// toActivate are the profiles (as the host names their files) to activate: those new or
// changed, and those of devices that no longer run what their document says (changed
// outside nmoverlay: activating the profile again puts it back).
func (b *Backend) toActivate(ctx context.Context, expected state.State, generated, before map[string][]byte) ([]string, error) {
	var out []string
	for name, content := range generated {
		if prev, ok := before[name]; !ok || string(prev) != string(content) {
			out = append(out, filepath.Join(ProfileDir, name))
		}
	}
	current, err := b.NM.Show(ctx)
	if err != nil {
		return nil, err
	}
	for _, it := range expected.Interfaces {
		file := profilePrefix + it.Name + ".nmconnection"
		path := filepath.Join(ProfileDir, file)
		if _, ok := generated[file]; !ok || slices.Contains(out, path) {
			continue
		}
		if len(state.Verify(state.State{Interfaces: []state.Interface{it}}, current)) > 0 {
			out = append(out, path)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Show is the node's network, as NetworkManager runs it.
func (b *Backend) Show(ctx context.Context) (state.State, error) { return b.NM.Show(ctx) }

func (b *Backend) Changes(ctx context.Context) (<-chan struct{}, error) { return b.NM.Changes(ctx) }

// nodeFiles are the node's own netplan files (not nmoverlay's), by the path netplan reads
// them at.
func (h Host) nodeFiles() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, dir := range configDirs {
		files, err := readDir(h.path(dir), "")
		if err != nil {
			return nil, err
		}
		for name, content := range files {
			if dir == RunDir && strings.HasPrefix(name, FilePrefix) || !strings.HasSuffix(name, ".yaml") {
				continue
			}
			out[filepath.Join(dir, name)] = content
		}
	}
	return out, nil
}

// generateScratch runs netplan's generator on a copy of the node's configuration with
// cfg's files (policyFiles), under Scratch: the profiles it would write (by file name), or
// *backend.PoliciesRefused quoting netplan on the policies it names.
func (h Host) generateScratch(ctx context.Context, cfg Config, files, own map[string][]byte) (map[string][]byte, error) {
	root := h.path(h.Scratch)
	if err := os.RemoveAll(root); err != nil {
		return nil, err
	}
	write := func(path string, content []byte) error {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(path)), 0o700); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(root, path), content, 0o600)
	}
	for path, content := range own {
		if err := write(path, content); err != nil {
			return nil, err
		}
	}
	for name, content := range files {
		if err := write(filepath.Join(RunDir, name), content); err != nil {
			return nil, err
		}
	}
	if out, err := h.Run(ctx, Generator, "--root-dir", h.Scratch); err != nil {
		return nil, refusal(cfg, strings.ReplaceAll(strings.TrimSpace(string(out)), h.Scratch, ""), err)
	}
	return readDir(filepath.Join(root, ProfileDir), profilePrefix)
}

// refusal says which policies netplan refused: those whose file its message names; every
// policy when it names none (the node's own configuration, or the policies together).
func refusal(cfg Config, msg string, err error) error {
	if msg == "" {
		msg = err.Error()
	}
	msg = "netplan: " + msg
	r := &backend.PoliciesRefused{Reasons: map[string]string{}}
	for _, doc := range cfg.Documents {
		if strings.Contains(msg, filepath.Join(RunDir, fileName(doc.Policy))) {
			r.Reasons[doc.Policy] = msg
		}
	}
	if len(r.Reasons) == 0 {
		for _, doc := range cfg.Documents {
			r.Reasons[doc.Policy] = msg
		}
	}
	return r
}

// install makes RunDir hold exactly files of nmoverlay's, then has netplan generate the
// node's profiles from its whole configuration.
func (h Host) install(ctx context.Context, files map[string][]byte) error {
	dir := h.path(RunDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	present, err := readDir(dir, FilePrefix)
	if err != nil {
		return err
	}
	for name := range present {
		if _, keep := files[name]; !keep {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	for name, content := range files {
		if string(present[name]) == string(content) {
			continue
		}
		// netplan warns about a configuration others can read: 0600.
		if err := atomicfile.Write(filepath.Join(dir, name), content, 0o600); err != nil {
			return err
		}
	}
	if out, err := h.Run(ctx, Generator); err != nil {
		return fmt.Errorf("%s: %w: %s", Generator, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// readDir reads the regular files in dir whose names begin with prefix; a missing dir
// has none.
func readDir(dir, prefix string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string][]byte{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[e.Name()] = b
	}
	return out, nil
}

// checkKey identifies what netplan's parser read for a check: the policies' files and
// the node's own.
func checkKey(files, own map[string][]byte) string {
	h := sha256.New()
	for _, m := range []map[string][]byte{files, own} {
		for _, path := range slices.Sorted(maps.Keys(m)) {
			fmt.Fprintf(h, "%s\x00%s\x00", path, m[path])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// fileName is a policy's file in RunDir.
func fileName(policy string) string { return FilePrefix + policy + ".yaml" }

// policyFiles are cfg's files as netplan reads them from RunDir, by name.
func policyFiles(cfg Config) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, doc := range cfg.Documents {
		content, err := marshal(doc)
		if err != nil {
			return nil, err
		}
		files[fileName(doc.Policy)] = content
	}
	return files, nil
}
