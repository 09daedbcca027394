package overlay

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nmoverlay/nmoverlay/internal/atomicfile"
	"github.com/nmoverlay/nmoverlay/internal/paths"
)

// Degraded is the content of the degraded marker: why this boot's overlay is not in use.
type Degraded struct {
	Reason string `json:"reason"`
	// Failed lists the verification checks that failed, when the helper got that far.
	Failed []Check    `json:"failed,omitempty"`
	Since  *time.Time `json:"since,omitempty"`
}

// ReasonRestartPending is the marker setup leaves when it enabled the overlay under a
// running NetworkManager: that NetworkManager still uses the persistent keyfile dir.
const ReasonRestartPending = "the keyfile overlay is verified and enabled, but the running NetworkManager started before and uses the persistent keyfile dir until it restarts (nm-overlay enable restarts it)"

// ReadDegraded returns the host's degraded marker, or nil when the overlay is verified.
func ReadDegraded(l paths.Layout) (*Degraded, error) {
	b, err := os.ReadFile(l.DegradedMarker())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	d := &Degraded{}
	if err := json.Unmarshal(b, d); err != nil {
		// A marker is a marker, whatever wrote it.
		return &Degraded{Reason: fmt.Sprintf("unreadable degraded marker: %s", string(b))}, nil
	}
	return d, nil
}

func writeDegraded(l paths.Layout, d Degraded) error {
	now := time.Now().UTC().Truncate(time.Second)
	d.Since = &now
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(l.RunDir, 0o700); err != nil {
		return err
	}
	return atomicfile.Write(l.DegradedMarker(), append(b, '\n'), 0o644)
}

// ReasonNotSetUp is why a node on which nm-overlay never ran refuses policies: no
// MachineConfig put the keyfile dir on an overlay, so a profile would be written to the
// persistent dir and outlive a reboot.
const ReasonNotSetUp = "no keyfile overlay on this node: neither a degraded marker nor a verified setup in this boot (the MachineConfig is not applied, or the node has not rebooted since); NetworkManager writes to the persistent keyfile dir"

// InUse says why policies must not be applied on this node now ("" when they may): the
// degraded marker (the overlay is not verified in this boot), no sign of nm-overlay at all
// (the MachineConfig is not applied), or a write into the lower dir since setup (what
// overlayfs then shows is undefined). The handler asks before each pass and the
// NodeNetworkState reports it.
func InUse(l paths.Layout) (string, error) {
	d, err := ReadDegraded(l)
	if err != nil {
		return "", err
	}
	if d != nil {
		return d.Reason, nil
	}
	changed, entries, err := LowerChanged(l)
	if err != nil {
		return "", err
	}
	if entries < 0 {
		// A verified setup always recorded the lower dir.
		return ReasonNotSetUp, nil
	}
	return changed, nil
}
