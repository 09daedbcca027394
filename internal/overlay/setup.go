package overlay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/nmoverlay/nmoverlay/internal/atomicfile"
	"github.com/nmoverlay/nmoverlay/internal/networkmanager/nmdbus"
	"github.com/nmoverlay/nmoverlay/internal/ovsdb"
	"github.com/nmoverlay/nmoverlay/internal/paths"
)

// ErrDegraded is returned when the overlay could not be set up or verified; the host then
// runs NetworkManager on its persistent keyfile dir.
var ErrDegraded = errors.New("keyfile overlay degraded")

// Setup prepares and verifies the overlay, then enables it for NetworkManager. It is
// idempotent: what exists and is right is left alone. On any failure it degrades the host
// (Degrade) and returns the report with ErrDegraded.
func Setup(ctx context.Context, l paths.Layout, nmc NMConfig) (Report, error) {
	if err := l.Validate(); err != nil {
		r := Report{Layout: l, Checks: []Check{{Name: CheckLayout, Detail: err.Error()}}}
		return r, degradeWith(l, r)
	}
	if err := prepare(l); err != nil {
		r := Report{Layout: l, Checks: []Check{{Name: CheckMounted, Detail: err.Error()}}}
		return r, degradeWith(l, r)
	}
	if err := recordBootID(l); err != nil {
		r := Report{Layout: l, Checks: []Check{{Name: CheckMounted, Detail: err.Error()}}}
		return r, degradeWith(l, r)
	}
	// The first setup of a boot removes the bridge mappings of earlier boots (not this
	// boot's: a setup run again later must leave what the handler applied since), and
	// records lower, so later writes to it are detectable.
	if !fileExists(l.LowerManifest()) {
		if _, err := ClearBridgeMappings(ctx, ovsdb.DefaultSocket); err != nil {
			r := Report{Layout: l, Checks: []Check{{Name: CheckBridgeMappings, Detail: err.Error()}}}
			return r, degradeWith(l, r)
		}
		m, err := ReadManifest(l.Lower)
		if err == nil {
			err = saveManifest(l.LowerManifest(), m)
		}
		if err != nil {
			r := Report{Layout: l, Checks: []Check{{Name: CheckLowerStable, Detail: "recording " + l.Lower + ": " + err.Error()}}}
			return r, degradeWith(l, r)
		}
	}
	r := Verify(ctx, l, VerifyOptions{NMConfig: nmc, BeforeEnable: true})
	if !r.OK {
		return r, degradeWith(l, r)
	}
	enabledBefore := fileExists(l.NMEnvFile())
	if err := atomicfile.Write(l.NMEnvFile(), []byte(paths.NMEnvContent()), 0o644); err != nil {
		r.OK = false
		r.Checks = append(r.Checks, Check{Name: CheckNMEnabled, Detail: err.Error()})
		return r, degradeWith(l, r)
	}
	running, err := nmRunning(ctx)
	if err != nil {
		r.OK = false
		r.Checks = append(r.Checks, Check{Name: CheckNMRunning, Detail: err.Error()})
		return r, degradeWith(l, r)
	}
	if running && (!enabledBefore || !runsOnMerged(ctx, l)) {
		// A running NetworkManager reads the enable file only at its next start: until then
		// it writes to the persistent dir, so the node stays marked (the handler refuses).
		if err := writeDegraded(l, Degraded{Reason: ReasonRestartPending}); err != nil {
			return r, err
		}
		return Verify(ctx, l, VerifyOptions{NMConfig: nmc}), nil
	}
	if err := removeIfExists(l.DegradedMarker()); err != nil {
		return r, err
	}
	return Verify(ctx, l, VerifyOptions{NMConfig: nmc}), nil
}

// runsOnMerged says whether the running NetworkManager loaded its profiles from the merged
// dir only (it restarted since the overlay was enabled).
func runsOnMerged(ctx context.Context, l paths.Layout) bool {
	ok := false
	verifyRunningNM(ctx, l, func(_ string, passed bool, _ string, _ ...any) { ok = passed })
	return ok
}

// nmRunning says whether NetworkManager owns its bus name.
func nmRunning(ctx context.Context) (bool, error) {
	nm, err := nmdbus.ConnectIfRunning(ctx)
	if nm != nil {
		nm.Close()
	}
	return nm != nil, err
}

// prepare makes upper and work exist on tmpfs and mounts the overlay if the mount unit did not.
func prepare(l paths.Layout) error {
	if m, err := mountAt(l.Merged()); err != nil {
		return err
	} else if m != nil {
		return nil // mounted (by the mount unit): Verify judges whether it is right
	}
	if err := os.MkdirAll(l.RunDir, 0o700); err != nil {
		return err
	}
	// /run is tmpfs on every systemd host; where it is not, give the run dir its own.
	if ok, err := onTmpfs(l.RunDir); err != nil {
		return err
	} else if !ok && !isMountpoint(l.RunDir) {
		if err := unix.Mount("nmoverlay", l.RunDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0700,size=64m"); err != nil {
			return fmt.Errorf("mounting tmpfs at %s: %w", l.RunDir, err)
		}
	}
	for _, d := range []string{l.Upper(), l.Work(), l.Merged()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	return mountOverlay(l)
}

// recordBootID copies the kernel's boot ID to l.BootIDFile, for the handler.
func recordBootID(l paths.Layout) error {
	id, err := os.ReadFile(paths.KernelBootIDFile)
	if err != nil {
		return err
	}
	return atomicfile.Write(l.BootIDFile(), id, 0o644)
}

func mountOverlay(l paths.Layout) error {
	// As mount(8) (libmount), which the mount unit runs: SELinux options are left out where
	// SELinux is disabled, since the kernel then refuses them (EINVAL).
	if !SELinuxEnabled() {
		l.SELinuxContext = ""
	}
	opts := l.MountOptions(KernelSafetyOptions())
	if err := unix.Mount("overlay", l.Merged(), "overlay", 0, opts); err != nil {
		return fmt.Errorf("mount -t overlay -o %s overlay %s: %w", opts, l.Merged(), err)
	}
	return nil
}

// Degrade puts NetworkManager on the persistent keyfile dir for its next start and records
// why. It is what the tmpfiles defaults already say at boot; the helper repeats it so that a
// setup that fails later in a boot (or after a reset) leaves the same state.
func Degrade(l paths.Layout, d Degraded) error {
	var errs []error
	errs = append(errs, removeIfExists(l.NMEnvFile()))
	errs = append(errs, atomicfile.Write(l.PersistentDropInPath(), []byte(l.PersistentDropInContent()), 0o644))
	errs = append(errs, writeDegraded(l, d))
	return errors.Join(errs...)
}

func degradeWith(l paths.Layout, r Report) error {
	failed := r.Failed()
	if err := Degrade(l, Degraded{Reason: r.Reason(), Failed: failed}); err != nil {
		return fmt.Errorf("%w: %s (and degrading failed: %v)", ErrDegraded, r.Reason(), err)
	}
	return fmt.Errorf("%w: %s", ErrDegraded, r.Reason())
}

// Reset drops every ephemeral change without a reboot: the overlay is unmounted, upper and
// work are emptied, the overlay is mounted again and NetworkManager reloads its profiles.
// It refuses unless the overlay verifies, so it never empties a directory it does not own.
// It returns what was dropped.
func Reset(ctx context.Context, l paths.Layout, nmc NMConfig) ([]ProfileChange, error) {
	if r := Verify(ctx, l, VerifyOptions{NMConfig: nmc}); !r.OK {
		return nil, fmt.Errorf("refusing to reset an overlay that does not verify: %s", r.Reason())
	}
	dropped, err := Status(l)
	if err != nil {
		return nil, err
	}
	if err := unix.Unmount(l.Merged(), 0); err != nil {
		return nil, fmt.Errorf("unmounting %s: %w (something holds it open; nothing was changed)", l.Merged(), err)
	}
	if err := errors.Join(emptyDir(l.Upper()), emptyDir(l.Work())); err != nil {
		return nil, keepNetwork(l, fmt.Errorf("emptying the upper layer: %w", err))
	}
	if err := mountOverlay(l); err != nil {
		return nil, keepNetwork(l, err)
	}
	m, err := ReadManifest(l.Lower)
	if err == nil {
		err = saveManifest(l.LowerManifest(), m)
	}
	if err != nil {
		return nil, err
	}
	// The bridge mappings nmoverlay made are ephemeral changes too (in OVSDB).
	if _, err := ClearBridgeMappings(ctx, ovsdb.DefaultSocket); err != nil {
		return dropped, err
	}
	nm, err := nmdbus.ConnectIfRunning(ctx)
	if err != nil {
		return dropped, err
	}
	if nm != nil {
		defer nm.Close()
		if err := nm.Reload(ctx); err != nil {
			return dropped, err
		}
	}
	return dropped, nil
}

// keepNetwork is the last resort when the overlay cannot be mounted again under a running
// NetworkManager: the persistent dir is bind-mounted at the merged path, so NetworkManager
// still finds its persistent profiles, and the host is marked degraded.
func keepNetwork(l paths.Layout, cause error) error {
	if err := unix.Mount(l.Lower, l.Merged(), "", unix.MS_BIND, ""); err != nil {
		cause = fmt.Errorf("%w; binding %s at %s also failed: %v", cause, l.Lower, l.Merged(), err)
	}
	reason := "reset could not mount the overlay again; " + l.Lower + " is bind-mounted at " + l.Merged() +
		" so NetworkManager keeps its persistent profiles (writes now go to the persistent dir): " + cause.Error()
	return errors.Join(cause, Degrade(l, Degraded{Reason: reason}), ErrDegraded)
}

func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return errors.Join(errs...)
}
