package overlay

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/nmoverlay/nmoverlay/internal/paths"
	"github.com/nmoverlay/nmoverlay/test/ci"
	"github.com/nmoverlay/nmoverlay/test/nmhost"
)

func TestConfigEnabled(t *testing.T) {
	for _, tc := range []struct {
		value, tag string
		want       bool
	}{
		{"", "", true},
		{"false", paths.EnableTag, false},
		{"true", "", true},
		{"env:" + paths.EnableTag, "", false},
		{"env:" + paths.EnableTag, paths.EnableTag, true},
		{"env:" + paths.EnableTag, "other", false},
		{"env:a,env:" + paths.EnableTag, paths.EnableTag, true},
		{"except:env:" + paths.EnableTag, paths.EnableTag, false},
		{"except:env:" + paths.EnableTag, "", true},
		{"env:" + paths.EnableTag + ",except:env:x", paths.EnableTag, true},
	} {
		if got := configEnabled(tc.value, tc.tag); got != tc.want {
			t.Errorf("configEnabled(%q, %q) = %v, want %v", tc.value, tc.tag, got, tc.want)
		}
	}
}

// nmConfigScenario is a set of NetworkManager configuration files, relative to a root with
// etc/ (conf.d and NetworkManager.conf), run/ and lib/.
type nmConfigScenario struct {
	name  string
	files map[string]string
	tag   string
	want  string // effective keyfile path
}

func nmConfigScenarios() []nmConfigScenario {
	l := paths.DefaultLayout()
	overlayDropIn := map[string]string{
		"etc/conf.d/" + paths.KeyfileDropIn: l.KeyfileDropInContent(),
		"run/" + paths.PersistentDropIn:     l.PersistentDropInContent(),
		"etc/NetworkManager.conf":           "[main]\nplugins=keyfile\n",
		"lib/00-vendor.conf":                "[main]\ndns=none\n",
		"etc/conf.d/10-unrelated.conf":      "[logging]\nlevel=INFO\n",
	}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range overlayDropIn {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	return []nmConfigScenario{
		{"no configuration", map[string]string{}, "", paths.NMDefaultKeyfile},
		{"overlay verified", overlayDropIn, paths.EnableTag, l.Merged()},
		{"overlay not verified: persistent drop-in", overlayDropIn, "", l.Lower},
		{"later /etc drop-in overrides", with(map[string]string{"etc/conf.d/99-admin.conf": "[keyfile]\npath=/var/lib/admin\n"}), paths.EnableTag, "/var/lib/admin"},
		{"earlier /etc drop-in is overridden", with(map[string]string{"etc/conf.d/50-admin.conf": "[keyfile]\npath=/var/lib/admin\n"}), paths.EnableTag, l.Merged()},
		{"a /run drop-in cannot override /etc", with(map[string]string{"run/99-late.conf": "[keyfile]\npath=/var/lib/run\n"}), paths.EnableTag, l.Merged()},
		{"NetworkManager.conf is read after /run", with(map[string]string{"etc/NetworkManager.conf": "[keyfile]\npath=/var/lib/main\n"}), "", "/var/lib/main"},
		{"/etc shadows /run of the same name", with(map[string]string{"etc/conf.d/" + paths.PersistentDropIn: "[logging]\nlevel=INFO\n"}), "", paths.NMDefaultKeyfile},
		{"/run shadows /usr/lib of the same name", map[string]string{"lib/50-x.conf": "[keyfile]\npath=/var/lib/lib\n", "run/50-x.conf": "[main]\ndns=none\n"}, "", paths.NMDefaultKeyfile},
		{"disabled file is skipped", map[string]string{"etc/conf.d/50-x.conf": "[.config]\nenable=false\n[keyfile]\npath=/var/lib/x\n"}, "", paths.NMDefaultKeyfile},
		{"not .conf is ignored", map[string]string{"etc/conf.d/50-x.conf.bak": "[keyfile]\npath=/var/lib/x\n"}, "", paths.NMDefaultKeyfile},
	}
}

func (s nmConfigScenario) write(t *testing.T) NMConfig {
	root := t.TempDir()
	c := NMConfig{
		Main:      filepath.Join(root, "etc/NetworkManager.conf"),
		ConfDir:   filepath.Join(root, "etc/conf.d"),
		RunDir:    filepath.Join(root, "run"),
		SystemDir: filepath.Join(root, "lib"),
	}
	for _, d := range []string{c.ConfDir, c.RunDir, c.SystemDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// NetworkManager refuses an explicit --config that does not exist.
	if err := os.WriteFile(c.Main, []byte("[main]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, content := range s.files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func TestEffectiveKeyfilePath(t *testing.T) {
	for _, s := range nmConfigScenarios() {
		t.Run(s.name, func(t *testing.T) {
			kp, err := s.write(t).EffectiveKeyfilePath(s.tag)
			if err != nil {
				t.Fatal(err)
			}
			if kp.Path != s.want {
				t.Errorf("path %q (from %q), want %q", kp.Path, kp.Source, s.want)
			}
		})
	}
}

// TestEffectiveKeyfilePathMatchesNetworkManager runs every scenario through NetworkManager's
// own --print-config: the reader must merge exactly as NetworkManager does. The /run conf.d
// dir has no command-line flag, so NetworkManager runs in a private mount namespace with a
// tmpfs on /run.
func TestEffectiveKeyfilePathMatchesNetworkManager(t *testing.T) {
	nm, err := exec.LookPath("NetworkManager")
	if err != nil {
		ci.Require(t, "NetworkManager is missing: run hack/install-deps.sh")
	}
	if os.Geteuid() != 0 {
		ci.Require(t, "needs root for a private /run")
	}
	for _, s := range nmConfigScenarios() {
		t.Run(s.name, func(t *testing.T) {
			c := s.write(t)
			script := `mount -t tmpfs t /run && mkdir -p /run/NetworkManager && ln -s "$RUNCONF" /run/NetworkManager/conf.d && ` +
				`exec "$NM" --print-config --config="$MAIN" --config-dir="$CONFD" --system-config-dir="$SYSD"`
			cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", script)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "NM=" + nm, "RUNCONF=" + c.RunDir, "MAIN=" + c.Main,
				"CONFD=" + c.ConfDir, "SYSD=" + c.SystemDir, "NM_CONFIG_ENABLE_TAG=" + s.tag}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			printed := nmhost.KeyfilePathFromPrintConfig(string(out), paths.NMDefaultKeyfile)
			kp, err := c.EffectiveKeyfilePath(s.tag)
			if err != nil {
				t.Fatal(err)
			}
			if kp.Path != printed {
				t.Errorf("reader says %q, NetworkManager --print-config says %q", kp.Path, printed)
			}
			if printed != s.want {
				t.Errorf("NetworkManager says %q, scenario expects %q", printed, s.want)
			}
		})
	}
}
