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

// Reconnecting closes every connection to the API server (CloseAll, from the dialer the
// clients use) after an apply and after its commit or rollback. A change of the node's
// addresses or routes leaves those connections dead without a word: HTTP/2 would find out
// only after its ping timeout (about 45 s), so the probes, the enactment writes and the
// watches would hang on them. Fresh connections cost a handful of requests per apply.
type Reconnecting struct {
	Engine
	CloseAll func()
}

func (r Reconnecting) Apply(ctx context.Context, desired state.State) (Transaction, error) {
	tx, err := r.Engine.Apply(ctx, desired)
	r.CloseAll() // the probes must see the network as it is now
	if err != nil {
		return nil, err
	}
	return reconnectingTx{tx, r.CloseAll}, nil
}

type reconnectingTx struct {
	Transaction
	closeAll func()
}

func (t reconnectingTx) Commit(ctx context.Context) error {
	defer t.closeAll()
	return t.Transaction.Commit(ctx)
}

func (t reconnectingTx) Rollback(ctx context.Context) error {
	defer t.closeAll()
	return t.Transaction.Rollback(ctx)
}
