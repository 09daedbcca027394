package machineconfigs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coreos/go-systemd/v22/unit"

	"github.com/nmoverlay/nmoverlay/internal/paths"
)

// unitOptions parses every rendered unit and drop-in with go-systemd, keyed by unit name
// (drop-ins as "<unit>.d/<name>") and "Section.Name".
func unitOptions(t *testing.T, o Options) map[string]map[string][]string {
	t.Helper()
	opts := map[string]map[string][]string{}
	add := func(name, contents string) {
		parsed, err := unit.DeserializeOptions(strings.NewReader(contents))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		opts[name] = map[string][]string{}
		for _, p := range parsed {
			opts[name][p.Section+"."+p.Name] = append(opts[name][p.Section+"."+p.Name], p.Value)
		}
	}
	for _, u := range Units(o) {
		if u.Contents != "" {
			add(u.Name, u.Contents)
		}
		for _, d := range u.Dropins {
			add(u.Name+".d/"+d.Name, d.Contents)
		}
	}
	return opts
}

// TestMountUnitNameMatchesWhere: systemd refuses a mount unit whose name is not its
// escaped Where=.
func TestMountUnitNameMatchesWhere(t *testing.T) {
	layouts := []paths.Layout{
		paths.DefaultLayout(),
		{Lower: paths.NMDefaultKeyfile, RunDir: "/run/nm-overlay"},
		{Lower: "/var/lib/keyfiles", RunDir: "/run/a.b/c_d/nmoverlay"},
	}
	for _, tc := range goldenCases {
		layouts = append(layouts, tc.opts.WithDefaults().Layout)
	}
	for _, l := range layouts {
		o := Options{Pools: []string{"worker"}, Layout: l}
		if err := o.Validate(); err != nil {
			t.Fatal(err)
		}
		units := Units(o)
		if units[0].Name != l.MountUnit() {
			t.Fatalf("first unit is %s, want the mount unit %s", units[0].Name, l.MountUnit())
		}
		where := unitOptions(t, o)[units[0].Name]["Mount.Where"]
		if len(where) != 1 || where[0] != l.Merged() {
			t.Fatalf("Where=%v, want %s", where, l.Merged())
		}
		if got := unit.UnitNamePathEscape(where[0]) + ".mount"; got != units[0].Name {
			t.Errorf("mount unit %s for Where=%s (escaped %s)", units[0].Name, where[0], got)
		}
	}
	if got := (paths.Layout{RunDir: "/run/nm-overlay"}).MountUnit(); got != `run-nm\x2doverlay-merged.mount` {
		t.Errorf("escaping changed: %s", got)
	}
}

// TestUnits checks what the boot order and the fail-safe rest on.
func TestUnits(t *testing.T) {
	o := Options{Pools: []string{"worker"}, Layout: paths.Layout{Lower: paths.NMDefaultKeyfile, RunDir: "/run/nm-overlay"}}.WithDefaults()
	opts := unitOptions(t, o)
	mountName := o.Layout.MountUnit()
	mount := opts[mountName]
	if mount == nil {
		t.Fatalf("no mount unit named %s: %v", mountName, opts)
	}
	expect := func(unitName, key, want string) {
		t.Helper()
		if v := strings.Join(opts[unitName][key], " "); v != want {
			t.Errorf("%s %s = %q, want %q", unitName, key, v, want)
		}
	}
	expect(mountName, "Unit.DefaultDependencies", "no")
	expect(mountName, "Unit.Requires", "systemd-tmpfiles-setup.service")
	expect(mountName, "Unit.After", "systemd-tmpfiles-setup.service "+paths.MigrateService)
	expect(mountName, "Unit.Wants", paths.MigrateService)
	// The migration runs before the mount, only with a plan, and never keeps it off.
	expect(paths.MigrateService, "Unit.Before", mountName+" "+paths.HelperService+" "+paths.NMService+" shutdown.target")
	expect(paths.MigrateService, "Unit.ConditionPathExists", paths.MigrationPlan)
	expect(paths.MigrateService, "Service.ExecStart", paths.HelperBinary+" migrate-profiles")
	expect(mountName, "Unit.Before", paths.HelperService+" "+paths.NMService+" umount.target")
	expect(mountName, "Unit.Conflicts", "umount.target")
	expect(mountName, "Mount.What", "overlay")
	expect(mountName, "Mount.Type", "overlay")
	expect(mountName, "Mount.Options", "lowerdir=/etc/NetworkManager/system-connections,upperdir=/run/nm-overlay/upper,workdir=/run/nm-overlay/work,redirect_dir=off,index=off,metacopy=off,xino=off")
	for name, u := range opts {
		for key := range u {
			if strings.HasPrefix(key, "Install.") {
				t.Errorf("%s has %s: no unit is enabled; RequiredBy= would let a failed mount stop NetworkManager", name, key)
			}
		}
	}
	expect(paths.HelperService, "Unit.Wants", mountName)
	expect(paths.HelperService, "Unit.After", mountName+" systemd-tmpfiles-setup.service "+paths.OVSDBService)
	expect(paths.HelperService, "Unit.Before", paths.NMService)
	expect(paths.HelperService, "Unit.ConditionFileIsExecutable", paths.HelperBinary)
	expect(paths.HelperService, "Service.Type", "oneshot")
	expect(paths.HelperService, "Service.RemainAfterExit", "yes")
	expect(paths.HelperService, "Service.NotifyAccess", "main")
	expect(paths.HelperService, "Service.ExecStart", paths.HelperBinary+" setup")
	// The late enable: started when the helper appears, once (a failure must not restart it
	// in a loop), after a NetworkManager that may be starting.
	expect(paths.EnablePath, "Path.PathExists", paths.HelperBinary)
	expect(paths.EnablePath, "Path.Unit", paths.EnableService)
	expect(paths.EnableService, "Unit.After", paths.HelperService+" "+paths.NMService)
	expect(paths.EnableService, "Unit.ConditionFileIsExecutable", paths.HelperBinary)
	expect(paths.EnableService, "Service.Type", "oneshot")
	expect(paths.EnableService, "Service.RemainAfterExit", "yes")
	expect(paths.EnableService, "Service.ExecStart", "-"+paths.HelperBinary+" enable")
	dropin := paths.NMService + ".d/" + paths.NMServiceDropIn
	expect(dropin, "Unit.Wants", paths.HelperService+" "+paths.EnablePath)
	expect(dropin, "Unit.After", paths.HelperService)
	expect(dropin, "Service.EnvironmentFile", "-"+o.Layout.NMEnvFile())
	if len(opts[dropin]) != 3 {
		t.Errorf("NetworkManager drop-in sets %v; it must not require the helper or the mount", opts[dropin])
	}
	if !strings.Contains(Units(o)[0].Contents, "# RequiredBy="+paths.NMService) {
		t.Error("the mount unit does not say why it has no RequiredBy=")
	}
}

// TestApplyAndRemove writes the rendered config to a scratch root as MCO would and removes
// it again: exactly the rendered paths appear and disappear, and overlay's list of
// MachineConfig files (which the helper refuses to touch) is the rendered one.
func TestApplyAndRemove(t *testing.T) {
	o := goldenCases[2].opts
	l := o.WithDefaults().Layout
	if got, want := slices.Sorted(slices.Values(Paths(o))), slices.Sorted(slices.Values(l.MachineConfigFiles())); !slices.Equal(got, want) {
		t.Errorf("rendered paths %v, paths.Layout.MachineConfigFiles %v", got, want)
	}
	root := t.TempDir()
	if err := WriteToRoot(root, o); err != nil {
		t.Fatal(err)
	}
	var written []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			written = append(written, strings.TrimPrefix(p, root))
		}
		return err
	})
	slices.Sort(written)
	if want := slices.Sorted(slices.Values(Paths(o))); !slices.Equal(written, want) {
		t.Errorf("wrote %v, want %v", written, want)
	}
	for _, f := range Files(o) {
		checkFile(t, filepath.Join(root, f.Path), f.Contents)
	}
	for _, u := range Units(o) {
		if u.Contents != "" {
			checkFile(t, filepath.Join(root, u.Path()), u.Contents)
		}
		for _, d := range u.Dropins {
			checkFile(t, filepath.Join(root, u.DropinPath(d)), d.Contents)
		}
	}
	// Applying again (an MCO re-sync) overwrites in place.
	if err := WriteToRoot(root, o); err != nil {
		t.Fatal(err)
	}
	if err := RemoveFromRoot(root, o); err != nil {
		t.Fatal(err)
	}
	for _, p := range Paths(o) {
		if _, err := os.Lstat(filepath.Join(root, p)); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", p, err)
		}
	}
	// MCO leaves directories, the empty drop-in dir included; nm-overlay uninstall removes it.
	if entries, err := os.ReadDir(filepath.Join(root, filepath.Dir(l.NMServiceDropInPath()))); err != nil || len(entries) != 0 {
		t.Errorf("drop-in dir: %v %v, want it empty and present as MCO leaves it", entries, err)
	}
	if err := RemoveFromRoot(root, o); err != nil {
		t.Errorf("removing twice: %v", err)
	}
	if err := WriteToRoot(root, Options{}); err == nil {
		t.Error("WriteToRoot accepted invalid options")
	}
}

func checkFile(t *testing.T, path, contents string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != contents {
		t.Errorf("%s = %q, want %q", path, b, contents)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode() != fileMode {
		t.Errorf("%s mode %v, want %v", path, st.Mode(), fileMode)
	}
}

func TestApplyIgnitionRefusesWhatItCannotWrite(t *testing.T) {
	bad, _ := json.Marshal(map[string]any{"ignition": map[string]any{"version": "3.2.0"},
		"systemd": map[string]any{"units": []any{map[string]any{"name": "x.service", "enabled": true, "contents": "[Unit]\n"}}}})
	if err := ApplyIgnition(t.TempDir(), bad); err == nil || !strings.Contains(err.Error(), "systemd.units[0]") {
		t.Errorf("enabled unit accepted: %v", err)
	}
}
