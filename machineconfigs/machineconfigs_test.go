package machineconfigs

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coreos/go-systemd/v22/unit"
	"github.com/coreos/ignition/v2/config/util"
	v3_5 "github.com/coreos/ignition/v2/config/v3_5"
	"github.com/vincent-petithory/dataurl"
	"sigs.k8s.io/yaml"

	v3_2 "github.com/coreos/ignition/v2/config/v3_2"
	v3_4 "github.com/coreos/ignition/v2/config/v3_4"

	"github.com/nmoverlay/nmoverlay/overlay"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var goldenCases = []struct {
	golden string
	opts   Options
}{
	{"worker-3.2.0.yaml", Options{Pools: []string{"worker"}}},
	{"worker-master-3.4.0.yaml", Options{Pools: []string{"worker", "master"}, IgnitionVersion: "3.4.0"}},
	{"infra-3.5.0-selinux.yaml", Options{
		Pools: []string{"infra"}, CustomPools: []string{"infra"}, IgnitionVersion: "3.5.0",
		Layout:        overlay.Layout{Lower: overlay.NMDefaultKeyfile, RunDir: "/run/nm-overlay", SELinuxContext: "system_u:object_r:NetworkManager_etc_rw_t:s0"},
		SafetyOptions: []string{"redirect_dir=off", "index=off"},
	}},
}

func TestRenderGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.golden, func(t *testing.T) {
			mcs, err := Render(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Marshal(mcs)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./machineconfigs -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("rendered YAML differs from %s (go test ./machineconfigs -update to accept):\n%s", path, got)
			}
		})
	}
}

// TestRenderedConfigsAreValidIgnition re-parses each MachineConfig's spec.config from the
// YAML an administrator applies, with Ignition's own parser for its version, and decodes
// every file back to the content package overlay defines.
func TestRenderedConfigsAreValidIgnition(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.golden, func(t *testing.T) {
			mcs, err := Render(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := Marshal(mcs)
			if err != nil {
				t.Fatal(err)
			}
			parts := strings.Split(string(doc), "---\n")[1:]
			if len(parts) != len(tc.opts.Pools) {
				t.Fatalf("%d documents for %d pools", len(parts), len(tc.opts.Pools))
			}
			o := tc.opts.WithDefaults()
			for i, part := range parts {
				var mc MachineConfig
				if err := yaml.UnmarshalStrict([]byte(part), &mc); err != nil {
					t.Fatal(err)
				}
				pool := tc.opts.Pools[i]
				if mc.APIVersion != APIVersion || mc.Kind != Kind || mc.Metadata.Name != Name(pool) || mc.Metadata.Labels[RoleLabel] != pool {
					t.Errorf("document %d: %+v", i, mc)
				}
				version, rpt, err := util.GetConfigVersion(mc.Spec.Config)
				if err != nil || version.String() != o.IgnitionVersion {
					t.Fatalf("version %v (%v %s), want %s", version, err, rpt.String(), o.IgnitionVersion)
				}
				switch o.IgnitionVersion {
				case "3.2.0":
					_, rpt, err = v3_2.Parse(mc.Spec.Config)
				case "3.4.0":
					_, rpt, err = v3_4.Parse(mc.Spec.Config)
				case "3.5.0":
					_, rpt, err = v3_5.Parse(mc.Spec.Config)
				}
				if err != nil || rpt.IsFatal() || len(rpt.Entries) != 0 {
					t.Fatalf("ignition %s: %v %s", o.IgnitionVersion, err, rpt.String())
				}
				checkContents(t, mc.Spec.Config, o)
				if len(part) > 1536*1024 {
					t.Errorf("MachineConfig is %d bytes; MCO caps rendered configs at 1.5 MiB", len(part))
				}
			}
		})
	}
}

func checkContents(t *testing.T, config []byte, o Options) {
	t.Helper()
	cfg, _, err := v3_5.ParseCompatibleVersion(config)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]File{}
	for _, f := range HostFiles(o) {
		want[f.Path] = f
	}
	if len(cfg.Storage.Files) != len(want) {
		t.Errorf("%d files, want %d", len(cfg.Storage.Files), len(want))
	}
	for _, f := range cfg.Storage.Files {
		d, err := dataurl.DecodeString(*f.Contents.Source)
		if err != nil {
			t.Fatal(err)
		}
		if w := want[f.Path]; string(d.Data) != w.Contents || *f.Mode != int(w.Mode) {
			t.Errorf("%s: decoded %q mode %o, want %q mode %o", f.Path, d.Data, *f.Mode, w.Contents, w.Mode)
		}
	}
	units := map[string]bool{}
	for _, u := range cfg.Systemd.Units {
		units[u.Name] = true
		if u.Enabled != nil || u.Mask != nil {
			t.Errorf("%s: enabled/mask set; units are pulled in by the NetworkManager drop-in", u.Name)
		}
	}
	for _, name := range []string{o.Layout.MountUnit(), overlay.HelperService, overlay.NMService} {
		if !units[name] {
			t.Errorf("unit %s missing", name)
		}
	}
}

// TestUnits parses the rendered units with go-systemd and checks what the boot order and
// fail-safe rest on.
func TestUnits(t *testing.T) {
	o := Options{Pools: []string{"worker"}, Layout: overlay.Layout{Lower: overlay.NMDefaultKeyfile, RunDir: "/run/nm-overlay"}}.WithDefaults()
	opts := map[string]map[string][]string{}
	for _, u := range HostUnits(o) {
		contents := u.Contents
		name := u.Name
		if contents == "" {
			contents, name = u.Dropins[0].Contents, u.Name+".d/"+u.Dropins[0].Name
		}
		parsed, err := unit.DeserializeOptions(strings.NewReader(contents))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		opts[name] = map[string][]string{}
		for _, p := range parsed {
			opts[name][p.Section+"."+p.Name] = append(opts[name][p.Section+"."+p.Name], p.Value)
		}
	}
	mount := opts[o.Layout.MountUnit()]
	if mount == nil {
		t.Fatalf("no mount unit named %s: %v", o.Layout.MountUnit(), opts)
	}
	where := mount["Mount.Where"][0]
	if got := unit.UnitNamePathEscape(where) + ".mount"; got != o.Layout.MountUnit() || got != `run-nm\x2doverlay-merged.mount` {
		t.Errorf("mount unit %s for Where=%s (escaped %s)", o.Layout.MountUnit(), where, got)
	}
	expect := func(unitName, key, want string) {
		t.Helper()
		if v := strings.Join(opts[unitName][key], " "); !strings.Contains(v, want) {
			t.Errorf("%s %s = %q, want it to contain %q", unitName, key, v, want)
		}
	}
	expect(o.Layout.MountUnit(), "Unit.DefaultDependencies", "no")
	expect(o.Layout.MountUnit(), "Unit.After", "systemd-tmpfiles-setup.service")
	expect(o.Layout.MountUnit(), "Unit.Requires", "systemd-tmpfiles-setup.service")
	expect(o.Layout.MountUnit(), "Unit.Before", overlay.NMService)
	expect(o.Layout.MountUnit(), "Unit.Conflicts", "umount.target")
	expect(o.Layout.MountUnit(), "Mount.Options", "lowerdir=/etc/NetworkManager/system-connections,upperdir=/run/nm-overlay/upper,workdir=/run/nm-overlay/work,redirect_dir=off,index=off,metacopy=off,xino=off")
	if _, ok := mount["Unit.Before"]; ok && strings.Contains(strings.Join(mount["Unit.Before"], " "), "local-fs.target") {
		t.Error("Before=local-fs.target makes a cycle with systemd-tmpfiles-setup.service")
	}
	if _, ok := mount["Install.RequiredBy"]; ok {
		t.Error("RequiredBy= would let a failed mount stop NetworkManager")
	}
	expect(overlay.HelperService, "Unit.Before", overlay.NMService)
	expect(overlay.HelperService, "Unit.Wants", o.Layout.MountUnit())
	expect(overlay.HelperService, "Unit.ConditionFileIsExecutable", overlay.HelperBinary)
	expect(overlay.HelperService, "Service.ExecStart", overlay.HelperBinary+" setup")
	dropin := overlay.NMService + ".d/" + overlay.NMServiceDropIn
	expect(dropin, "Unit.After", overlay.HelperService)
	expect(dropin, "Unit.Wants", overlay.HelperService)
	expect(dropin, "Service.EnvironmentFile", "-"+o.Layout.NMEnvFile())
	if _, ok := opts[dropin]["Unit.Requires"]; ok {
		t.Error("NetworkManager must not require the helper")
	}
}

func TestRenderRejects(t *testing.T) {
	good := overlay.DefaultLayout()
	layout := func(mod func(*overlay.Layout)) overlay.Layout { l := good; mod(&l); return l }
	for _, tc := range []struct {
		name          string
		opts          Options
		field, reason string
	}{
		{"unknown pool", Options{Pools: []string{"wroker"}}, "pools[0]", "not master or worker"},
		{"uppercase pool", Options{Pools: []string{"Worker"}}, "pools[0]", "not a valid pool name"},
		{"pool too long", Options{Pools: []string{strings.Repeat("a", 64)}, CustomPools: []string{strings.Repeat("a", 64)}}, "customPools[0]", "not a valid pool name"},
		{"duplicate pool", Options{Pools: []string{"worker", "worker"}}, "pools[1]", "listed twice"},
		{"no pools", Options{}, "pools", "no pool given"},
		{"ignition 3.6.0", Options{Pools: []string{"worker"}, IgnitionVersion: "3.6.0"}, "ignitionVersion", "not supported"},
		{"ignition 3.1.0", Options{Pools: []string{"worker"}, IgnitionVersion: "3.1.0"}, "ignitionVersion", "not supported"},
		{"ignition 2.2.0", Options{Pools: []string{"worker"}, IgnitionVersion: "2.2.0"}, "ignitionVersion", "not supported"},
		{"ignition banana", Options{Pools: []string{"worker"}, IgnitionVersion: "banana"}, "ignitionVersion", "not supported"},
		{"relative run dir", Options{Pools: []string{"worker"}, Layout: layout(func(l *overlay.Layout) { l.RunDir = "run/x" })}, "layout.runDir", "not an absolute path"},
		{"run dir under /tmp", Options{Pools: []string{"worker"}, Layout: layout(func(l *overlay.Layout) { l.RunDir = "/tmp/x" })}, "layout.runDir", "under /tmp"},
		{"run dir in /run/NetworkManager", Options{Pools: []string{"worker"}, Layout: layout(func(l *overlay.Layout) { l.RunDir = "/run/NetworkManager/x" })}, "layout.runDir", "NetworkManager's runtime dir"},
		{"run dir /run", Options{Pools: []string{"worker"}, Layout: layout(func(l *overlay.Layout) { l.RunDir = "/run" })}, "layout.runDir", "below /run"},
		{"run dir with comma", Options{Pools: []string{"worker"}, Layout: layout(func(l *overlay.Layout) { l.RunDir = "/run/a,b" })}, "layout.runDir", "cannot carry"},
		{"lower under /run", Options{Pools: []string{"worker"}, Layout: layout(func(l *overlay.Layout) { l.Lower = "/run/keyfiles" })}, "layout.lower", "not persistent"},
		{"lower not clean", Options{Pools: []string{"worker"}, Layout: layout(func(l *overlay.Layout) { l.Lower = "/etc/NetworkManager/../x" })}, "layout.lower", "not a clean path"},
		{"bad selinux context", Options{Pools: []string{"worker"}, Layout: layout(func(l *overlay.Layout) { l.SELinuxContext = "etc_t" })}, "layout.selinuxContext", "not an SELinux context"},
		{"unknown safety option", Options{Pools: []string{"worker"}, SafetyOptions: []string{"volatile"}}, "safetyOptions[0]", "not one of"},
		{"duplicate safety option", Options{Pools: []string{"worker"}, SafetyOptions: []string{"index=off", "index=off"}}, "safetyOptions[1]", "listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mcs, err := Render(tc.opts)
			if mcs != nil {
				t.Errorf("rendered %d MachineConfigs despite the error", len(mcs))
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("want a field error, got %v", err)
			}
			if e.Field != tc.field || !strings.Contains(e.Reason, tc.reason) {
				t.Errorf("got %q, want field %q and a reason containing %q", err, tc.field, tc.reason)
			}
		})
	}
}

// TestApplyAndRemove writes the rendered config to a scratch root as MCO would and removes
// it again: exactly the rendered paths appear and disappear.
func TestApplyAndRemove(t *testing.T) {
	root := t.TempDir()
	o := Options{Pools: []string{"worker"}}
	if err := WriteToRoot(root, o); err != nil {
		t.Fatal(err)
	}
	l := overlay.DefaultLayout()
	for _, p := range l.MachineConfigFiles() {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s not written: %v", p, err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(root, l.KeyfileDropInPath()))
	if string(b) != l.KeyfileDropInContent() {
		t.Errorf("keyfile drop-in = %q", b)
	}
	if err := RemoveFromRoot(root, o); err != nil {
		t.Fatal(err)
	}
	for _, p := range l.MachineConfigFiles() {
		if _, err := os.Stat(filepath.Join(root, p)); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", p, err)
		}
	}
	bad, _ := json.Marshal(map[string]any{"ignition": map[string]any{"version": "3.2.0"},
		"systemd": map[string]any{"units": []any{map[string]any{"name": "x.service", "enabled": true, "contents": "[Unit]\n"}}}})
	if err := ApplyIgnition(root, bad); err == nil || !strings.Contains(err.Error(), "systemd.units[0]") {
		t.Errorf("enabled unit accepted: %v", err)
	}
}
