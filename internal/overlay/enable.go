package overlay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nmoverlay/nmoverlay/internal/paths"
)

// EnableAction is what `nm-overlay enable` does on a host, decided from its state.
type EnableAction string

const (
	// EnableNothing: the overlay is in use in this boot already.
	EnableNothing EnableAction = "nothing"
	// EnableRefuse: the tmpfs layer holds files no NetworkManager on the overlay wrote;
	// enabling it would load them.
	EnableRefuse EnableAction = "refuse"
	// EnableSetUp: set the overlay up, and move a running NetworkManager onto it.
	EnableSetUp EnableAction = "setup"
)

// DecideEnable decides from the degraded marker (nil: the overlay is in use) and how
// many entries the tmpfs layer holds.
func DecideEnable(marker *Degraded, upperEntries int) (EnableAction, string) {
	switch {
	case marker == nil:
		return EnableNothing, "the keyfile overlay is in use in this boot"
	case upperEntries > 0:
		return EnableRefuse, fmt.Sprintf("not enabling the keyfile overlay in this boot: its tmpfs layer already holds %d entries that NetworkManager did not write through it; reboot to start from an empty layer", upperEntries)
	default:
		return EnableSetUp, "enabling the keyfile overlay (" + marker.Reason + ")"
	}
}

// Enable sets the overlay up in a boot whose NetworkManager started without it (the
// MachineConfig reached the node before the handler DaemonSet installed the helper, or
// setup failed and was fixed since), then restarts NetworkManager onto it, so no reboot is
// needed. The degraded marker stays until NetworkManager runs on the merged dir: the
// handler refuses policies until then. restartNM restarts NetworkManager and returns once
// it runs again. It returns the action taken and the final report.
func Enable(ctx context.Context, l paths.Layout, nmc NMConfig, restartNM func(context.Context) error) (EnableAction, Report, error) {
	marker, err := ReadDegraded(l)
	if err != nil {
		return EnableRefuse, Report{Layout: l}, err
	}
	entries, err := os.ReadDir(l.Upper())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return EnableRefuse, Report{Layout: l}, err
	}
	action, why := DecideEnable(marker, len(entries))
	switch action {
	case EnableNothing:
		// No marker: setup verified the overlay in this boot. Not verified again here: at
		// boot this runs while NetworkManager is still starting, and its answer then is no
		// news (nm-overlay verify is the check).
		return action, Report{OK: true, Layout: l}, nil
	case EnableRefuse:
		r := Report{Layout: l, Checks: []Check{{Name: CheckLayers, Detail: why}}}
		return action, r, degradeWith(l, r)
	}
	r, err := Setup(ctx, l, nmc)
	if err != nil || r.OK {
		return action, r, err // degraded with its reason, or NetworkManager was not running
	}
	if marker, err := ReadDegraded(l); err != nil || marker == nil || marker.Reason != ReasonRestartPending {
		return action, r, err
	}
	if err := restartNM(ctx); err != nil {
		r := Report{Layout: l, Checks: []Check{{Name: CheckNMRunning, Detail: "restarting " + paths.NMService + ": " + err.Error()}}}
		return action, r, degradeWith(l, r)
	}
	// Setup again, to clear the marker, once NetworkManager answers with what it loaded:
	// systemd's job is done when NetworkManager owns its bus name, a little before.
	// (A loop of its own: the helper carries no Kubernetes library.)
	for deadline := time.Now().Add(20 * time.Second); !runsOnMerged(ctx, l) && time.Now().Before(deadline) && ctx.Err() == nil; {
		time.Sleep(200 * time.Millisecond)
	}
	r, err = Setup(ctx, l, nmc)
	return action, r, err
}
