package overlay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager/nmdbus"
	"github.com/nmoverlay/nmoverlay/internal/paths"
)

// Check is one verified property of the overlay.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Names of the checks, for callers and tests that look for one.
const (
	CheckLayout        = "layout"
	CheckMounted       = "mounted"
	CheckLayers        = "layers"
	CheckTmpfs         = "upper-on-tmpfs"
	CheckLowerStable   = "lower-unchanged"
	CheckNMConfig      = "nm-config"
	CheckNMEnabled     = "nm-enabled"
	CheckNMRunning     = "nm-running"
	CheckDegradedClear = "not-degraded"
)

// Report is the result of Verify.
type Report struct {
	OK     bool         `json:"ok"`
	Layout paths.Layout `json:"layout"`
	Checks []Check      `json:"checks"`
}

// Failed lists the checks that did not pass.
func (r Report) Failed() []Check {
	var f []Check
	for _, c := range r.Checks {
		if !c.OK {
			f = append(f, c)
		}
	}
	return f
}

// Reason is one line naming every failed check.
func (r Report) Reason() string {
	var parts []string
	for _, c := range r.Failed() {
		parts = append(parts, c.Name+": "+c.Detail)
	}
	return strings.Join(parts, "; ")
}

// VerifyOptions select how much of the host Verify looks at.
type VerifyOptions struct {
	NMConfig NMConfig
	// BeforeEnable verifies what Setup needs before it enables the overlay for
	// NetworkManager: the enable file and degraded marker are not checked yet, and
	// NetworkManager's configuration is judged as if the enable tag were set.
	BeforeEnable bool
}

// Verify checks that the overlay is what l describes and that NetworkManager uses it.
// It never changes the host.
func Verify(ctx context.Context, l paths.Layout, opts VerifyOptions) Report {
	r := Report{Layout: l}
	add := func(name string, ok bool, format string, args ...any) {
		r.Checks = append(r.Checks, Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	}
	if err := l.Validate(); err != nil {
		add(CheckLayout, false, "%v", err)
		r.OK = false
		return r
	}
	add(CheckLayout, true, "lower %s, upper %s, work %s, merged %s", l.Lower, l.Upper(), l.Work(), l.Merged())

	verifyMount(l, add)
	verifyTmpfs(l, add)

	if changed, entries, err := LowerChanged(l); err != nil {
		add(CheckLowerStable, false, "%v", err)
	} else if changed != "" {
		add(CheckLowerStable, false, "%s", changed)
	} else if entries >= 0 {
		add(CheckLowerStable, true, "%s unchanged since setup (%d entries)", l.Lower, entries)
	}

	enabled := fileExists(l.NMEnvFile())
	verifyNMConfig(l, opts, enabled, add)
	if !opts.BeforeEnable {
		verifyEnabled(l, enabled, add)
	}
	// Before enabling, a running NetworkManager has not read the new configuration yet: it
	// switches at its next start, so it must not block setup (or a degraded host could
	// never be repaired without a reboot).
	if !opts.BeforeEnable {
		verifyRunningNM(ctx, l, add)
	}

	r.OK = len(r.Failed()) == 0
	return r
}

// verifyMount checks that an overlay is mounted at the merged dir, and with the layout's
// layers.
func verifyMount(l paths.Layout, add func(string, bool, string, ...any)) {
	m, err := mountAt(l.Merged())
	switch {
	case err != nil:
		add(CheckMounted, false, "reading mounts: %v", err)
	case m == nil:
		add(CheckMounted, false, "nothing is mounted at %s", l.Merged())
	case m.FSType != "overlay":
		add(CheckMounted, false, "%s is a %s mount, not overlay", l.Merged(), m.FSType)
	default:
		add(CheckMounted, true, "overlay at %s", l.Merged())
		add(CheckLayers, layersMatch(m.VFSOptions, l), "%s", layersDetail(m.VFSOptions, l))
		verifySELinux(l, add)
	}
}

// verifyTmpfs checks that the upper and work dirs are on tmpfs, so that what is written
// to the overlay does not outlive a reboot.
func verifyTmpfs(l paths.Layout, add func(string, bool, string, ...any)) {
	tmpfsOK, detail := true, []string{}
	for _, d := range []string{l.Upper(), l.Work()} {
		ok, err := onTmpfs(d)
		if err != nil {
			tmpfsOK = false
			detail = append(detail, fmt.Sprintf("%s: %v", d, err))
			continue
		}
		if !ok {
			tmpfsOK = false
			detail = append(detail, d+" is not on tmpfs: its profiles would survive a reboot")
		} else {
			detail = append(detail, d+" on tmpfs")
		}
	}
	add(CheckTmpfs, tmpfsOK, "%s", strings.Join(detail, "; "))
}

// verifyNMConfig checks that NetworkManager's configuration makes the merged dir its
// keyfile path: as it is (enabled says whether the enable file is there), or, before
// enabling, as it will be once the enable tag is set.
func verifyNMConfig(l paths.Layout, opts VerifyOptions, enabled bool, add func(string, bool, string, ...any)) {
	tag := ""
	if enabled || opts.BeforeEnable {
		tag = paths.EnableTag
	}
	kp, err := opts.NMConfig.EffectiveKeyfilePath(tag)
	switch {
	case err != nil:
		add(CheckNMConfig, false, "reading NetworkManager configuration: %v", err)
	case kp.Path != l.Merged():
		why := "NetworkManager's built-in default"
		if kp.Source != "" {
			why = kp.Source
		}
		add(CheckNMConfig, false, "NetworkManager's keyfile path is %s (from %s), not %s", kp.Path, why, l.Merged())
	default:
		add(CheckNMConfig, true, "keyfile path %s (from %s)", kp.Path, kp.Source)
	}
}

// verifyEnabled checks that the enable file is there (enabled) and that no degraded
// marker is.
func verifyEnabled(l paths.Layout, enabled bool, add func(string, bool, string, ...any)) {
	if enabled {
		add(CheckNMEnabled, true, "%s enables %s", l.NMEnvFile(), paths.KeyfileDropIn)
	} else {
		add(CheckNMEnabled, false, "%s is missing: NetworkManager does not read %s", l.NMEnvFile(), paths.KeyfileDropIn)
	}
	if d, err := ReadDegraded(l); err != nil || d != nil {
		reason := "unreadable"
		if d != nil {
			reason = d.Reason
		}
		add(CheckDegradedClear, false, "degraded marker %s: %s", l.DegradedMarker(), reason)
	}
}

// verifyRunningNM checks where a running NetworkManager actually loaded its profiles from:
// its configuration is read at start, so the files alone do not prove it.
func verifyRunningNM(ctx context.Context, l paths.Layout, add func(string, bool, string, ...any)) {
	nm, err := nmdbus.ConnectIfRunning(ctx)
	if err != nil {
		add(CheckNMRunning, false, "%v", err)
		return
	}
	if nm == nil {
		add(CheckNMRunning, true, "NetworkManager is not running")
		return
	}
	defer nm.Close()
	profiles, err := nm.Profiles(ctx)
	if err != nil {
		add(CheckNMRunning, false, "%v", err)
		return
	}
	var elsewhere []string
	inMerged := 0
	for _, p := range profiles {
		dir := filepath.Dir(p.Filename)
		switch {
		case p.Filename == "" || dir == paths.NMRunProfiles || strings.HasPrefix(dir, "/usr/lib/NetworkManager/"):
			// in-memory or vendor profiles: not the keyfile dir's business
		case dir == l.Merged():
			inMerged++
		default:
			elsewhere = append(elsewhere, fmt.Sprintf("%q from %s", p.ID, p.Filename))
		}
	}
	if len(elsewhere) > 0 {
		add(CheckNMRunning, false, "running NetworkManager loaded profiles outside %s (restart it after fixing its configuration): %s",
			l.Merged(), strings.Join(elsewhere, ", "))
		return
	}
	add(CheckNMRunning, true, "running NetworkManager loaded %d profiles from %s", inMerged, l.Merged())
}

// layersMatch compares the mount's super options with the layout's layers.
func layersMatch(vfsOptions string, l paths.Layout) bool {
	got := overlayLayers(vfsOptions)
	return got["lowerdir"] == l.Lower && got["upperdir"] == l.Upper() && got["workdir"] == l.Work()
}

func layersDetail(vfsOptions string, l paths.Layout) string {
	got := overlayLayers(vfsOptions)
	if layersMatch(vfsOptions, l) {
		return fmt.Sprintf("lowerdir=%s upperdir=%s workdir=%s", got["lowerdir"], got["upperdir"], got["workdir"])
	}
	return fmt.Sprintf("mounted with lowerdir=%q upperdir=%q workdir=%q, want %q %q %q",
		got["lowerdir"], got["upperdir"], got["workdir"], l.Lower, l.Upper(), l.Work())
}

func overlayLayers(vfsOptions string) map[string]string {
	m := map[string]string{}
	for _, o := range strings.Split(vfsOptions, ",") {
		if k, v, ok := strings.Cut(o, "="); ok {
			m[k] = v
		}
	}
	return m
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// isMountpoint reports whether something is mounted exactly at path.
func isMountpoint(path string) bool {
	m, err := mountAt(path)
	return err == nil && m != nil
}

// LowerChanged says how the lower dir differs from what setup saw ("" when it does not):
// a write into it while the overlay is mounted is undefined for overlayfs, and is how
// MCO's Option C zeroed files (#2362). entries is how many it holds, -1 when setup saved
// no manifest (the overlay is not set up in this boot).
func LowerChanged(l paths.Layout) (changed string, entries int, err error) {
	want, err := loadManifest(l.LowerManifest())
	if errors.Is(err, os.ErrNotExist) {
		return "", -1, nil
	}
	if err != nil {
		return "", 0, fmt.Errorf("reading %s: %w", l.LowerManifest(), err)
	}
	now, err := ReadManifest(l.Lower)
	if err != nil {
		return "", 0, fmt.Errorf("reading %s: %w", l.Lower, err)
	}
	if d := want.Diff(now); len(d) > 0 {
		return fmt.Sprintf("%s was written while the overlay was mounted (undefined for overlayfs; reboot to see it consistently): %s",
			l.Lower, strings.Join(d, ", ")), len(now), nil
	}
	return "", len(now), nil
}
