package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nmoverlay/nmoverlay/internal/version"
)

func TestUsageErrors(t *testing.T) {
	badLayout := filepath.Join(t.TempDir(), "layout.json")
	if err := os.WriteFile(badLayout, []byte(`{"lower":"/etc/NetworkManager/system-connections","runDir":"/tmp/x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "Usage"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"verify", "-o", "yaml"}, `-o "yaml": want text or json`},
		{[]string{"setup", "--layout", badLayout}, `runDir: "/tmp/x" is under /tmp`},
		{[]string{"status", "--no-such-flag"}, "flag provided but not defined"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &stdout, &stderr)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d", tc.args, code, exitUsage)
		}
		if got := stdout.String() + stderr.String(); !strings.Contains(got, tc.want) {
			t.Errorf("%v: output %q, want %q", tc.args, got, tc.want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"help"}, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "reset") {
		t.Errorf("help: exit %d, %q", code, stdout.String())
	}
}

// install copies the running binary (here: the test binary) into --to, replacing what is
// there, as the handler DaemonSet's init container does on the host.
func TestInstallCopiesItself(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "nm-overlay")
	if err := os.WriteFile(dst, []byte("an older nm-overlay"), 0o755); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"install", "--to", dir}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	self, _ := os.Executable()
	want, _ := os.ReadFile(self)
	got, err := os.ReadFile(dst)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s is not this binary (%d bytes, want %d): %v", dst, len(got), len(want), err)
	}
	if st, _ := os.Stat(dst); st.Mode().Perm() != 0o755 {
		t.Errorf("mode %v", st.Mode())
	}
}

// version needs no layout: it answers on a host the MachineConfig never reached.
func TestVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"version"}, &stdout, &stderr); code != exitOK ||
		!strings.HasPrefix(stdout.String(), "nm-overlay "+version.Version+" ") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}

func TestUnitOf(t *testing.T) {
	for _, tc := range []struct {
		name, cgroup, want string
	}{
		{"unified", "0::/system.slice/nm-overlay.service\n", "nm-overlay.service"},
		{"hybrid", "12:memory:/system.slice/nm-overlay.service\n1:name=systemd:/system.slice/nm-overlay-enable.service\n0::/system.slice/nm-overlay-enable.service\n", "nm-overlay-enable.service"},
		{"legacy, systemd's hierarchy last", "4:cpu,cpuacct:/system.slice/other.service\n1:name=systemd:/system.slice/nm-overlay.service\n", "nm-overlay.service"},
		{"a service's sub-cgroup", "0::/system.slice/nm-overlay.service/payload\n", "nm-overlay.service"},
		{"a scope", "0::/user.slice/user-0.slice/session-3.scope\n", "session-3.scope"},
		{"a controller's path is not systemd's", "4:cpu:/system.slice/other.service\n", ""},
		{"the root", "0::/\n", ""},
		{"a container's view, no unit", "0::/init\n", ""},
		{"empty", "", ""},
	} {
		if got := unitOf(tc.cgroup); got != tc.want {
			t.Errorf("%s: unitOf(%q) = %q, want %q", tc.name, tc.cgroup, got, tc.want)
		}
	}
}
