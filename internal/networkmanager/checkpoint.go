package networkmanager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/internal/atomicfile"
	"github.com/nmoverlay/nmoverlay/internal/networkmanager/nmdbus"
)

// NetworkManager's checkpoints are not named: nothing on one says who made it, a
// restarted NetworkManager forgets every checkpoint and hands out the same paths again
// (Checkpoint/1 after each start). So the engine notes each of its checkpoints by path,
// creation time and the NetworkManager instance (its unique bus name) that holds it, and
// treats every other checkpoint as another tool's: never rolled back, waited for.

// checkpointID says which checkpoint of which NetworkManager instance.
type checkpointID struct {
	Path dbus.ObjectPath `json:"path"`
	// Created is the checkpoint's Created property (CLOCK_BOOTTIME, ms).
	Created int64 `json:"created"`
	// Owner is the unique bus name of the NetworkManager that made it.
	Owner string `json:"owner"`
}

func (id checkpointID) String() string {
	return fmt.Sprintf("%s (NetworkManager %s)", id.Path, id.Owner)
}

// CheckpointBusyError: another tool (nmstatectl, an administrator) holds a NetworkManager
// checkpoint over the devices; the engine waits for it rather than roll it back. Nothing
// was changed.
type CheckpointBusyError struct {
	Path            dbus.ObjectPath
	RollbackTimeout time.Duration // 0: it never rolls back by itself
}

func (e *CheckpointBusyError) Error() string {
	t := "no rollback timeout"
	if e.RollbackTimeout > 0 {
		t = "rollback timeout " + e.RollbackTimeout.String()
	}
	return fmt.Sprintf("waiting: another tool holds NetworkManager checkpoint %s (%s); nmoverlay does not touch it and applies once it is committed or rolled back", e.Path, t)
}

// CheckpointLostError: the transaction's checkpoint is gone (NetworkManager restarted, or
// rolled it back on its own timeout), so NetworkManager can no longer roll the change back
// or confirm it; the caller must restore a known state itself.
type CheckpointLostError struct {
	Op  string // "commit" or "roll back"
	Why string
}

func (e *CheckpointLostError) Error() string {
	return fmt.Sprintf("cannot %s: checkpoint lost (%s)", e.Op, e.Why)
}

// owner is the unique bus name of the NetworkManager running now.
func (c *Client) owner(ctx context.Context) (string, error) {
	var name string
	if err := c.conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.GetNameOwner", 0, nmdbus.BusName).Store(&name); err != nil {
		return "", fmt.Errorf("NetworkManager is not running: %w", err)
	}
	return name, nil
}

// checkpoints lists the checkpoints NetworkManager holds, with their creation times and
// rollback timeouts.
func (c *Client) checkpoints(ctx context.Context) (owner string, cps []checkpointInfo, err error) {
	if owner, err = c.owner(ctx); err != nil {
		return "", nil, err
	}
	var paths []dbus.ObjectPath
	if err := c.prop(nmdbus.Path, nmdbus.Iface, "Checkpoints", &paths); err != nil {
		return "", nil, err
	}
	for _, p := range paths {
		info := checkpointInfo{checkpointID: checkpointID{Path: p, Owner: owner}}
		if c.prop(p, nmdbus.CheckpointIface, "Created", &info.Created) != nil {
			continue // destroyed meanwhile
		}
		var timeout uint32
		_ = c.prop(p, nmdbus.CheckpointIface, "RollbackTimeout", &timeout)
		info.rollbackTimeout = time.Duration(timeout) * time.Second
		cps = append(cps, info)
	}
	return owner, cps, nil
}

type checkpointInfo struct {
	checkpointID
	rollbackTimeout time.Duration
}

// record is where the engine notes its open checkpoint ("" keeps no note: every
// checkpoint then counts as another tool's, and a stale one of ours waits out its timeout).
type record string

func (r record) read() (*checkpointID, error) {
	if r == "" {
		return nil, nil
	}
	b, err := os.ReadFile(string(r))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var id checkpointID
	if err := json.Unmarshal(b, &id); err != nil {
		return nil, nil // a torn note names nothing: treat every checkpoint as foreign
	}
	return &id, nil
}

// write notes id, replacing the file in one rename so a crash never leaves half a note.
func (r record) write(id checkpointID) error {
	if r == "" {
		return nil
	}
	b, _ := json.Marshal(id)
	return atomicfile.Write(string(r), b, 0o600)
}

func (r record) clear() error {
	if r == "" {
		return nil
	}
	if err := os.Remove(string(r)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// prepare clears the way for a new checkpoint: a checkpoint of ours left by a process
// that died mid-apply is rolled back (what it guards was never committed); another
// tool's is left alone and reported as *CheckpointBusyError.
func (c *Client) prepare(ctx context.Context, rec record) error {
	mine, err := rec.read()
	if err != nil {
		return fmt.Errorf("reading the engine's checkpoint note: %w", err)
	}
	_, cps, err := c.checkpoints(ctx)
	if err != nil {
		return err
	}
	var busy *CheckpointBusyError
	for _, cp := range cps {
		if mine != nil && cp.checkpointID == *mine {
			if err := c.rollback(ctx, cp.Path); err != nil {
				return fmt.Errorf("rolling back the checkpoint a previous apply left: %w", err)
			}
			continue
		}
		if busy == nil {
			busy = &CheckpointBusyError{Path: cp.Path, RollbackTimeout: cp.rollbackTimeout}
		}
	}
	if busy != nil {
		return busy
	}
	// Whatever the note named is gone (rolled back above, by its timeout, or with the
	// NetworkManager that held it).
	return rec.clear()
}

// createCheckpoint makes the transaction's checkpoint over every device and notes it.
func (c *Client) createCheckpoint(ctx context.Context, rec record, timeout time.Duration) (checkpointID, error) {
	owner, err := c.owner(ctx)
	if err != nil {
		return checkpointID{}, err
	}
	id := checkpointID{Owner: owner}
	flags := uint32(checkpointDeleteNewConnections | checkpointDisconnectNewDevices)
	if err := c.call(ctx, nmdbus.Path, nmdbus.Iface+".CheckpointCreate", []dbus.ObjectPath{}, uint32(timeout/time.Second), flags).Store(&id.Path); err != nil {
		// Refused because another tool created one between prepare and here (NetworkManager
		// allows one checkpoint per device): name it.
		if _, cps, lerr := c.checkpoints(ctx); lerr == nil && len(cps) > 0 {
			return checkpointID{}, &CheckpointBusyError{Path: cps[0].Path, RollbackTimeout: cps[0].rollbackTimeout}
		}
		return checkpointID{}, fmt.Errorf("creating a checkpoint: %w", err)
	}
	if err := c.prop(id.Path, nmdbus.CheckpointIface, "Created", &id.Created); err != nil {
		return checkpointID{}, fmt.Errorf("reading the new checkpoint: %w", err)
	}
	if err := rec.write(id); err != nil {
		_ = c.rollback(ctx, id.Path)
		return checkpointID{}, fmt.Errorf("noting the checkpoint: %w", err)
	}
	return id, nil
}

// keepCheckpoint holds the checkpoint's rollback off while an apply is under way, by
// setting its timeout again every third of it: saving hundreds of profiles can take longer
// than the timeout, and NetworkManager would roll back the first ones while the last are
// saved. If this process dies, nothing sets it again and NetworkManager rolls back as
// before. The function it returns stops that and sets the timeout once more, so that what
// follows (verification, probes) has all of it. A refused call is not an error here: a
// checkpoint that is gone is found by the transaction's next step (held).
func (c *Client) keepCheckpoint(ctx context.Context, id checkpointID, timeout time.Duration) (stop func()) {
	return every(ctx, timeout/3, func() {
		_ = c.call(ctx, nmdbus.Path, nmdbus.Iface+".CheckpointAdjustRollbackTimeout", id.Path, uint32(timeout/time.Second)).Err
	})
}

// every calls do at each interval until the function it returns is called, which calls do
// once more and returns after it.
func every(ctx context.Context, interval time.Duration, do func()) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				do()
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
		do()
	}
}

// held says whether id is still held by the NetworkManager that made it; why says what
// happened to it otherwise. A path alone proves nothing: a restarted NetworkManager hands
// out the same paths again.
func (c *Client) held(ctx context.Context, id checkpointID) (bool, string) {
	owner, err := c.owner(ctx)
	if err != nil {
		return false, err.Error()
	}
	if owner != id.Owner {
		return false, fmt.Sprintf("NetworkManager restarted: %s is gone, %s runs now", id.Owner, owner)
	}
	var created int64
	if c.prop(id.Path, nmdbus.CheckpointIface, "Created", &created) != nil || created != id.Created {
		return false, "NetworkManager no longer holds " + string(id.Path) + " (its rollback timeout fired?)"
	}
	return true, ""
}
