package networkmanager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager/nmdbus"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// FileChange is a change made outside NetworkManager's D-Bus API, by another program
// writing keyfiles (netplan's generator writing /run/NetworkManager/system-connections),
// which NetworkManager loads when asked to reload.
type FileChange struct {
	// Write writes the new keyfiles; Undo puts the old ones back. Each runs before a reload.
	Write, Undo func(ctx context.Context) error
	// Activate are the keyfiles (NetworkManager's Filename, as the host names them) whose
	// profiles are to be activated after the reload: new or changed ones.
	Activate []string
	// Verify says what of the wanted state the node does not run.
	Verify func(current state.State) []string
}

// ApplyFiles carries out ch in one checkpoint: the files are written, NetworkManager
// reloads its profiles and activates ch.Activate (VLANs once the rest are up: their base
// may be a new bond), and ch.Verify reads the result. On any failure the files are put
// back, reloaded, and the checkpoint rolled back: an *ApplyError says what did not
// converge. The Transaction's Rollback does the same; its Commit keeps the files.
func (c *Client) ApplyFiles(ctx context.Context, ch FileChange, opts ApplyOptions) (*Transaction, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	rec := record(opts.CheckpointRecord)
	if err := c.prepare(ctx, rec); err != nil {
		return nil, err
	}
	cp, err := c.createCheckpoint(ctx, rec, opts.RollbackTimeout)
	if err != nil {
		return nil, err
	}
	tx := &Transaction{c: c, checkpoint: cp, record: rec, verify: ch.Verify, undo: func(ctx context.Context) error {
		if err := ch.Undo(ctx); err != nil {
			return fmt.Errorf("putting the previous files back: %w", err)
		}
		return c.nm.Reload(ctx)
	}}
	fail := func(err error) (*Transaction, error) { return nil, tx.failed(ctx, err) }
	if err := ch.Write(ctx); err != nil {
		return fail(err)
	}
	if err := c.nm.Reload(ctx); err != nil {
		return fail(err)
	}
	first, then, err := c.fileActivations(ctx, ch.Activate)
	if err != nil {
		return fail(err)
	}
	deadline := time.Now().Add(opts.ActivationTimeout)
	for _, stage := range [][]activation{first, then} {
		for i := range stage {
			if err := c.activateAgainOnce(ctx, &stage[i]); err != nil {
				return fail(fmt.Errorf("%s: activating: %w", stage[i].name, err))
			}
		}
		if err := c.waitActivated(ctx, stage, deadline, opts.ActivationTimeout); err != nil {
			return fail(err)
		}
	}
	diffs, err := tx.unconverged(ctx)
	if err != nil {
		return fail(err)
	}
	if len(diffs) > 0 {
		return fail(errors.New("did not converge: " + strings.Join(diffs, "; ")))
	}
	return tx, nil
}

// fileActivations are the activations of the profiles loaded from files, ports after
// their controllers; VLANs apart, in then, to start once the rest run.
func (c *Client) fileActivations(ctx context.Context, files []string) (first, then []activation, err error) {
	var ports []activation
	paths, err := c.nm.Connections(ctx)
	if err != nil {
		return nil, nil, err
	}
	found := map[string]bool{}
	for _, p := range paths {
		var filename string
		if c.prop(p, nmdbus.ConnIface, "Filename", &filename) != nil || !slices.Contains(files, filename) {
			continue
		}
		s, err := c.nm.Settings(ctx, p)
		if err != nil {
			return nil, nil, err
		}
		a := activation{name: settings(s).str("connection", "interface-name"), profile: p}
		if a.name == "" {
			return nil, nil, fmt.Errorf("%s: the profile names no interface (connection.interface-name)", filename)
		}
		a.key = a.name
		found[filename] = true
		switch {
		case settings(s).str("connection", "type") == "vlan":
			then = append(then, a)
		case settings(s).str("connection", "master") != "":
			ports = append(ports, a)
		default:
			first = append(first, a)
		}
	}
	// Ports after their controllers: a port's activation starts its controller too, and
	// another port asked for then finds that controller not yet managed.
	first = append(first, ports...)
	for _, f := range files {
		if !found[f] {
			return nil, nil, fmt.Errorf("NetworkManager did not load %s", f)
		}
	}
	return first, then, nil
}
