package networkmanager

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/reconciler/state"
)

// ApplyOptions tune one transaction.
type ApplyOptions struct {
	// RollbackTimeout is the checkpoint's own timeout: if this process dies before Commit
	// or Rollback, NetworkManager rolls back by itself after it. Default 60 s.
	RollbackTimeout time.Duration
	// ActivationTimeout bounds the wait for the profiles to activate. Default 30 s.
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

func (o ApplyOptions) withDefaults() ApplyOptions {
	if o.RollbackTimeout <= 0 {
		o.RollbackTimeout = 60 * time.Second
	}
	if o.ActivationTimeout <= 0 {
		o.ActivationTimeout = 30 * time.Second
	}
	return o
}

// Transaction is an applied, verified, not yet committed change.
type Transaction struct {
	c          *Client
	checkpoint checkpointID
	record     record
	desired    state.State
}

// Commit keeps the change: the checkpoint is destroyed. If NetworkManager lost the
// checkpoint meanwhile (it restarted: the profiles, saved in the tmpfs layer, came back
// with it), the state read back decides: the change is committed if it is still fully in
// effect, else *CheckpointLostError.
func (t *Transaction) Commit(ctx context.Context) error {
	if ok, why := t.c.held(ctx, t.checkpoint); !ok {
		_ = t.record.clear() // it notes a checkpoint that no longer exists
		diffs, err := t.c.unconverged(ctx, t.desired)
		if err != nil {
			return &CheckpointLostError{Op: "commit", Why: why + "; " + err.Error()}
		}
		if len(diffs) > 0 {
			return &CheckpointLostError{Op: "commit", Why: why + "; the change is no longer in effect: " + strings.Join(diffs, "; ")}
		}
		logr.FromContextOrDiscard(ctx).Info("checkpoint lost, but the change is fully in effect: committed", "checkpoint", t.checkpoint.String(), "reason", why)
		return nil
	}
	if err := t.c.call(ctx, nmPath, nmIface+".CheckpointDestroy", t.checkpoint.Path).Err; err != nil {
		return fmt.Errorf("committing (CheckpointDestroy %s): %w", t.checkpoint, err)
	}
	return t.record.clear()
}

// Rollback restores every device and profile as they were before Apply. If the
// checkpoint is gone (*CheckpointLostError) nothing was restored: the caller must.
func (t *Transaction) Rollback(ctx context.Context) error {
	if ok, why := t.c.held(ctx, t.checkpoint); !ok {
		_ = t.record.clear()
		return &CheckpointLostError{Op: "roll back", Why: why}
	}
	err := t.c.rollback(ctx, t.checkpoint.Path)
	if cerr := t.record.clear(); err == nil {
		err = cerr
	}
	return err
}

func (c *Client) rollback(ctx context.Context, cp dbus.ObjectPath) error {
	var result map[string]uint32
	if err := c.call(ctx, nmPath, nmIface+".CheckpointRollback", cp).Store(&result); err != nil {
		return fmt.Errorf("rolling back %s: %w", cp, err)
	}
	var failed []string
	for dev, code := range result {
		if code == 3 { // NM_ROLLBACK_RESULT_ERR_FAILED; 1 and 2 are devices gone or unmanaged
			failed = append(failed, dev)
		}
	}
	if len(failed) > 0 {
		sort.Strings(failed)
		return fmt.Errorf("rollback failed for devices %s", strings.Join(failed, ", "))
	}
	return nil
}

// ApplyError says what did not converge; the change was rolled back, unless RollbackErr
// says otherwise.
type ApplyError struct {
	Reason      string
	RollbackErr error
}

func (e *ApplyError) Error() string {
	msg := e.Reason + "; rolled back"
	if e.RollbackErr != nil {
		msg = e.Reason + "; ROLLBACK FAILED: " + e.RollbackErr.Error()
	}
	return msg
}

func (e *ApplyError) Unwrap() error { return e.RollbackErr }

// Apply applies desired in one checkpoint: profiles are added or updated (saved to disk,
// so under nmoverlay they land in the tmpfs layer), activated in dependency order, and the
// result is verified against desired. On any failure everything is rolled back and an
// *ApplyError says what did not converge; on success the caller commits or rolls back.
// While another tool holds a checkpoint nothing is changed (*CheckpointBusyError).
func (c *Client) Apply(ctx context.Context, desired state.State, opts ApplyOptions) (*Transaction, error) {
	opts = opts.withDefaults()
	ordered, err := state.Order(desired)
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
	tx := &Transaction{c: c, checkpoint: cp, record: rec, desired: desired}
	fail := func(reason string) (*Transaction, error) {
		// The rollback must happen even if ctx is done.
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return nil, &ApplyError{Reason: reason, RollbackErr: tx.Rollback(rctx)}
	}
	if err := c.applyProfiles(ctx, desired, ordered, opts); err != nil {
		return fail(err.Error())
	}
	diffs, err := c.unconverged(ctx, desired)
	if err != nil {
		return fail(err.Error())
	}
	if len(diffs) > 0 {
		return fail("did not converge: " + strings.Join(diffs, "; "))
	}
	return tx, nil
}

// unconverged reads the state back and says what of desired is not in effect.
func (c *Client) unconverged(ctx context.Context, desired state.State) ([]string, error) {
	current, err := c.Show(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the state back: %w", err)
	}
	return state.Verify(desired, current), nil
}

// profile is one connection profile NetworkManager holds.
type profile struct {
	path     dbus.ObjectPath
	settings settings
}

func (c *Client) profiles(ctx context.Context) ([]profile, error) {
	var paths []dbus.ObjectPath
	if err := c.call(ctx, settingsPath, settingsIface+".ListConnections").Store(&paths); err != nil {
		return nil, fmt.Errorf("ListConnections: %w", err)
	}
	out := make([]profile, 0, len(paths))
	for _, p := range paths {
		var s settings
		if err := c.call(ctx, p, connIface+".GetSettings").Store(&s); err != nil {
			continue
		}
		out = append(out, profile{path: p, settings: s})
	}
	return out, nil
}

func (c *Client) applyProfiles(ctx context.Context, desired state.State, ordered []state.Interface, opts ApplyOptions) error {
	profiles, err := c.profiles(ctx)
	if err != nil {
		return err
	}
	devs, err := c.devices(ctx)
	if err != nil {
		return err
	}
	devByName := map[string]device{}
	for _, d := range devs {
		devByName[d.name] = d
	}
	owned := map[string]profile{}
	byPath := map[dbus.ObjectPath]profile{}
	for _, p := range profiles {
		byPath[p.path] = p
		if p.settings.owned() {
			owned[p.settings.str("connection", "interface-name")] = p
		}
	}
	plans, extra, err := planFor(desired, ordered)
	if err != nil {
		return err
	}
	if opts.Prune {
		named := map[string]bool{}
		for _, it := range append(ordered, extra...) {
			named[it.Name] = true
		}
		var prune []string
		for name := range owned {
			if !named[name] {
				prune = append(prune, name)
			}
		}
		sort.Strings(prune)
		for _, name := range prune {
			if err := c.call(ctx, owned[name].path, connIface+".Delete").Err; err != nil {
				return fmt.Errorf("%s: deleting the profile no policy wants any more: %w", name, err)
			}
		}
	}
	var toActivate []activation
	// The state as it is before this apply, read once and only if a profile is unchanged.
	before := sync.OnceValues(func() (state.State, error) { return c.Show(ctx) })
	for _, it := range append(ordered, extra...) {
		dev, hasDev := devByName[it.Name]
		if it.State == state.Absent {
			if p, ok := owned[it.Name]; ok {
				if err := c.call(ctx, p.path, connIface+".Delete").Err; err != nil {
					return fmt.Errorf("%s: deleting its profile: %w", it.Name, err)
				}
			}
			// NetworkManager deletes the software devices it created for the profile; a
			// device it did not create (a NIC, a veth from elsewhere) stays.
			continue
		}
		typ := it.Type
		if typ == "" && hasDev {
			typ = dev.typ
		}
		if typ == "" {
			return fmt.Errorf("%s: no type given and no such interface on the host", it.Name)
		}
		if typ == state.Veth && it.Veth == nil {
			typ = state.Ethernet // an existing veth end is configured like any Ethernet device
		}
		// What the desired state leaves out is kept (nmstate's partial states) from the
		// interface's profile. With Prune the desired state is the whole of what the engine
		// wants, so an owned profile is rebuilt on the profile the interface ran before the
		// engine took it, never on itself: what earlier desired states put on it and this one
		// no longer names (a deleted policy's route or address) goes. Without Prune, states
		// add up as nmstate's do: the owned profile is the base.
		var base settings
		baseUUID := ""
		uuid := newUUID()
		if p, ok := owned[it.Name]; ok {
			uuid = p.settings.str("connection", "uuid")
			baseUUID = p.settings.userData(BaseKey)
			if !opts.Prune {
				base = p.settings
			} else if b, ok := baseOf(p, profiles); ok {
				base, baseUUID = b.settings, b.settings.str("connection", "uuid")
			} else {
				baseUUID = ""
			}
		} else if hasDev && dev.active != "" && dev.active != "/" {
			var connPath dbus.ObjectPath
			if c.prop(dev.active, activeIface, "Connection", &connPath) == nil {
				if p, ok := byPath[connPath]; ok {
					base, baseUUID = p.settings, p.settings.str("connection", "uuid")
				}
			}
		}
		want, err := buildProfile(it, typ, base, baseUUID, plans[it.Name], uuid)
		if err != nil {
			return err
		}
		path, changed, err := c.save(ctx, owned[it.Name], want)
		if err != nil {
			return fmt.Errorf("%s: saving its profile: %w", it.Name, err)
		}
		if it.State == state.Down {
			if hasDev && dev.active != "" && dev.active != "/" {
				if err := c.call(ctx, nmPath, nmIface+".DeactivateConnection", dev.active).Err; err != nil {
					return fmt.Errorf("%s: deactivating: %w", it.Name, err)
				}
			}
			continue
		}
		if changed || !c.activeWith(dev, hasDev, path) || drifted(before, it, desired) {
			toActivate = append(toActivate, activation{name: it.Name, profile: path})
		}
	}
	var targets []activation
	for _, t := range toActivate {
		var active dbus.ObjectPath
		if err := c.call(ctx, nmPath, nmIface+".ActivateConnection", t.profile, dbus.ObjectPath("/"), dbus.ObjectPath("/")).Store(&active); err != nil {
			return fmt.Errorf("%s: activating: %w", t.name, err)
		}
		t.active = active
		targets = append(targets, t)
	}
	return c.waitActivated(ctx, targets, opts.ActivationTimeout)
}

// drifted says whether the interface, whose profile is unchanged and active, no longer
// runs what it says (an address deleted, a route removed, outside nmoverlay): activating
// the profile again puts it back, so a later apply verifies instead of failing on what
// someone else did.
func drifted(current func() (state.State, error), it state.Interface, desired state.State) bool {
	now, err := current()
	if err != nil {
		return true // cannot tell: activating again is harmless
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

// baseOf finds the profile an owned profile was built on: the one its BaseKey names, or,
// for a profile noted before BaseKey existed, a foreign profile bound to the same
// interface. ok is false when it was built on nothing (a new interface).
func baseOf(owned profile, profiles []profile) (profile, bool) {
	want, noted := owned.settings.userDataOK(BaseKey)
	name := owned.settings.str("connection", "interface-name")
	for _, p := range profiles {
		if p.settings.owned() {
			continue
		}
		if noted && want != "" && p.settings.str("connection", "uuid") == want {
			return p, true
		}
		if !noted && p.settings.str("connection", "interface-name") == name {
			return p, true
		}
	}
	return profile{}, false
}

// activation is a profile being activated on an interface.
type activation struct {
	name    string
	profile dbus.ObjectPath
	active  dbus.ObjectPath
}

// save adds want as a new owned profile, or updates the owned one if it differs. It
// reports the profile's path and whether anything changed.
func (c *Client) save(ctx context.Context, existing profile, want settings) (dbus.ObjectPath, bool, error) {
	if existing.path != "" {
		if existing.settings.userData(InputKey) == want.userData(InputKey) {
			return existing.path, false, nil // same input as last time: nothing to do
		}
		var result map[string]dbus.Variant
		err := c.call(ctx, existing.path, connIface+".Update2", want, uint32(saveToDisk), map[string]dbus.Variant{}).Store(&result)
		return existing.path, true, err
	}
	var path dbus.ObjectPath
	var result map[string]dbus.Variant
	const blockAutoconnect = 0x20 // activated below, in dependency order
	err := c.call(ctx, settingsPath, settingsIface+".AddConnection2", want, uint32(saveToDisk|blockAutoconnect), map[string]dbus.Variant{}).Store(&path, &result)
	return path, true, err
}

func (c *Client) activeWith(dev device, hasDev bool, path dbus.ObjectPath) bool {
	if !hasDev || dev.active == "" || dev.active == "/" || dev.state != deviceStateActivated {
		return false
	}
	var conn dbus.ObjectPath
	return c.prop(dev.active, activeIface, "Connection", &conn) == nil && conn == path
}

// waitActivated waits until every interface runs its profile. It watches the device, not
// the activation object: activating a controller re-activates its ports, which replaces
// their activation objects.
func (c *Client) waitActivated(ctx context.Context, targets []activation, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	pending := targets
	for {
		var still []activation
		for _, t := range pending {
			done, failed := c.activated(ctx, t)
			switch {
			case failed != "":
				return fmt.Errorf("%s: activation failed: %s", t.name, failed)
			case !done:
				still = append(still, t)
			}
		}
		if pending = still; len(pending) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var why []string
			for _, t := range pending {
				why = append(why, t.name+" ("+c.deviceStateText(ctx, t.name)+")")
			}
			return fmt.Errorf("not activated within %s: %s", timeout, strings.Join(why, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// activated: whether t's interface runs t's profile; failed says why it never will.
func (c *Client) activated(ctx context.Context, t activation) (bool, string) {
	var dev dbus.ObjectPath
	if err := c.call(ctx, nmPath, nmIface+".GetDeviceByIpIface", t.name).Store(&dev); err == nil {
		var st uint32
		var ac, conn dbus.ObjectPath
		if c.prop(dev, deviceIface, "State", &st) == nil && c.prop(dev, deviceIface, "ActiveConnection", &ac) == nil &&
			st == deviceStateActivated && ac != "/" && c.prop(ac, activeIface, "Connection", &conn) == nil && conn == t.profile {
			return true, ""
		}
	}
	// Our activation object ending deactivated, with nothing else running the profile, is
	// a failure; a vanished one may have been replaced by a re-activation: keep waiting.
	var st uint32
	if c.prop(t.active, activeIface, "State", &st) == nil && st == activeStateDeactivated {
		var reason uint32
		_ = c.prop(t.active, activeIface, "StateFlags", &reason)
		return false, "NetworkManager deactivated it (" + c.deviceStateText(ctx, t.name) + ")"
	}
	return false, ""
}

// deviceStateText describes an interface's device for error messages.
func (c *Client) deviceStateText(ctx context.Context, name string) string {
	var dev dbus.ObjectPath
	if err := c.call(ctx, nmPath, nmIface+".GetDeviceByIpIface", name).Store(&dev); err != nil {
		return "no such device"
	}
	var reason struct {
		State  uint32
		Reason uint32
	}
	if err := c.prop(dev, deviceIface, "StateReason", &reason); err != nil {
		return "state unknown"
	}
	return fmt.Sprintf("device state %d, reason %d", reason.State, reason.Reason)
}

// planFor spreads the state's ports, routes and DNS over the interfaces that carry them.
// Interfaces that only carry routes or DNS (not in desired.Interfaces) are returned as
// extra, to be updated on top of their current profile.
func planFor(desired state.State, ordered []state.Interface) (map[string]plan, []state.Interface, error) {
	plans := map[string]plan{}
	in := map[string]bool{}
	for _, it := range ordered {
		in[it.Name] = true
		var kind string
		var ports []string
		switch {
		case it.LinkAggregation != nil:
			kind, ports = "bond", it.LinkAggregation.Port
		case it.VRF != nil:
			kind, ports = "vrf", it.VRF.Port
		case it.Bridge != nil:
			for _, bp := range it.Bridge.Port {
				p := plans[bp.Name]
				p.port = &portOf{controller: it.Name, kind: "bridge", bridgeVLAN: bp.VLAN}
				plans[bp.Name] = p
			}
		}
		for _, port := range ports {
			p := plans[port]
			p.port = &portOf{controller: it.Name, kind: kind}
			plans[port] = p
		}
	}
	var extra []state.Interface
	touch := func(name string) {
		if !in[name] {
			in[name] = true
			extra = append(extra, state.Interface{Name: name, State: state.Up})
		}
	}
	// Ports named only in a controller's list get a profile of their own too.
	var ports []string
	for name, p := range plans {
		if p.port != nil {
			ports = append(ports, name)
		}
	}
	sort.Strings(ports)
	for _, name := range ports {
		touch(name)
	}
	if desired.Routes != nil {
		for _, r := range desired.Routes.Config {
			if r.NextHopInterface == "" {
				continue
			}
			p := plans[r.NextHopInterface]
			p.routes = append(p.routes, r)
			plans[r.NextHopInterface] = p
			touch(r.NextHopInterface)
		}
	}
	if desired.DNSResolver != nil && desired.DNSResolver.Config != nil {
		holder := dnsHolder(desired, ordered)
		if holder == "" {
			return nil, nil, errors.New("dns-resolver.config: no interface to carry it: give the default route or a static address on an interface in the same desired state")
		}
		p := plans[holder]
		p.dns = desired.DNSResolver.Config
		plans[holder] = p
	}
	return plans, extra, nil
}

// dnsHolder picks the interface whose profile carries the DNS servers: the one with the
// default route, else the first with a static address (nmstate's choice, roughly).
func dnsHolder(desired state.State, ordered []state.Interface) string {
	if desired.Routes != nil {
		for _, r := range desired.Routes.Config {
			if r.IsDefault() && r.State != "absent" {
				return r.NextHopInterface
			}
		}
	}
	for _, it := range ordered {
		if it.State != state.Absent && it.HasAddress() {
			return it.Name
		}
	}
	return ""
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
