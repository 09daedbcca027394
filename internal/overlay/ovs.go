package overlay

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/nmoverlay/nmoverlay/internal/ovsdb"
)

// CheckBridgeMappings names the boot's removal of nmoverlay's OVN bridge mappings.
const CheckBridgeMappings = "ovn-bridge-mappings"

// ClearBridgeMappings removes the OVN bridge mappings nmoverlay made (external_ids of
// Open vSwitch's database, which is persistent, unlike the tmpfs layer): at boot, before
// NetworkManager and the handler, so that a node that boots without the cluster is on its
// persistent configuration. Mappings others made are kept. Nothing to do where Open vSwitch
// does not run (no socket). It returns what it removed.
func ClearBridgeMappings(ctx context.Context, socket string) (ovsdb.Mappings, error) {
	if _, err := os.Stat(socket); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	c, err := ovsdb.Dial(ctx, socket)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	prev, err := c.Apply(ctx, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("removing nmoverlay's OVN bridge mappings: %w", err)
	}
	return prev.Owned, nil
}
