package overlay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nmoverlay/nmoverlay/internal/paths"
)

func TestLoadLayout(t *testing.T) {
	dir := t.TempDir()
	if l, err := LoadLayout(filepath.Join(dir, "missing.json")); err != nil || l != paths.DefaultLayout() {
		t.Fatalf("missing file: %v %v", l, err)
	}
	p := filepath.Join(dir, "layout.json")
	// What the handler pod's FileOrCreate mount leaves before the MachineConfig came.
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if l, err := LoadLayout(p); err != nil || l != paths.DefaultLayout() {
		t.Fatalf("empty file: %v %v", l, err)
	}
	custom := paths.Layout{Lower: paths.NMDefaultKeyfile, RunDir: "/run/custom"}
	if err := os.WriteFile(p, custom.MarshalLayoutFile(), 0o644); err != nil {
		t.Fatal(err)
	}
	if l, err := LoadLayout(p); err != nil || l != custom {
		t.Fatalf("round trip: %v %v", l, err)
	}
	// What a release before 0.4.0 wrote for its default: no key, no context= on its mount.
	if err := os.WriteFile(p, []byte(`{"lower":"/etc/NetworkManager/system-connections","runDir":"/run/nmoverlay"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if l, err := LoadLayout(p); err != nil || l.SELinuxContext != "" || l.RunDir != paths.DefaultRunDir {
		t.Fatalf("a 0.3 layout file: %+v %v, want no SELinux context", l, err)
	}
	if err := os.WriteFile(p, []byte(`{"lower":"/etc/x","runDir":"/run/y","upper":"/z"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadLayout(p); err == nil || !strings.Contains(err.Error(), `unknown field "upper"`) {
		t.Fatalf("unknown field accepted: %v", err)
	}
	if err := os.WriteFile(p, []byte(`{"lower":"/etc/x","runDir":"/tmp/y"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadLayout(p); err == nil || !strings.Contains(err.Error(), "runDir") {
		t.Fatalf("invalid layout accepted: %v", err)
	}
}

// TestTmpfilesContent has systemd-tmpfiles itself create the boot-time state into a
// scratch root, and checks what it wrote: the escaping must survive systemd's parser.
