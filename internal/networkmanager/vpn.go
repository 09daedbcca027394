package networkmanager

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/godbus/dbus/v5"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager/nmdbus"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// A VPN profile (an IPsec interface's) has no device. NetworkManager activates it over
// the device of its default route when asked to activate it on none, runs it through its
// plugin, and says how it runs in its active connection: the engine reads that as the
// interface's device. NetworkManager's checkpoints restore devices and the profiles they
// run, so they neither restore a VPN profile an apply changed or deleted nor start it
// again: the transaction keeps those itself (savedVPN). A new one goes with the rollback,
// as every new profile does.

// vpnActiveIface is a VPN active connection's own interface.
const vpnActiveIface = "org.freedesktop.NetworkManager.VPN.Connection"

// vpnDevices are the active VPN connections whose profile a deviceless kind claims, each
// as a device named as nmstate names the interface, by the profile's id. profileOf reads
// a profile's settings (nil for one it does not know).
func (o objects) vpnDevices(profileOf func(dbus.ObjectPath) settings) []device {
	var out []device
	for p, ifaces := range o {
		ac, ok := ifaces[nmdbus.ActiveIface]
		if vpn, _ := ac["Vpn"].Value().(bool); !ok || !vpn {
			continue
		}
		d := device{path: p, active: p, vpn: true}
		d.profile, _ = ac["Connection"].Value().(dbus.ObjectPath)
		s := profileOf(d.profile)
		for t, k := range kinds {
			if k.deviceless && s != nil && k.claims(s) {
				d.typ = t
			}
		}
		if d.typ == "" {
			continue // another VPN's: not part of the model
		}
		d.name = s.str("connection", "id")
		d.key = state.Interface{Name: d.name, Type: d.typ}.Key()
		if st, _ := ac["State"].Value().(uint32); st == activeStateActivated {
			d.state = deviceStateActivated
		}
		out = append(out, d)
	}
	return out
}

// endVPN ends a running VPN connection and waits until it has: NetworkManager refuses to
// activate a VPN profile again while it runs (a device's it re-activates in place).
func (c *Client) endVPN(ctx context.Context, active dbus.ObjectPath) error {
	if err := c.call(ctx, nmdbus.Path, nmdbus.Iface+".DeactivateConnection", active).Err; err != nil && !notActive(err) {
		return fmt.Errorf("ending its VPN connection: %w", err)
	}
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, vpnEndWait, true, func(context.Context) (bool, error) {
		var st uint32
		err := c.prop(active, nmdbus.ActiveIface, "State", &st)
		return err != nil || st == activeStateDeactivated, nil
	})
}

// vpnEndWait bounds the wait for a VPN plugin to disconnect.
const vpnEndWait = 10 * time.Second

// vpnStateText describes a VPN activation for error messages.
func (c *Client) vpnStateText(active dbus.ObjectPath) string {
	var st uint32
	if err := c.prop(active, vpnActiveIface, "VpnState", &st); err != nil {
		return "no VPN connection"
	}
	if what, ok := vpnStates[st]; ok {
		return fmt.Sprintf("%s: VPN state %d", what, st)
	}
	return fmt.Sprintf("VPN state %d", st)
}

// vpnStates say what NetworkManager's VPN connection states wait for
// (NMVpnConnectionState).
var vpnStates = map[uint32]string{
	1: "preparing", 2: "waiting for secrets", 3: "connecting (the VPN plugin)", 4: "waiting for the plugin's IP configuration",
	6: "failed", 7: "disconnected",
}

// savedVPN is an owned VPN profile as it was before an apply: its settings with its
// secrets, and whether it ran.
type savedVPN struct {
	key      string
	settings settings
	active   bool
}

// saveVPNs reads every owned VPN profile, secrets included, before an apply changes
// anything: what the rollback puts back.
func (c *Client) saveVPNs(ctx context.Context, h *host) ([]savedVPN, error) {
	var out []savedVPN
	for key, p := range h.owned {
		if !kinds[state.IPsec].claims(p.settings) {
			continue
		}
		s := writable(p.settings)
		var secrets map[string]map[string]dbus.Variant
		if err := c.call(ctx, p.path, nmdbus.ConnIface+".GetSecrets", "vpn").Store(&secrets); err != nil {
			return nil, fmt.Errorf("%s: reading its profile's secrets, to restore them if the apply is rolled back: %w", key, err)
		}
		maps.Copy(s["vpn"], secrets["vpn"])
		d, ok := h.devs[key]
		out = append(out, savedVPN{key: key, settings: s, active: ok && d.vpn && d.profile == p.path})
	}
	return out, nil
}

// restoreVPNs puts the saved VPN profiles back as they were (a deleted one added again,
// with its UUID), and activates again those that ran and no longer do. It runs after the
// checkpoint's rollback, which restores the devices they run over.
func (c *Client) restoreVPNs(ctx context.Context, saved []savedVPN) error {
	if len(saved) == 0 {
		return nil
	}
	h, err := c.readHost(ctx, scope{})
	if err != nil {
		return err
	}
	var errs []error
	var waiting []activation
	for _, v := range saved {
		// By key: an apply may have added it anew (keepsNoSecrets). The saved settings
		// carry the input digest they were built from, so save changes only what differs.
		path, changed, err := c.save(ctx, h.owned[v.key], v.settings)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: restoring its profile: %w", v.key, err))
			continue
		}
		d, running := h.devs[v.key]
		running = running && d.vpn
		if !v.active || running && d.profile == path && !changed {
			continue
		}
		if running {
			if err := c.endVPN(ctx, d.active); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", v.key, err))
				continue
			}
		}
		a := activation{name: v.key, key: v.key, vpn: true, profile: path}
		if err := c.activate(ctx, &a); err != nil {
			errs = append(errs, fmt.Errorf("%s: activating it again: %w", v.key, err))
			continue
		}
		waiting = append(waiting, a)
	}
	if len(waiting) > 0 {
		if err := c.waitActivated(ctx, waiting, time.Now().Add(vpnRestoreWait), vpnRestoreWait); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// vpnRestoreWait is how long a VPN a rollback starts again may take to run.
const vpnRestoreWait = 30 * time.Second
