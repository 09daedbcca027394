package networkmanager

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/godbus/dbus/v5"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nmoverlay/nmoverlay/internal/backend"
	"github.com/nmoverlay/nmoverlay/internal/state"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager/nmdbus"
)

// ApplyOptions tune one transaction.
type ApplyOptions struct {
	// RollbackTimeout is the checkpoint's own timeout: if this process dies before Commit
	// or Rollback, NetworkManager rolls back by itself after it. Default 110 s.
	RollbackTimeout time.Duration
	// ActivationTimeout bounds the wait for the profiles to activate; it must be below
	// RollbackTimeout. Default DefaultActivationTimeout, or half RollbackTimeout if less.
	ActivationTimeout time.Duration
	// Prune makes desired the whole of what the engine owns: owned profiles of interfaces
	// it does not name are deleted, so those interfaces return to their persistent
	// profiles. The reconciler applies a node's merged policies this way, so a deleted
	// policy's changes go away.
	Prune bool
	// CheckpointRecord is a file (on tmpfs: checkpoints do not outlive a boot) where the
	// engine notes its open checkpoint, so that one left by a process that died mid-apply
	// is rolled back at the next Apply. Every checkpoint not noted there is another
	// tool's: never rolled back, waited for (*CheckpointBusyError). Empty: no note; a
	// stale checkpoint of ours then blocks until its RollbackTimeout.
	CheckpointRecord string
}

// DefaultActivationTimeout bounds the wait for activation, DHCP included: longer than
// NetworkManager's own DHCP timeout (45 s), so a DHCP server that answers slowly still
// answers in time.
const DefaultActivationTimeout = 50 * time.Second

func (o ApplyOptions) withDefaults() (ApplyOptions, error) {
	if o.RollbackTimeout <= 0 {
		o.RollbackTimeout = DefaultActivationTimeout + 60*time.Second
	}
	if o.ActivationTimeout <= 0 {
		o.ActivationTimeout = min(DefaultActivationTimeout, o.RollbackTimeout/2)
	}
	// NetworkManager rolls back by itself at the rollback timeout: waiting for activation
	// as long would see its rollback, not the activation, and fail saying ROLLBACK FAILED.
	if o.ActivationTimeout >= o.RollbackTimeout {
		return o, fmt.Errorf("activation timeout %s must be below the rollback timeout %s", o.ActivationTimeout, o.RollbackTimeout)
	}
	return o, nil
}

// Transaction is an applied, verified, not yet committed change.
type Transaction struct {
	c          *Client
	checkpoint checkpointID
	record     record
	desired    state.State
	// scope is what the read back covers (scopeOf desired), known the paths of the devices
	// it names that the apply found.
	scope scope
	known map[string]dbus.ObjectPath
	// created are the interfaces the state names that did not exist before the apply.
	created []string
	// verify, when set, says what of the change does not run (instead of desired), and
	// undo puts back files another program wrote for it (ApplyFiles), before the rollback.
	verify func(current state.State) []string
	undo   func(ctx context.Context) error
	// restore puts back, after the checkpoint's rollback, what it does not: the owned VPN
	// profiles as they were (vpn.go).
	restore func(ctx context.Context) error
}

// failed rolls back an apply that did not converge (even when ctx is done) and says what
// did not: an *ApplyError, naming the interfaces that would not activate.
func (t *Transaction) failed(ctx context.Context, err error) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	e := &ApplyError{Reason: err.Error(), RollbackErr: t.Rollback(rctx)}
	var act *activationError
	if errors.As(err, &act) {
		e.Interfaces = act.interfaces
	}
	return e
}

// unconverged says what of the change is not in effect.
func (t *Transaction) unconverged(ctx context.Context) ([]string, error) {
	diffs, current, err := t.readBack(ctx)
	if err != nil || t.verify == nil {
		return diffs, err
	}
	return t.verify(current), nil
}

// Commit keeps the change: the checkpoint is destroyed. If NetworkManager lost the
// checkpoint meanwhile (it restarted: the profiles, saved in the tmpfs layer, came back
// with it), the state read back decides: the change is committed if it is still fully in
// effect, else *CheckpointLostError.
func (t *Transaction) Commit(ctx context.Context) error {
	if ok, why := t.c.held(ctx, t.checkpoint); !ok {
		_ = t.record.clear() // it notes a checkpoint that no longer exists
		diffs, err := t.unconverged(ctx)
		if err != nil {
			return &CheckpointLostError{Op: "commit", Why: why + "; " + err.Error()}
		}
		if len(diffs) > 0 {
			return &CheckpointLostError{Op: "commit", Why: why + "; the change is no longer in effect: " + strings.Join(diffs, "; ")}
		}
		logr.FromContextOrDiscard(ctx).Info("checkpoint lost, but the change is fully in effect: committed", "checkpoint", t.checkpoint.String(), "reason", why)
		return nil
	}
	if err := t.c.call(ctx, nmdbus.Path, nmdbus.Iface+".CheckpointDestroy", t.checkpoint.Path).Err; err != nil {
		return fmt.Errorf("committing (CheckpointDestroy %s): %w", t.checkpoint, err)
	}
	return t.record.clear()
}

// Rollback restores every device and profile as they were before Apply. If the
// checkpoint is gone (*CheckpointLostError) nothing was restored: the caller must.
func (t *Transaction) Rollback(ctx context.Context) error {
	var undoErr error
	if t.undo != nil {
		undoErr = t.undo(ctx)
	}
	if ok, why := t.c.held(ctx, t.checkpoint); !ok {
		_ = t.record.clear()
		return errors.Join(undoErr, &CheckpointLostError{Op: "roll back", Why: why})
	}
	err := errors.Join(undoErr, t.c.rollback(ctx, t.checkpoint.Path))
	if cerr := t.record.clear(); err == nil {
		err = cerr
	}
	if t.restore != nil {
		err = errors.Join(err, t.restore(ctx))
	}
	if derr := t.c.deleteLeftovers(ctx, t.created); err == nil {
		err = derr
	}
	return err
}

// deleteLeftovers deletes the software devices the apply created that the rollback left:
// NetworkManager disconnects a new device but leaves its kernel link when it was still
// activating (a bridge waiting for DHCP).
func (c *Client) deleteLeftovers(ctx context.Context, created []string) error {
	if len(created) == 0 {
		return nil
	}
	devs, err := c.devices(ctx)
	if err != nil {
		return err
	}
	for _, d := range devs {
		if !slices.Contains(created, d.name) || !d.real || d.typ == "" || d.typ == state.Ethernet || ovsOnly(d.typ) || d.state == deviceStateActivated {
			continue
		}
		if err := c.call(ctx, d.path, nmdbus.DeviceIface+".Delete").Err; err != nil && c.stillReal(ctx, d.path) {
			return fmt.Errorf("deleting %s, created by the apply rolled back: %w", d.name, err)
		}
	}
	return nil
}

// stillReal: the device exists in the kernel (NetworkManager may have been removing it
// while Delete was asked).
func (c *Client) stillReal(ctx context.Context, path dbus.ObjectPath) bool {
	devs, err := c.devices(ctx)
	return err != nil || slices.ContainsFunc(devs, func(d device) bool { return d.path == path && d.real })
}

func (c *Client) rollback(ctx context.Context, cp dbus.ObjectPath) error {
	var result map[string]uint32
	if err := c.call(ctx, nmdbus.Path, nmdbus.Iface+".CheckpointRollback", cp).Store(&result); err != nil {
		return fmt.Errorf("rolling back %s: %w", cp, err)
	}
	failed := map[dbus.ObjectPath]bool{}
	for dev, code := range result {
		if code == 3 { // NM_ROLLBACK_RESULT_ERR_FAILED; 1 and 2 are devices gone or unmanaged
			failed[dbus.ObjectPath(dev)] = true
		}
	}
	if len(failed) == 0 {
		return nil
	}
	// NetworkManager 1.42 reports an OVS bridge or port it took down as failed to restore,
	// then starts it again itself once an interface of its restored profiles joins: those
	// count as restored when they run again within ovsRestoreWait.
	var last []string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, ovsRestoreWait, true, func(ctx context.Context) (bool, error) {
		devs, err := c.devices(ctx)
		if err != nil {
			return false, err
		}
		last = last[:0]
		settled := true
		for _, d := range devs {
			if !failed[d.path] {
				continue
			}
			last = append(last, fmt.Sprintf("%s (%s)", d.path, d.name))
			if !ovsOnly(d.typ) {
				return false, fmt.Errorf("%s is not an OVS bridge or port, which NetworkManager starts again", d.name)
			}
			settled = settled && d.state == deviceStateActivated
		}
		return settled, nil
	})
	if err != nil {
		sort.Strings(last)
		return fmt.Errorf("rollback failed for devices %s: %w", strings.Join(last, ", "), err)
	}
	return nil
}

// ovsRestoreWait is how long an OVS bridge or port a rollback took down may take to run
// again.
const ovsRestoreWait = 30 * time.Second

// ApplyError says what did not converge; the change was rolled back, unless RollbackErr
// says otherwise.
type ApplyError struct {
	Reason string
	// Interfaces are the interfaces that would not activate (a DHCP server that never
	// answered), when that is why; empty when the failure is not one interface's.
	Interfaces  []string
	RollbackErr error
}

// Error says it as the seam's ApplyError does, which BackendError maps it to.
func (e *ApplyError) Error() string {
	return (&backend.ApplyError{Reason: e.Reason, RollbackErr: e.RollbackErr}).Error()
}

func (e *ApplyError) Unwrap() error { return e.RollbackErr }

// Apply applies desired in one checkpoint: profiles are added or updated (saved to disk,
// so under nmoverlay they land in the tmpfs layer), activated in dependency order, and the
// result is verified against desired. On any failure everything is rolled back and an
// *ApplyError says what did not converge; on success the caller commits or rolls back.
// While another tool holds a checkpoint nothing is changed (*CheckpointBusyError).
func (c *Client) Apply(ctx context.Context, desired state.State, opts ApplyOptions) (*Transaction, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	ordered, err := state.Order(desired)
	if err != nil {
		return nil, err
	}
	rec := record(opts.CheckpointRecord)
	if err := c.prepare(ctx, rec); err != nil {
		return nil, err
	}
	// Planned before the checkpoint: what cannot be placed (DNS with no interface to carry
	// it) is refused with nothing changed.
	log, began := logr.FromContextOrDiscard(ctx).V(1), time.Now()
	h, err := c.readHost(ctx, scopeOf(desired))
	if err != nil {
		return nil, err
	}
	log.Info("read the node", "profiles", len(h.profiles), "devices", len(h.devs), "scope", h.scope.String(), "took", since(began))
	if desired, err = h.resolveIdentifiers(desired); err != nil {
		return nil, err
	}
	if desired, err = h.copyMACs(desired); err != nil {
		return nil, err
	}
	if ordered, err = state.Order(desired); err != nil {
		return nil, err
	}
	pl, err := h.steps(desired, ordered, opts.Prune)
	if err != nil {
		return nil, err
	}
	vpns, err := c.saveVPNs(ctx, h)
	if err != nil {
		return nil, err
	}
	defer c.watch.pause()() // from the change on; an apply refused before it changed nothing
	cp, err := c.createCheckpoint(ctx, rec, opts.RollbackTimeout)
	if err != nil {
		return nil, err
	}
	tx := &Transaction{c: c, checkpoint: cp, record: rec, desired: desired, scope: h.scope, known: h.paths()}
	if len(vpns) > 0 {
		tx.restore = func(ctx context.Context) error { return c.restoreVPNs(ctx, vpns) }
	}
	for _, it := range pl.interfaces {
		if _, existed := h.devs[it.Key()]; !existed && it.State != state.Absent && !ovsOnly(it.Type) {
			tx.created = append(tx.created, it.Name)
		}
	}
	fail := func(err error) (*Transaction, error) { return nil, tx.failed(ctx, err) }
	stopKeeping := c.keepCheckpoint(ctx, cp, opts.RollbackTimeout)
	again, err := c.carryOut(ctx, h, pl, desired, opts)
	if err != nil {
		stopKeeping()
		return fail(err)
	}
	verifying := time.Now()
	diffs, err := tx.settled(ctx, again)
	stopKeeping()
	if err != nil {
		return fail(err)
	}
	log.Info("verified", "differences", len(diffs), "took", since(verifying))
	if len(diffs) > 0 {
		return fail(errors.New("did not converge: " + strings.Join(diffs, "; ")))
	}
	return tx, nil
}

// since is the time from start, as logged: where a slow apply goes (its steps at V(1)).
func since(start time.Time) string { return time.Since(start).Round(time.Millisecond).String() }

// settleTime is how long after activation what NetworkManager reports may still lag what
// it did: 1.52 announces a device activated before its IP configuration's D-Bus object
// carries the static address it set (measured in the VM tier's Debian 13 guest).
const settleTime = 3 * time.Second

// settled is readBack's differences once there are none, or after settleTime. On the
// first read that differs, again may activate some interfaces again (it says whether it
// did); the wait starts over then.
func (t *Transaction) settled(ctx context.Context, again func(context.Context, state.State) (bool, error)) ([]string, error) {
	deadline := time.Now().Add(settleTime)
	for {
		diffs, current, err := t.readBack(ctx)
		if err != nil {
			return nil, err
		}
		if len(diffs) > 0 && again != nil {
			did, err := again(ctx, current)
			if again = nil; err != nil {
				return nil, err
			}
			if did {
				deadline = time.Now().Add(settleTime)
				continue
			}
		}
		if len(diffs) == 0 || time.Now().After(deadline) {
			return diffs, nil
		}
		logr.FromContextOrDiscard(ctx).V(1).Info("not converged yet: reading again", "differences", len(diffs), "first", diffs[0])
		select {
		case <-ctx.Done():
			return diffs, nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// readBack reads back what the transaction's scope covers and says what of its desired
// state is not in effect, with the state it read.
func (t *Transaction) readBack(ctx context.Context) ([]string, state.State, error) {
	current, err := t.c.showIn(ctx, t.scope, t.known)
	if err != nil {
		return nil, state.State{}, fmt.Errorf("reading the state back: %w", err)
	}
	return state.Verify(t.desired, current), current, nil
}

// profile is one connection profile NetworkManager holds.
type profile struct {
	path     dbus.ObjectPath
	settings settings
}

func (c *Client) profiles(ctx context.Context) ([]profile, error) {
	paths, err := c.nm.Connections(ctx)
	if err != nil {
		return nil, err
	}
	read := make([]profile, len(paths))
	inParallel(len(paths), func(i int) {
		if s, err := c.nm.Settings(ctx, paths[i]); err == nil {
			read[i] = profile{path: paths[i], settings: settings(s)}
		}
	})
	out := make([]profile, 0, len(paths))
	for _, p := range read {
		if p.path != "" { // else deleted meanwhile
			out = append(out, p)
		}
	}
	return out, nil
}

// carryOut deletes, saves and activates the profiles the steps name, in their order.
func (c *Client) carryOut(ctx context.Context, h *host, pl *applySteps, desired state.State, opts ApplyOptions) (again func(context.Context, state.State) (bool, error), err error) {
	for _, key := range pl.deletes {
		if err := c.call(ctx, h.owned[key].path, nmdbus.ConnIface+".Delete").Err; err != nil {
			return nil, fmt.Errorf("%s: deleting its profile: %w", key, err)
		}
	}
	var kept []state.Interface
	var wants []settings
	for _, it := range pl.interfaces {
		if it.State == state.Absent {
			continue // its profile is deleted above; NetworkManager deletes the software device it created, a NIC stays
		}
		want, err := h.build(it, pl, opts.Prune)
		if err != nil {
			return nil, err
		}
		kept, wants = append(kept, it), append(wants, want)
	}
	log, saving := logr.FromContextOrDiscard(ctx).V(1), time.Now()
	saved, err := c.saveAll(ctx, kept, h.owned, wants)
	if err != nil {
		return nil, err
	}
	log.Info("saved the profiles", "profiles", len(kept), "deleted", len(pl.deletes), "took", since(saving))
	var toActivate, unchanged []activation
	interfaceOf := map[string]state.Interface{} // the unchanged ones, by key
	for i, it := range kept {
		key := it.Key()
		dev, hasDev := h.devs[key]
		path, changed := saved[i].path, saved[i].changed
		if it.State == state.Down {
			if hasDev && dev.active != "" && dev.active != "/" {
				// Down already (a port its controller's removal took down since it was read) is
				// what was asked.
				if err := c.call(ctx, nmdbus.Path, nmdbus.Iface+".DeactivateConnection", dev.active).Err; err != nil && !notActive(err) {
					return nil, fmt.Errorf("%s: deactivating: %w", it.Name, err)
				}
			}
			continue
		}
		a := activation{name: it.Name, key: key, ovs: ovsOnly(it.Type), vpn: dev.vpn || kinds[it.Type] != nil && kinds[it.Type].deviceless, profile: path}
		if changed || !activeWith(dev, hasDev, path) {
			toActivate = append(toActivate, a)
		} else {
			unchanged = append(unchanged, a)
			interfaceOf[key] = it
		}
	}
	activating := time.Now()
	if err := c.activateAll(ctx, h, pl, toActivate, unchanged, opts); err != nil {
		return nil, err
	}
	log.Info("activated", "interfaces", len(toActivate), "unchanged", len(unchanged), "took", since(activating))
	// An unchanged interface may no longer run what its profile says (an address deleted,
	// a route removed, outside nmoverlay): activating its profile again puts it back. The
	// verification's read of the node tells; reading it here as well cost a read of
	// every interface on the node before each apply that left one unchanged.
	return func(ctx context.Context, now state.State) (bool, error) {
		var drift []activation
		for _, u := range unchanged {
			if drifted(now, interfaceOf[u.key], desired) {
				drift = append(drift, u)
			}
		}
		if len(drift) == 0 {
			return false, nil
		}
		logr.FromContextOrDiscard(ctx).Info("activating again what changed outside nmoverlay", "interfaces", len(drift), "first", drift[0].name)
		return true, c.activateAll(ctx, h, pl, drift, unchanged, opts)
	}, nil
}

// activateAll activates toActivate in dependency order, with the unchanged interfaces
// under an OVS controller activated again, and waits until each is up.
func (c *Client) activateAll(ctx context.Context, h *host, pl *applySteps, toActivate, unchanged []activation, opts ApplyOptions) error {
	toActivate = append(toActivate, underOVSControllers(toActivate, unchanged, pl)...)
	// VPNs last: NetworkManager runs one over the device of its primary connection, which
	// may be among those activated here, and refuses it while that one is still activating
	// ("The base device for the VPN connection was not active").
	var vpns []activation
	toActivate = slices.DeleteFunc(toActivate, func(t activation) bool {
		if t.vpn {
			vpns = append(vpns, t)
		}
		return t.vpn
	})
	deadline := time.Now().Add(opts.ActivationTimeout)
	var ovs []activation
	start := func(stage []activation, inFlight int) error {
		for _, wave := range waves(stage, pl) {
			if err := c.askActivations(ctx, h, stage, wave, inFlight); err != nil {
				return err
			}
		}
		var targets []activation
		for _, t := range stage {
			if t.ovs {
				ovs = append(ovs, t)
				t.startedOnly = true
			}
			targets = append(targets, t)
		}
		return c.waitActivated(ctx, targets, deadline, opts.ActivationTimeout)
	}
	for _, stage := range stages(toActivate, pl) {
		if err := start(stage, callsInFlight); err != nil {
			return err
		}
	}
	// The OVS bridges and ports, started before their interfaces, are up once those joined.
	if err := c.waitActivated(ctx, ovs, deadline, opts.ActivationTimeout); err != nil {
		return err
	}
	return start(vpns, 1) // one at a time: each may first end the VPN it replaces
}

// askActivations asks NetworkManager to activate stage[i] for each i of wave, up to inFlight
// at once: with its queue never empty, NetworkManager started 500 interfaces on a node of
// 2,000 in 5.0 s, against 8.6 s asked one after another (the floor's orders, issue 38).
// Each one's active connection is noted in stage. After a refusal no other one is asked for.
func (c *Client) askActivations(ctx context.Context, h *host, stage []activation, wave []int, inFlight int) error {
	return inWindow(len(wave), inFlight, func(i int) error {
		t := &stage[wave[i]]
		if d := h.devs[t.key]; t.vpn && d.vpn {
			if err := c.endVPN(ctx, d.active); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
		}
		if err := c.activateAgainOnce(ctx, t); err != nil {
			return fmt.Errorf("%s: activating: %w", t.name, err)
		}
		return nil
	})
}

// waves order one stage's activations: a port is asked for once its controller's
// activation was, as one after another would (NetworkManager activates a port's
// controller itself when asked for the port first, and the controller's own activation
// then replaces that one, failing the port's); all else in the stage at once. Each wave
// is a list of indexes into stage.
func waves(stage []activation, pl *applySteps) [][]int {
	index := map[string]int{} // by interface name: the stage's linux controllers
	for i, t := range stage {
		if !t.ovs {
			index[t.name] = i
		}
	}
	var depthOf func(i, seen int) int
	depthOf = func(i, seen int) int {
		p := pl.perIface[stage[i].key].port
		if p == nil || strings.HasPrefix(p.kind, "ovs-") || seen >= len(stage) {
			return 0 // OVS controllers are started in stages of their own
		}
		j, ok := index[p.controller]
		if !ok || j == i {
			return 0
		}
		return depthOf(j, seen+1) + 1
	}
	var out [][]int
	for i := range stage {
		d := depthOf(i, 0)
		for len(out) <= d {
			out = append(out, nil)
		}
		out[d] = append(out[d], i)
	}
	return out
}

// stages split the activations so that an interface built on another one being activated
// (a VLAN on a new bond) starts only once that one is up: the kernel
// link is created with the MAC its base has then, and a bond takes its first port's MAC
// only when the port joins, so a VLAN made earlier keeps the bond's first, random MAC and
// never sees its DHCP server's answers. An OVS port starts once its bridge has started,
// and an interface once its OVS port has: activating an interface activates its
// controllers, and an activation of theirs started at the same moment replaces that one
// and leaves the interface waiting. Everything else starts at once.
func stages(toActivate []activation, pl *applySteps) [][]activation {
	after := map[string]string{} // by key: what must have started first
	for _, it := range pl.interfaces {
		key := it.Key()
		after[key], _ = it.BaseIface()
		if c := ovsController(pl, it); c != "" {
			after[key] = c
		}
	}
	activating := map[string]bool{}
	for _, t := range toActivate {
		activating[t.key] = true
	}
	depth := map[string]int{}
	var stageOf func(key string, seen int) int
	stageOf = func(key string, seen int) int {
		if d, ok := depth[key]; ok {
			return d
		}
		d := 0
		if b := after[key]; b != "" && activating[b] && seen < len(pl.interfaces) {
			d = stageOf(b, seen+1) + 1
		}
		depth[key] = d
		return d
	}
	var out [][]activation
	for _, t := range toActivate {
		d := stageOf(t.key, 0)
		for len(out) <= d {
			out = append(out, nil)
		}
		out[d] = append(out[d], t)
	}
	return out
}

// ovsController is the key of the OVS bridge or port it is a port of, or "".
func ovsController(pl *applySteps, it state.Interface) string {
	switch p := pl.perIface[it.Key()].port; {
	case p == nil:
	case p.kind == "ovs-port":
		return state.Interface{Name: p.ovsPort, Type: state.OVSPort}.Key()
	case p.kind == "ovs-bridge":
		return state.Interface{Name: p.bridge, Type: state.OVSBridge}.Key()
	}
	return ""
}

// underOVSControllers are the unchanged activations whose OVS bridge or port is activated
// again (its options changed): that takes its ports off, and nothing else puts them back.
func underOVSControllers(toActivate, unchanged []activation, pl *applySteps) []activation {
	activated := map[string]bool{}
	for _, t := range toActivate {
		activated[t.key] = true
	}
	byKey := map[string]state.Interface{}
	for _, it := range pl.interfaces {
		byKey[it.Key()] = it
	}
	var out []activation
	for added := true; added; {
		added = false
		for i, t := range unchanged {
			if t.key != "" && activated[ovsController(pl, byKey[t.key])] {
				activated[t.key], added = true, true
				out = append(out, t)
				unchanged[i].key = "" // taken
			}
		}
	}
	return out
}

// ovsOnly: the type is an OVSDB object with no kernel interface of its own (an OVS bridge
// or port), which NetworkManager models as a device of the same name as others.
func ovsOnly(t state.InterfaceType) bool { return t == state.OVSBridge || t == state.OVSPort }

// drifted says whether the interface, whose profile is unchanged and active, no longer
// runs what it says (an address deleted, a route removed, outside nmoverlay): activating
// the profile again puts it back, so a later apply verifies instead of failing on what
// someone else did.
func drifted(now state.State, it state.Interface, desired state.State) bool {
	if it.Type == state.OVSPort {
		return false // verified with its bridge
	}
	if it.Type == state.OVSBridge {
		// Its ports are profiles of their own, each judged as such: starting the bridge
		// again would only take them all off it.
		it = withoutPorts(it)
	}
	one := state.State{Interfaces: []state.Interface{it}}
	if desired.Routes != nil {
		one.Routes = &state.Routes{}
		for _, r := range desired.Routes.Config {
			if r.NextHopInterface == it.Name {
				one.Routes.Config = append(one.Routes.Config, r)
			}
		}
	}
	return len(state.Verify(one, now)) > 0
}

// activate asks NetworkManager to activate t's profile on its interface; t.active is the
// activation it started.
func (c *Client) activate(ctx context.Context, t *activation) error {
	return c.call(ctx, nmdbus.Path, nmdbus.Iface+".ActivateConnection", t.profile, dbus.ObjectPath("/"), dbus.ObjectPath("/")).Store(&t.active)
}

// activateAgainOnce activates t, and asks again once 250 ms after a refusal: NetworkManager
// refuses a request whose device is in passing at that moment, being released by its
// controller (an OVS bridge activated again), or whose controller was just created by a
// port's activation and is not yet managed ("Master device 'bond0' can't be activated:
// Device unmanaged or not available for activation", seen with netplan's keyfiles).
func (c *Client) activateAgainOnce(ctx context.Context, t *activation) error {
	if err := c.activate(ctx, t); err == nil {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(250 * time.Millisecond):
	}
	return c.activate(ctx, t)
}

// activationError: these interfaces would not activate.
type activationError struct {
	interfaces []string
	msg        string
}

func (e *activationError) Error() string { return e.msg }

// activation is a profile being activated on an interface.
type activation struct {
	name string
	key  string
	// ovs: an OVS bridge or port, which has no kernel interface to look the device up by:
	// its activation's state says; so does vpn's, a VPN's, which has no device at all.
	ovs, vpn bool
	// startedOnly: wait until it started, waiting for its ports (an OVS bridge or port
	// comes up only once an interface joins it).
	startedOnly bool
	profile     dbus.ObjectPath
	active      dbus.ObjectPath
	retried     bool // activated a second time after NetworkManager dropped the first
}

// callsInFlight bounds the saves or activations asked of NetworkManager at once, well
// under the bus's 128 calls awaiting a reply per connection, which the handler's other
// calls share.
const callsInFlight = 64

// savedProfile is where save left an interface's profile.
type savedProfile struct {
	path    dbus.ObjectPath
	changed bool
}

// saveAll saves each interface's profile (wants[i] for ifaces[i]), up to callsInFlight at
// once. NetworkManager answers every added or changed profile with a pass over all its
// devices for one to autoconnect (1.42's also compares each device with every other);
// profiles it has queued share one pass, while saved one after another each pays its own:
// that was 82% of a 500-interface apply on 2,000 interfaces. After a refusal no other save
// starts; those under way finish, and the checkpoint's rollback deletes what they added.
func (c *Client) saveAll(ctx context.Context, ifaces []state.Interface, owned map[string]profile, wants []settings) ([]savedProfile, error) {
	out := make([]savedProfile, len(ifaces))
	err := inWindow(len(ifaces), callsInFlight, func(i int) error {
		key := ifaces[i].Key()
		path, changed, err := c.save(ctx, owned[key], wants[i])
		if err != nil {
			return fmt.Errorf("%s: saving its profile: %w", key, err)
		}
		out[i] = savedProfile{path: path, changed: changed}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// inWindow calls do(i) for each i below n, up to inFlight at once. After one fails no other
// starts; those under way finish. It returns the first error in i's order, whichever came
// back first.
func inWindow(n, inFlight int, do func(i int) error) error {
	errs := make([]error, n)
	var failed atomic.Bool
	var g errgroup.Group
	g.SetLimit(inFlight)
	for i := range n {
		g.Go(func() error {
			if !failed.Load() {
				if errs[i] = do(i); errs[i] != nil {
					failed.Store(true)
				}
			}
			return nil
		})
	}
	_ = g.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// inParallel calls do(i) for each i below n, up to callsInFlight at once. Reading a node
// asks NetworkManager a question per profile or active device; one at a time, the round
// trips (not NetworkManager's work) were most of a read of 500 active interfaces.
func inParallel(n int, do func(i int)) {
	_ = inWindow(n, callsInFlight, func(i int) error { do(i); return nil })
}

// save adds want as a new owned profile, or updates the owned one if it differs. It
// reports the profile's path and whether anything changed.
func (c *Client) save(ctx context.Context, existing profile, want settings) (dbus.ObjectPath, bool, error) {
	if existing.path != "" {
		if existing.settings.userData(InputKey) == want.userData(InputKey) {
			return existing.path, false, nil // same input as last time: nothing to do
		}
		if !keepsNoSecrets(want) {
			var result map[string]dbus.Variant
			err := c.call(ctx, existing.path, nmdbus.ConnIface+".Update2", want, uint32(saveToDisk), map[string]dbus.Variant{}).Store(&result)
			return existing.path, true, err
		}
		if err := c.call(ctx, existing.path, nmdbus.ConnIface+".Delete").Err; err != nil {
			return existing.path, false, err
		}
	}
	var path dbus.ObjectPath
	var result map[string]dbus.Variant
	err := c.call(ctx, nmdbus.SettingsPath, nmdbus.SettingsIface+".AddConnection2", want, uint32(saveToDisk|blockAutoconnect), map[string]dbus.Variant{}).Store(&path, &result)
	return path, true, err
}

// keepsNoSecrets: want is a VPN profile without secrets. NetworkManager keeps a profile's
// secrets through an update that gives none, so such a profile is added anew instead: an
// IPsec interface that no longer says a psk must not keep the last one.
func keepsNoSecrets(want settings) bool {
	secrets, _ := want["vpn"]["secrets"].Value().(map[string]string)
	return want.str("connection", "type") == kinds[state.IPsec].connType && len(secrets) == 0
}

func activeWith(dev device, hasDev bool, path dbus.ObjectPath) bool {
	return hasDev && dev.state == deviceStateActivated && dev.profile == path
}

// waitActivated waits until every interface runs its profile, until deadline (timeout is
// the apply's whole activation wait, for the message). It watches the device, not
// the activation object: activating a controller re-activates its ports, which replaces
// their activation objects.
func (c *Client) waitActivated(ctx context.Context, targets []activation, deadline time.Time, timeout time.Duration) error {
	pending := targets
	return pollPaced(ctx, func() int { return len(pending) }, func(ctx context.Context) (bool, error) {
		var still []activation
		done, failed := make([]bool, len(pending)), make([]string, len(pending))
		inParallel(len(pending), func(i int) { done[i], failed[i] = c.activated(ctx, pending[i]) })
		for i, t := range pending {
			done, failed := done[i], failed[i]
			switch {
			case failed != "" && !t.retried:
				// NetworkManager drops an activation that another change cancels (a port
				// released by its controller's deletion while it was starting): nmstate
				// activates such a profile again, once; so does the engine.
				t.retried = true
				if err := c.activate(ctx, &t); err != nil {
					return false, &activationError{interfaces: []string{t.name}, msg: fmt.Sprintf("%s: activation failed: %s; activating again: %v", t.name, failed, err)}
				}
				still = append(still, t)
			case failed != "":
				return false, &activationError{interfaces: []string{t.name}, msg: fmt.Sprintf("%s: activation failed twice: %s", t.name, failed)}
			case !done:
				still = append(still, t)
			}
		}
		if pending = still; len(pending) == 0 {
			return true, nil
		}
		if time.Now().After(deadline) {
			var why, names []string
			for _, t := range pending {
				names = append(names, t.name)
				if t.vpn {
					why = append(why, t.name+" ("+c.vpnStateText(t.active)+")")
					continue
				}
				why = append(why, t.name+" ("+c.deviceStateText(ctx, t.name)+")")
			}
			return false, &activationError{interfaces: names, msg: fmt.Sprintf("not activated within %s: %s", timeout, strings.Join(why, ", "))}
		}
		return false, nil
	})
}

// Waiting polls at waitPoll, or at perWaited for each activation still awaited when that is
// longer: every question is work for NetworkManager's one main loop, taken from the
// activations themselves, so waiting for 500 interfaces asks about a thousand a second,
// not ten thousand.
const waitPoll, perWaited = 50 * time.Millisecond, time.Millisecond

// pollPaced calls done until it says so or fails, at the pace above for pending()
// activations awaited.
func pollPaced(ctx context.Context, pending func() int, done func(context.Context) (bool, error)) error {
	for {
		if ok, err := done(ctx); ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(max(waitPoll, time.Duration(pending())*perWaited)):
		}
	}
}

// activated: whether t's interface runs t's profile; failed says why it never will.
func (c *Client) activated(ctx context.Context, t activation) (bool, string) {
	if t.ovs || t.vpn {
		var st uint32
		if err := c.prop(t.active, nmdbus.ActiveIface, "State", &st); err != nil {
			if t.vpn {
				// A VPN's activation is its own object; gone is ended (nothing re-activates it).
				return false, "NetworkManager ended its VPN connection"
			}
			return false, ""
		}
		switch st {
		case activeStateActivated:
			return true, ""
		case activeStateDeactivated:
			if t.vpn {
				return false, "NetworkManager deactivated it (" + c.vpnStateText(t.active) + ")"
			}
			return false, "NetworkManager deactivated it"
		}
		var devs []dbus.ObjectPath
		var devState uint32
		if t.startedOnly && c.prop(t.active, nmdbus.ActiveIface, "Devices", &devs) == nil && len(devs) > 0 &&
			c.prop(devs[0], nmdbus.DeviceIface, "State", &devState) == nil {
			return devState >= deviceStateIPConfig && devState <= deviceStateActivated, ""
		}
		return false, ""
	}
	// Our activation still starting is one read, however many interfaces are waited for.
	var own uint32
	if c.prop(t.active, nmdbus.ActiveIface, "State", &own) == nil && own == activeStateActivating {
		return false, ""
	}
	running, devState := c.deviceRuns(ctx, t.name)
	if running == t.profile && devState == deviceStateActivated {
		return true, ""
	}
	// Our activation object ending deactivated, with nothing else running the profile, is
	// a failure; a vanished one may have been replaced by a re-activation of our profile
	// (a controller re-activating its ports): keep waiting, unless the device now runs
	// another profile, which NetworkManager auto-activated over ours (a port released by its
	// deleted controller): that one stays unless ours is activated again.
	var st uint32
	err := c.prop(t.active, nmdbus.ActiveIface, "State", &st)
	if err == nil && st == activeStateDeactivated {
		return false, "NetworkManager deactivated it (" + c.deviceStateText(ctx, t.name) + ")"
	}
	if err != nil && running != "" && running != t.profile {
		name := string(running)
		if s, err := c.nm.Settings(ctx, running); err == nil {
			name = fmt.Sprintf("%q", settings(s).str("connection", "id"))
		}
		return false, "NetworkManager activated " + name + " on it instead"
	}
	return false, ""
}

// deviceRuns reads the interface's device: the profile it runs or activates ("" for none)
// and its state.
func (c *Client) deviceRuns(ctx context.Context, iface string) (profile dbus.ObjectPath, state uint32) {
	var ac dbus.ObjectPath
	dev, err := c.kernelDevice(ctx, iface)
	if err != nil ||
		c.prop(dev, nmdbus.DeviceIface, "State", &state) != nil ||
		c.prop(dev, nmdbus.DeviceIface, "ActiveConnection", &ac) != nil || ac == "/" ||
		c.prop(ac, nmdbus.ActiveIface, "Connection", &profile) != nil {
		return "", state
	}
	return profile, state
}

// kernelDevice is the device of the kernel interface name: not the OVS bridge or port
// that may share its name (br-ex is all three).
func (c *Client) kernelDevice(ctx context.Context, name string) (dbus.ObjectPath, error) {
	var dev dbus.ObjectPath
	if err := c.call(ctx, nmdbus.Path, nmdbus.Iface+".GetDeviceByIpIface", name).Store(&dev); err != nil {
		return "", err
	}
	var typ uint32
	if err := c.prop(dev, nmdbus.DeviceIface, "DeviceType", &typ); err != nil || !ovsOnly(typeOfDevice(typ)) {
		return dev, err
	}
	var all []dbus.ObjectPath
	if err := c.call(ctx, nmdbus.Path, nmdbus.Iface+".GetAllDevices").Store(&all); err != nil {
		return "", err
	}
	for _, d := range all {
		var iface string
		if c.prop(d, nmdbus.DeviceIface, "Interface", &iface) == nil && iface == name &&
			c.prop(d, nmdbus.DeviceIface, "DeviceType", &typ) == nil && !ovsOnly(typeOfDevice(typ)) {
			return d, nil
		}
	}
	return "", fmt.Errorf("no device %s", name)
}

// deviceStateText describes an interface's device for error messages.
func (c *Client) deviceStateText(ctx context.Context, name string) string {
	dev, err := c.kernelDevice(ctx, name)
	if err != nil {
		return "no such device"
	}
	var reason struct {
		State  uint32
		Reason uint32
	}
	if err := c.prop(dev, nmdbus.DeviceIface, "StateReason", &reason); err != nil {
		return "state unknown"
	}
	if what, ok := deviceStates[reason.State]; ok {
		return fmt.Sprintf("%s: device state %d, reason %d", what, reason.State, reason.Reason)
	}
	return fmt.Sprintf("device state %d, reason %d", reason.State, reason.Reason)
}

// deviceStates say what NetworkManager's device states wait for (NMDeviceState).
var deviceStates = map[uint32]string{
	20: "unavailable (no carrier or not ready)", 30: "disconnected", 40: "preparing", 50: "configuring",
	60: "waiting for secrets", 70: "waiting for an IP address (DHCP or autoconf did not answer)",
	80: "checking IP connectivity", 90: "waiting for a secondary connection", 120: "failed",
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return formatUUID(b, 4)
}

// formatUUID is b as an RFC 4122 UUID of version (4 random, 5 name-based).
func formatUUID(b [16]byte, version byte) string {
	b[6] = b[6]&0x0f | version<<4
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// isDBusError says whether err is the D-Bus error of that name.
func isDBusError(err error, name string) bool {
	var de dbus.Error
	return errors.As(err, &de) && de.Name == name
}

// notActive: NetworkManager's answer to deactivating what is not active (any more).
func notActive(err error) bool { return isDBusError(err, nmdbus.Iface+".ConnectionNotActive") }
