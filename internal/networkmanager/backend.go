package networkmanager

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nmoverlay/nmoverlay/api/field"
	"github.com/nmoverlay/nmoverlay/internal/backend"
	"github.com/nmoverlay/nmoverlay/internal/ovsdb"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// Backend is the networkmanager backend: the engine (Client) over NetworkManager's D-Bus
// API, on nmstate's schema. Every apply prunes, because the handler always hands
// over the node's whole desired state. OVN's bridge mappings, which live in Open vSwitch's
// database, are written in the same transaction, after NetworkManager's part: its
// rollback undoes them too.
type Backend struct {
	backend.NMState
	Client  *Client
	Options ApplyOptions
	// OVSDBSocket is ovsdb-server's socket. A node without one has no Open vSwitch: a
	// state with bridge mappings is refused there, with nothing changed.
	OVSDBSocket string
}

func (e Backend) Apply(ctx context.Context, d backend.Desired) (backend.Transaction, error) {
	desired, err := backend.NMStateOf(d)
	if err != nil {
		return nil, err
	}
	opts := e.Options
	opts.Prune = true
	db, err := e.mappings(ctx, desired.OVN)
	if err != nil {
		return nil, err
	}
	nmState := desired
	nmState.OVN = nil
	tx, err := e.Client.Apply(ctx, nmState, opts)
	if err != nil {
		db.close()
		return nil, BackendError(err) // a typed nil *Transaction must not become a non-nil interface
	}
	if db == nil {
		return tx, nil
	}
	prev, err := db.client.Apply(ctx, db.want, db.absent)
	if err == nil {
		err = db.verify(ctx, desired.OVN)
	}
	if err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		var undoErr error
		if prev.All != nil { // read before the write (which is all or nothing): put back what nmoverlay had
			_, undoErr = db.client.Apply(rctx, prev.Owned, nil)
		}
		rbErr := errors.Join(undoErr, tx.Rollback(rctx))
		db.close()
		return nil, &backend.ApplyError{Reason: "ovn.bridge-mappings: " + err.Error(), RollbackErr: rbErr}
	}
	return &mappingsTx{Transaction: tx, db: db, prev: prev.Owned}, nil
}

// Check refuses a policy that gives what the node's NetworkManager cannot apply (a setting
// of a later release), naming the field and the releases that can. The rest of nmstate's
// schema is checked whole by Parse.
func (e Backend) Check(_ context.Context, _ string, desired []byte) error {
	_, needs, err := state.ParseNeeds(desired)
	if err != nil || len(needs) == 0 {
		return nil // Parse reports its own errors
	}
	caps, err := e.Client.Capabilities()
	if err != nil {
		return err
	}
	if errs := caps.Lacks(needs); len(errs) > 0 {
		return errs
	}
	return nil
}

// Show is the node's network with OVN's bridge mappings.
func (e Backend) Show(ctx context.Context) (state.State, error) {
	return ShowWithMappings(e.Client.Show, e.OVSDBSocket)(ctx)
}

func (e Backend) Changes(ctx context.Context) (<-chan struct{}, error) {
	return e.Client.Changes(ctx)
}

// ovsdbSession is one apply's connection to ovsdb-server and the mappings it writes.
type ovsdbSession struct {
	client *ovsdb.Client
	want   ovsdb.Mappings
	absent []string
}

// mappings connects to ovsdb-server when the node has one, and checks before anything
// changes that the mappings can be written: a mapping someone else made is never changed
// or removed. nil: no Open vSwitch and no mappings wanted.
func (e Backend) mappings(ctx context.Context, o *state.OVN) (*ovsdbSession, error) {
	want, absent := ovsdb.Mappings{}, []string(nil)
	if o != nil {
		for _, m := range o.BridgeMappings {
			if m.Absent() {
				absent = append(absent, m.Localnet)
			} else {
				want[m.Localnet] = m.Bridge
			}
		}
	}
	if e.OVSDBSocket == "" || !exists(e.OVSDBSocket) {
		if len(want) > 0 {
			return nil, &field.Error{Path: "ovn.bridge-mappings", Reason: fmt.Sprintf("this node has no Open vSwitch (no ovsdb-server socket at %s)", e.OVSDBSocket)}
		}
		return nil, nil
	}
	c, err := ovsdb.Dial(ctx, e.OVSDBSocket)
	if err != nil {
		return nil, err
	}
	db := &ovsdbSession{client: c, want: want, absent: absent}
	cur, err := c.HostMappings(ctx)
	if err == nil {
		_, err = ovsdb.Reconcile(cur, want, absent)
	}
	if fe := (*ovsdb.ForeignError)(nil); errors.As(err, &fe) {
		err = &field.Error{Path: "ovn.bridge-mappings[localnet=" + fe.Localnet + "]", Reason: strings.TrimPrefix(fe.Error(), "ovn.bridge-mappings: ")}
	}
	if err != nil {
		db.close()
		return nil, err
	}
	return db, nil
}

// verify reads the mappings back.
func (db *ovsdbSession) verify(ctx context.Context, o *state.OVN) error {
	cur, err := db.client.HostMappings(ctx)
	if err != nil {
		return err
	}
	if diffs := state.Verify(state.State{OVN: o}, state.State{OVN: ovnOf(cur.All)}); len(diffs) > 0 {
		return errors.New("did not converge: " + strings.Join(diffs, "; "))
	}
	return nil
}

func (db *ovsdbSession) close() {
	if db != nil {
		_ = db.client.Close()
	}
}

// mappingsTx is a NetworkManager transaction with the bridge mappings written after it:
// a rollback puts back the mappings nmoverlay had before, then rolls NetworkManager back.
type mappingsTx struct {
	backend.Transaction
	db   *ovsdbSession
	prev ovsdb.Mappings
}

func (t *mappingsTx) Commit(ctx context.Context) error {
	defer t.db.close()
	return t.Transaction.Commit(ctx)
}

func (t *mappingsTx) Rollback(ctx context.Context) error {
	defer t.db.close()
	_, err := t.db.client.Apply(ctx, t.prev, nil)
	if err != nil {
		err = fmt.Errorf("restoring ovn.bridge-mappings: %w", err)
	}
	return errors.Join(err, t.Transaction.Rollback(ctx))
}

// ovnOf is the ovn section for a host's mappings (nil for none).
func ovnOf(m ovsdb.Mappings) *state.OVN {
	if len(m) == 0 {
		return nil
	}
	o := &state.OVN{}
	for _, localnet := range slices.Sorted(maps.Keys(m)) {
		o.BridgeMappings = append(o.BridgeMappings, state.BridgeMapping{Localnet: localnet, Bridge: m[localnet]})
	}
	return o
}

// ShowWithMappings adds the host's bridge mappings, read from ovsdb-server at socket when
// the node has one, to what show reads.
func ShowWithMappings(show func(context.Context) (state.State, error), socket string) func(context.Context) (state.State, error) {
	return func(ctx context.Context) (state.State, error) {
		s, err := show(ctx)
		if err != nil || socket == "" || !exists(socket) {
			return s, err
		}
		c, err := ovsdb.Dial(ctx, socket)
		if err != nil {
			return s, err
		}
		defer c.Close()
		cur, err := c.HostMappings(ctx)
		if err != nil {
			return s, err
		}
		s.OVN = ovnOf(cur.All)
		return s, nil
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// BackendError maps the engine's errors to the seam's (internal/backend), which is all
// the handler knows: another tool's checkpoint is a *backend.BusyError, a change rolled
// back a *backend.ApplyError. Each wraps the engine's own.
func BackendError(err error) error {
	var busy *CheckpointBusyError
	if errors.As(err, &busy) {
		return &backend.BusyError{Reason: busy.Error(), Cause: err}
	}
	var ae *ApplyError
	if errors.As(err, &ae) {
		return &backend.ApplyError{Reason: ae.Reason, Interfaces: ae.Interfaces, RollbackErr: ae.RollbackErr, Cause: err}
	}
	return err
}
