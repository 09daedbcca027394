package machineconfigs

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/util"
	"github.com/coreos/vcontext/report"
	"github.com/vincent-petithory/dataurl"
	"sigs.k8s.io/yaml"

	v3_2 "github.com/coreos/ignition/v2/config/v3_2"
	v3_4 "github.com/coreos/ignition/v2/config/v3_4"
	v3_5 "github.com/coreos/ignition/v2/config/v3_5"

	"github.com/nmoverlay/nmoverlay/api/field"
	"github.com/nmoverlay/nmoverlay/internal/paths"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var goldenCases = []struct {
	golden string
	opts   Options
}{
	{"worker-3.2.0.yaml", Options{Pools: []string{"worker"}}},
	{"worker-3.2.0-no-selinux.yaml", Options{Pools: []string{"worker"},
		Layout: paths.Layout{Lower: paths.NMDefaultKeyfile, RunDir: paths.DefaultRunDir}}},
	{"worker-master-3.4.0.yaml", Options{Pools: []string{"worker", "master"}, IgnitionVersion: "3.4.0"}},
	{"infra-3.5.0-selinux.yaml", Options{
		Pools: []string{"infra"}, CustomPools: []string{"infra"}, IgnitionVersion: "3.5.0",
		Layout: paths.Layout{
			Lower:          paths.NMDefaultKeyfile,
			RunDir:         "/run/nm-overlay",
			SELinuxContext: "system_u:object_r:NetworkManager_etc_rw_t:s0",
		},
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

// parse runs Ignition's own parser (and so validate.ValidateWithContext) for one version.
func parse(t *testing.T, version string, config []byte) report.Report {
	t.Helper()
	var rpt report.Report
	var err error
	switch version {
	case "3.2.0":
		_, rpt, err = v3_2.Parse(config)
	case "3.4.0":
		_, rpt, err = v3_4.Parse(config)
	case "3.5.0":
		_, rpt, err = v3_5.Parse(config)
	default:
		t.Fatalf("no parser for %s", version)
	}
	if err != nil {
		t.Fatalf("ignition %s: %v %s", version, err, rpt.String())
	}
	return rpt
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
				if mc.APIVersion != APIVersion || mc.Kind != Kind || mc.Metadata.Name != "99-"+pool+"-nmoverlay" ||
					mc.Metadata.Labels[RoleLabel] != pool || mc.Metadata.Labels[ManagedByLabel] != ManagedBy || len(mc.Metadata.Labels) != 2 {
					t.Errorf("document %d: %+v", i, mc)
				}
				version, rpt, err := util.GetConfigVersion(mc.Spec.Config)
				if err != nil || version.String() != o.IgnitionVersion {
					t.Fatalf("version %v (%v %s), want %s", version, err, rpt.String(), o.IgnitionVersion)
				}
				if rpt := parse(t, o.IgnitionVersion, mc.Spec.Config); rpt.IsFatal() || len(rpt.Entries) != 0 {
					t.Fatalf("ignition %s: %s", o.IgnitionVersion, rpt.String())
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
	l := o.Layout
	want := map[string]string{
		l.KeyfileDropInPath(): l.KeyfileDropInContent(),
		paths.TmpfilesConf:    l.TmpfilesContent(),
		paths.LayoutFile:      string(l.MarshalLayoutFile()),
	}
	wantUnits := []string{l.MountUnit(), paths.HelperService, paths.EnablePath, paths.EnableService, paths.MigrateService, paths.NMService}
	if l.SELinuxContext != "" {
		want[paths.SELinuxModuleFile] = SELinuxModule()
		wantUnits = append(wantUnits, paths.SELinuxService)
	}
	if len(cfg.Storage.Files) != len(want) {
		t.Errorf("%d files, want %d", len(cfg.Storage.Files), len(want))
	}
	for _, f := range cfg.Storage.Files {
		d, err := dataurl.DecodeString(*f.Contents.Source)
		if err != nil {
			t.Fatal(err)
		}
		w, ok := want[f.Path]
		if !ok || string(d.Data) != w {
			t.Errorf("%s: decoded %q, want %q", f.Path, d.Data, w)
		}
		if f.Mode == nil || *f.Mode != 0o644 || f.Overwrite == nil || !*f.Overwrite ||
			f.User.Name == nil || *f.User.Name != "root" || f.Group.Name == nil || *f.Group.Name != "root" {
			t.Errorf("%s: want root:root 0644 overwritten, got %+v", f.Path, f.Node)
		}
		if !strings.HasPrefix(*f.Contents.Source, "data:,") || strings.Contains(*f.Contents.Source, "+") {
			t.Errorf("%s: not a plain percent-encoded data URL: %s", f.Path, *f.Contents.Source)
		}
	}
	units := map[string]string{}
	for _, u := range cfg.Systemd.Units {
		if u.Contents != nil {
			units[u.Name] = *u.Contents
		} else {
			units[u.Name] = ""
		}
		if u.Enabled != nil || u.Mask != nil {
			t.Errorf("%s: enabled/mask set; units are pulled in by the NetworkManager drop-in", u.Name)
		}
	}
	if len(units) != len(wantUnits) {
		t.Errorf("%d units, want %v", len(units), wantUnits)
	}
	for _, name := range wantUnits {
		if _, ok := units[name]; !ok {
			t.Errorf("unit %s missing", name)
		}
	}
	// The policy module is loaded before the overlay is mounted: the mount wants it and
	// comes after it, and it comes before the mount, the helper and NetworkManager.
	if l.SELinuxContext != "" {
		mount, selinux := unitSection(units[l.MountUnit()]), unitSection(units[paths.SELinuxService])
		if !slices.Contains(mount["Wants"], paths.SELinuxService) || !slices.Contains(mount["After"], paths.SELinuxService) {
			t.Errorf("the mount unit neither wants nor follows %s: %v", paths.SELinuxService, mount)
		}
		for _, u := range []string{l.MountUnit(), paths.HelperService, paths.NMService} {
			if !slices.Contains(selinux["Before"], u) {
				t.Errorf("%s is not ordered before %s: %v", paths.SELinuxService, u, selinux)
			}
		}
		if !slices.Contains(selinux["ConditionSecurity"], "selinux") {
			t.Errorf("%s runs on hosts without SELinux: %v", paths.SELinuxService, selinux)
		}
	} else if strings.Contains(units[l.MountUnit()], "context=") {
		t.Errorf("a layout without a context renders a mount with one")
	}
}

// unitSection is a unit file's [Unit] directives, each value split on spaces.
func unitSection(contents string) map[string][]string {
	out := map[string][]string{}
	inUnit := false
	for _, line := range strings.Split(contents, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			inUnit = line == "[Unit]"
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && inUnit && !strings.HasPrefix(line, "#") {
			out[k] = append(out[k], strings.Fields(v)...)
		}
	}
	return out
}

// TestDataURLRoundTrip encodes what url.QueryEscape would corrupt and decodes it with the
// package Ignition (and MCO) use.
func TestDataURLRoundTrip(t *testing.T) {
	for _, s := range []string{
		"",
		"a b+c%20d\n",
		"path=/run/x,y;z?q#frag&k=v\t\\\"'\n",
		"unicode: é ✓ \x00\xff\n",
		paths.DefaultLayout().TmpfilesContent(),
	} {
		u := dataURL(s)
		if strings.Contains(u, "+") || strings.Contains(u, " ") {
			t.Errorf("%q: encoded with '+' or a raw space: %s", s, u)
		}
		d, err := dataurl.DecodeString(u)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if string(d.Data) != s {
			t.Errorf("round trip of %q gave %q", s, d.Data)
		}
	}
}

// TestIgnitionVersion: one config, only ignition.version differs between the versions.
func TestIgnitionVersion(t *testing.T) {
	base, err := Ignition(Options{Pools: []string{"worker"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range SupportedIgnitionVersions {
		b, err := Ignition(Options{Pools: []string{"worker"}, IgnitionVersion: v})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Replace(string(b), `"version":"`+v+`"`, `"version":"3.2.0"`, 1); got != string(base) {
			t.Errorf("%s differs from 3.2.0 beyond the version:\n%s\n%s", v, b, base)
		}
	}
}

func TestRenderRejects(t *testing.T) {
	good := paths.DefaultLayout()
	layout := func(mod func(*paths.Layout)) paths.Layout { l := good; mod(&l); return l }
	worker := []string{"worker"}
	for _, tc := range []struct {
		name          string
		opts          Options
		field, reason string
	}{
		{"unknown pool", Options{Pools: []string{"worker", "wroker"}}, "pools[1]", `"wroker" is not master or worker and not declared as a custom pool`},
		{"uppercase pool", Options{Pools: []string{"Worker"}}, "pools[0]", "not a valid pool name"},
		{"pool with underscore", Options{Pools: []string{"my_pool"}, CustomPools: []string{"my_pool"}}, "customPools[0]", "DNS-1123"},
		{"pool too long", Options{Pools: []string{strings.Repeat("a", 64)}, CustomPools: []string{strings.Repeat("a", 64)}}, "customPools[0]", "no more than 63 characters"},
		{"empty pool", Options{Pools: []string{""}}, "pools[0]", "not a valid pool name"},
		{"duplicate pool", Options{Pools: []string{"worker", "master", "worker"}}, "pools[2]", "listed twice"},
		{"duplicate custom pool", Options{Pools: []string{"infra"}, CustomPools: []string{"infra", "infra"}}, "customPools[1]", "listed twice"},
		{"no pools", Options{}, "pools", "no pool given"},
		{"empty pools", Options{Pools: []string{}}, "pools", "no pool given"},
		{"ignition 3.6.0", Options{Pools: worker, IgnitionVersion: "3.6.0"}, "ignitionVersion", `"3.6.0" is not supported`},
		{"ignition 3.3.0", Options{Pools: worker, IgnitionVersion: "3.3.0"}, "ignitionVersion", "not supported"},
		{"ignition 3.1.0", Options{Pools: worker, IgnitionVersion: "3.1.0"}, "ignitionVersion", "not supported"},
		{"ignition 2.2.0", Options{Pools: worker, IgnitionVersion: "2.2.0"}, "ignitionVersion", "not supported"},
		{"ignition banana", Options{Pools: worker, IgnitionVersion: "banana"}, "ignitionVersion", "not supported"},
		{"relative run dir", Options{Pools: worker, Layout: layout(func(l *paths.Layout) { l.RunDir = "run/x" })}, "layout.runDir", "not an absolute path"},
		{"run dir under /tmp", Options{Pools: worker, Layout: layout(func(l *paths.Layout) { l.RunDir = "/tmp/x" })}, "layout.runDir", "under /tmp"},
		{"run dir in /run/NetworkManager", Options{Pools: worker, Layout: layout(func(l *paths.Layout) { l.RunDir = "/run/NetworkManager/x" })}, "layout.runDir", "NetworkManager's runtime dir"},
		{"run dir /run", Options{Pools: worker, Layout: layout(func(l *paths.Layout) { l.RunDir = "/run" })}, "layout.runDir", "below /run"},
		{"run dir with comma", Options{Pools: worker, Layout: layout(func(l *paths.Layout) { l.RunDir = "/run/a,b" })}, "layout.runDir", "cannot carry"},
		{"lower under /run", Options{Pools: worker, Layout: layout(func(l *paths.Layout) { l.Lower = "/run/keyfiles" })}, "layout.lower", "not persistent"},
		{"lower not clean", Options{Pools: worker, Layout: layout(func(l *paths.Layout) { l.Lower = "/etc/NetworkManager/../x" })}, "layout.lower", "not a clean path"},
		{"bad selinux context", Options{Pools: worker, Layout: layout(func(l *paths.Layout) { l.SELinuxContext = "etc_t" })}, "layout.selinuxContext", "not an SELinux context"},
		{"selinux context with comma", Options{Pools: worker, Layout: layout(func(l *paths.Layout) { l.SELinuxContext = "a:b:c:s0:c1,c2" })}, "layout.selinuxContext", "commas"},
		{"unknown safety option", Options{Pools: worker, SafetyOptions: []string{"index=off", "volatile"}}, "safetyOptions[1]", `"volatile" is not one of`},
		{"duplicate safety option", Options{Pools: worker, SafetyOptions: []string{"index=off", "index=off"}}, "safetyOptions[1]", "listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mcs, err := Render(tc.opts)
			if mcs != nil {
				t.Errorf("rendered %d MachineConfigs despite the error", len(mcs))
			}
			var e *field.Error
			if !errors.As(err, &e) {
				t.Fatalf("want a field error, got %v", err)
			}
			if e.Path != tc.field || !strings.Contains(e.Reason, tc.reason) {
				t.Errorf("got %q, want field %q and a reason containing %q", err, tc.field, tc.reason)
			}
			if !strings.HasPrefix(err.Error(), tc.field+": ") {
				t.Errorf("%q does not start with the field path", err)
			}
			if b, err := Ignition(tc.opts); b != nil || err == nil {
				t.Errorf("Ignition rendered %d bytes despite the error", len(b))
			}
		})
	}
}

func TestSafetyOptionsNoneAndSubset(t *testing.T) {
	for _, tc := range []struct {
		safety []string
		want   string
	}{
		{nil, ",redirect_dir=off,index=off,metacopy=off,xino=off,context=\"" + paths.DefaultSELinuxContext + "\"\n"},
		{[]string{}, "workdir=/run/nmoverlay/work,context=\"" + paths.DefaultSELinuxContext + "\"\n"},
		{[]string{"xino=off"}, "workdir=/run/nmoverlay/work,xino=off,context=\"" + paths.DefaultSELinuxContext + "\"\n"},
	} {
		o := Options{Pools: []string{"worker"}, SafetyOptions: tc.safety}
		if err := o.Validate(); err != nil {
			t.Fatal(err)
		}
		if mount := Units(o)[0].Contents; !strings.HasSuffix(mount, tc.want) {
			t.Errorf("safety %v: mount unit ends %q, want %q", tc.safety, mount[len(mount)-80:], tc.want)
		}
	}
}
