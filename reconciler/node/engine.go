package node

import (
	"context"

	"github.com/nmoverlay/nmoverlay/reconciler/networkmanager"
	"github.com/nmoverlay/nmoverlay/reconciler/state"
)

// NetworkManager is the Engine on a real node: every apply prunes, because the handler
// always hands over the node's whole desired state.
type NetworkManager struct {
	Client  *networkmanager.Client
	Options networkmanager.ApplyOptions
}

func (e NetworkManager) Apply(ctx context.Context, desired state.State) (Transaction, error) {
	opts := e.Options
	opts.Prune = true
	tx, err := e.Client.Apply(ctx, desired, opts)
	if err != nil {
		return nil, err // a typed nil *Transaction must not become a non-nil interface
	}
	return tx, nil
}
