package paths

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nmoverlay/nmoverlay/api/field"
	"github.com/nmoverlay/nmoverlay/test/ci"
)

func TestDefaultLayoutValidates(t *testing.T) {
	l := DefaultLayout()
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := l.MountUnit(), "run-nmoverlay-merged.mount"; got != want {
		t.Errorf("MountUnit() = %q, want %q", got, want)
	}
}

func TestMountUnitIsEscaped(t *testing.T) {
	l := Layout{Lower: NMDefaultKeyfile, RunDir: "/run/nm-overlay"}
	if got, want := l.MountUnit(), `run-nm\x2doverlay-merged.mount`; got != want {
		t.Errorf("MountUnit() = %q, want %q", got, want)
	}
}

func TestLayoutValidateRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		layout Layout
		field  string
		reason string
	}{
		{"relative run dir", Layout{Lower: NMDefaultKeyfile, RunDir: "run/x"}, "runDir", "not an absolute path"},
		{"empty lower", Layout{RunDir: DefaultRunDir}, "lower", "is empty"},
		{"unclean lower", Layout{Lower: "/etc/NetworkManager/../x", RunDir: DefaultRunDir}, "lower", "not a clean path"},
		{"run dir on /tmp", Layout{Lower: NMDefaultKeyfile, RunDir: "/tmp/nmoverlay"}, "runDir", "ages out"},
		{"run dir in NetworkManager's", Layout{Lower: NMDefaultKeyfile, RunDir: "/run/NetworkManager/overlay"}, "runDir", "NetworkManager's runtime dir"},
		{"run dir is NM's profiles", Layout{Lower: NMDefaultKeyfile, RunDir: NMRunProfiles}, "runDir", "in-memory profile dir"},
		{"run dir is /run", Layout{Lower: NMDefaultKeyfile, RunDir: "/run"}, "runDir", "below /run"},
		{"run dir on disk", Layout{Lower: NMDefaultKeyfile, RunDir: "/var/lib/nmoverlay"}, "runDir", "below /run"},
		{"comma", Layout{Lower: NMDefaultKeyfile, RunDir: "/run/a,b"}, "runDir", "cannot carry"},
		{"colon in lower", Layout{Lower: "/etc/a:b", RunDir: DefaultRunDir}, "lower", "cannot carry"},
		{"space", Layout{Lower: NMDefaultKeyfile, RunDir: "/run/a b"}, "runDir", "cannot carry"},
		{"lower on tmpfs", Layout{Lower: "/run/keyfiles", RunDir: DefaultRunDir}, "lower", "not persistent"},
		{"same base name is no overlap", Layout{Lower: "/etc/x", RunDir: "/run/x"}, "", ""},
		{"selinux garbage", Layout{Lower: NMDefaultKeyfile, RunDir: DefaultRunDir, SELinuxContext: "etc_t"}, "selinuxContext", "not an SELinux context"},
		{"selinux comma", Layout{Lower: NMDefaultKeyfile, RunDir: DefaultRunDir, SELinuxContext: "a:b:c:s0,x"}, "selinuxContext", "commas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.layout.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			var fe *field.Error
			if !errors.As(err, &fe) {
				t.Fatalf("want a *field.Error, got %v", err)
			}
			if fe.Path != tc.field || !strings.Contains(fe.Reason, tc.reason) {
				t.Errorf("got %v, want field %q reason containing %q", err, tc.field, tc.reason)
			}
		})
	}
}

func TestMountOptions(t *testing.T) {
	l := Layout{Lower: NMDefaultKeyfile, RunDir: DefaultRunDir, SELinuxContext: "system_u:object_r:NetworkManager_etc_rw_t:s0"}
	got := l.MountOptions(SafetyOptions)
	want := `lowerdir=/etc/NetworkManager/system-connections,upperdir=/run/nmoverlay/upper,workdir=/run/nmoverlay/work,` +
		`redirect_dir=off,index=off,metacopy=off,xino=off,context="system_u:object_r:NetworkManager_etc_rw_t:s0"`
	if got != want {
		t.Errorf("MountOptions =\n %s\nwant\n %s", got, want)
	}
}

func TestTmpfilesContent(t *testing.T) {
	tmpfiles, err := exec.LookPath("systemd-tmpfiles")
	if err != nil {
		ci.Require(t, "systemd-tmpfiles is missing: run hack/install-deps.sh")
	}
	if os.Geteuid() != 0 {
		ci.Require(t, "systemd-tmpfiles --root chowns to root: run as root")
	}
	l := DefaultLayout()
	root := t.TempDir()
	conf := filepath.Join(t.TempDir(), "nmoverlay.conf")
	if err := os.WriteFile(conf, []byte(l.TmpfilesContent()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(tmpfiles, "--root="+root, "--create", conf).CombinedOutput(); err != nil {
		t.Fatalf("systemd-tmpfiles: %v: %s", err, out)
	}
	for _, d := range []string{l.Upper(), l.Work(), l.Merged()} {
		if fi, err := os.Stat(filepath.Join(root, d)); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v", d, fi, err)
		}
	}
	dropIn, err := os.ReadFile(filepath.Join(root, l.PersistentDropInPath()))
	if err != nil || string(dropIn) != l.PersistentDropInContent() {
		t.Errorf("persistent drop-in = %q (%v), want %q", dropIn, err, l.PersistentDropInContent())
	}
	marker, err := os.ReadFile(filepath.Join(root, l.DegradedMarker()))
	if err != nil || string(marker) != string(NotVerifiedMarker()) {
		t.Errorf("degraded marker = %q (%v), want %q", marker, err, NotVerifiedMarker())
	}
}
