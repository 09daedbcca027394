package machineconfigs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nmoverlay/nmoverlay/internal/paths"
)

// systemdAnalyze finds systemd-analyze. Under CI=true its absence fails the test: the tier
// must not pass by skipping.
func systemdAnalyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("systemd-analyze not found and CI=true: install systemd (%v)", err)
		}
		t.Skipf("systemd-analyze not found: %v", err)
	}
	return p
}

// analyzeVerify runs `systemd-analyze verify` on the units MachineConfig options o render,
// written under root as MCO writes them, and returns the output lines that are about them.
//
// How it is run: SYSTEMD_UNIT_PATH="<root>/etc/systemd/system:" puts the rendered units
// first in the search path and keeps the host's unit dirs after it (the trailing ':'), so
// their dependencies (systemd-tmpfiles-setup.service, sysinit.target, ...) resolve, and
// NetworkManager.service is loaded with the rendered drop-in. This works as root and as
// an ordinary user (systemd 252). --root=<root> does not: it resolves every unit inside
// root, so it would need a copy of the host's whole unit tree.
//
// What counts: lines naming the temporary root, the mount unit or the helper service, and
// NetworkManager.service's own messages (which the drop-in may cause). Not counted, only
// logged: "nm-overlay.service: Command /usr/local/bin/nm-overlay is not executable" while
// the helper is not installed on the test host (the DaemonSet installs it on nodes; the
// unit's ConditionFileIsExecutable= skips it until then), and messages about the host's
// own unit files.
func analyzeVerify(t *testing.T, analyze, root string, o Options) []string {
	t.Helper()
	unitDir := filepath.Join(root, paths.SystemdUnitDir)
	names := []string{}
	for _, u := range Units(o) {
		names = append(names, u.Name)
	}
	if !hostHasUnit(t, analyze, paths.NMService) {
		// A stand-in, so that the drop-in is loaded and checked on hosts without NetworkManager.
		stub := "[Unit]\nDescription=stand-in for the test\n\n[Service]\nExecStart=" + analyze + " --version\n"
		if err := os.WriteFile(filepath.Join(unitDir, paths.NMService), []byte(stub), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(analyze, append([]string{"verify", "--man=no"}, names...)...)
	cmd.Env = append(os.Environ(), "SYSTEMD_UNIT_PATH="+unitDir+":", "SYSTEMD_LOG_COLOR=0", "SYSTEMD_LOG_TIME=0", "SYSTEMD_LOG_LOCATION=0")
	out, err := cmd.CombinedOutput()
	t.Logf("systemd-analyze verify --man=no %s: %v\n%s", strings.Join(names, " "), err, out)

	l := o.WithDefaults().Layout
	helperMissing := !isExecutable(paths.HelperBinary)
	notExecutable := regexp.MustCompile(`^(\S+): Command (\S+) is not executable`)
	var problems []string
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if m := notExecutable.FindStringSubmatch(line); m != nil {
			if m[1] == paths.HelperService && m[2] == paths.HelperBinary && helperMissing {
				continue // the helper is not installed on this host
			}
			if m[1] == paths.NMService {
				continue // the host's NetworkManager.service, not ours
			}
		}
		ours := strings.Contains(line, root) ||
			strings.Contains(line, l.MountUnit()) ||
			strings.Contains(line, paths.HelperService) ||
			strings.HasPrefix(line, paths.NMService+":") ||
			strings.Contains(line, "Unit "+paths.NMService)
		if ours {
			problems = append(problems, line)
		}
	}
	if err != nil && len(problems) == 0 && !helperMissing {
		problems = append(problems, "systemd-analyze verify failed without naming a unit: "+err.Error())
	}
	return problems
}

// hostHasUnit reports whether unit exists in the host's unit search path.
func hostHasUnit(t *testing.T, analyze, unit string) bool {
	t.Helper()
	out, err := exec.Command(analyze, "unit-paths").Output()
	if err != nil {
		t.Fatalf("systemd-analyze unit-paths: %v", err)
	}
	for _, dir := range strings.Fields(string(out)) {
		if _, err := os.Stat(filepath.Join(dir, unit)); err == nil {
			return true
		}
	}
	return false
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// TestSystemdAnalyzeVerify checks every rendered unit and drop-in with systemd's own
// loader, for each golden configuration.
func TestSystemdAnalyzeVerify(t *testing.T) {
	analyze := systemdAnalyze(t)
	for _, tc := range goldenCases {
		t.Run(tc.golden, func(t *testing.T) {
			root := t.TempDir()
			if err := WriteToRoot(root, tc.opts); err != nil {
				t.Fatal(err)
			}
			if problems := analyzeVerify(t, analyze, root, tc.opts); len(problems) > 0 {
				t.Errorf("systemd-analyze verify reports problems with the rendered units:\n%s", strings.Join(problems, "\n"))
			}
		})
	}
}

// TestSystemdAnalyzeVerifyCatches makes sure the check above is not vacuous: units broken
// the way a renderer bug would break them are reported.
func TestSystemdAnalyzeVerifyCatches(t *testing.T) {
	analyze := systemdAnalyze(t)
	o := Options{Pools: []string{"worker"}}
	l := o.WithDefaults().Layout
	for _, tc := range []struct {
		name, path, old, new string
	}{
		{"Where= does not match the unit name", l.MountUnit(), "Where=" + l.Merged(), "Where=" + l.Merged() + "x"},
		{"unknown key in the helper", paths.HelperService, "RemainAfterExit=yes", "RemainAfterExit=yes\nRemainAfterExt=yes"},
		{"unknown key in the NetworkManager drop-in", paths.NMService + ".d/" + paths.NMServiceDropIn, "[Service]", "[Service]\nEnvironmentFiles=x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if err := WriteToRoot(root, o); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(root, paths.SystemdUnitDir, tc.path)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			broken := strings.Replace(string(b), tc.old, tc.new, 1)
			if broken == string(b) {
				t.Fatalf("%q not in %s", tc.old, tc.path)
			}
			if err := os.WriteFile(p, []byte(broken), 0o644); err != nil {
				t.Fatal(err)
			}
			if problems := analyzeVerify(t, analyze, root, o); len(problems) == 0 {
				t.Error("systemd-analyze verify found nothing wrong")
			}
		})
	}
}
