// Package snapshots records what the NetworkManager engine reads of a real node (its
// Snapshot) beside the desired state just applied there, for the engine's read-back
// tests (internal/networkmanager/testdata/snapshots). The node and VM tiers record when
// NMOVERLAY_RECORD_SNAPSHOTS names a directory.
package snapshots

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// Env names the directory to record into; unset, nothing is recorded.
const Env = "NMOVERLAY_RECORD_SNAPSHOTS"

// Recorded is one recording.
type Recorded struct {
	// Where says what was applied, and in which tier.
	Where    string                  `json:"where"`
	Desired  state.State             `json:"desired"`
	Snapshot networkmanager.Snapshot `json:"snapshot"`
}

var unsafeName = regexp.MustCompile(`[^a-z0-9]+`)

// Record writes what nm reads now, with desired, into dir as <name>.json; nothing when
// dir is "".
func Record(ctx context.Context, dir, name string, desired state.State, nm *networkmanager.Client) error {
	if dir == "" {
		return nil
	}
	snap, err := nm.Snapshot(ctx)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(Recorded{Where: name, Desired: desired, Snapshot: snap}, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	file := strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(name), "-"), "-")
	return os.WriteFile(filepath.Join(dir, file+".json"), append(b, '\n'), 0o644)
}
