// Package networkmanager is the engine's backend: it turns a desired state (package
// state) into NetworkManager connection profiles over D-Bus, inside one checkpoint,
// verifies the result and rolls back what did not converge. It reads the current state
// back in the model's schema and signals when the host's network changed.
package networkmanager

import (
	"context"
	"fmt"
	"time"

	"github.com/godbus/dbus/v5"
)

// D-Bus names of NetworkManager's API (org.freedesktop.NetworkManager(5)).
const (
	busName         = "org.freedesktop.NetworkManager"
	nmPath          = "/org/freedesktop/NetworkManager"
	nmIface         = "org.freedesktop.NetworkManager"
	settingsPath    = "/org/freedesktop/NetworkManager/Settings"
	settingsIface   = "org.freedesktop.NetworkManager.Settings"
	connIface       = "org.freedesktop.NetworkManager.Settings.Connection"
	deviceIface     = "org.freedesktop.NetworkManager.Device"
	activeIface     = "org.freedesktop.NetworkManager.Connection.Active"
	checkpointIface = "org.freedesktop.NetworkManager.Checkpoint"
	ip4Iface        = "org.freedesktop.NetworkManager.IP4Config"
	ip6Iface        = "org.freedesktop.NetworkManager.IP6Config"
	dnsManagerPath  = "/org/freedesktop/NetworkManager/DnsManager"
	dnsIface        = "org.freedesktop.NetworkManager.DnsManager"
	propsIface      = "org.freedesktop.DBus.Properties"
)

// Flags of AddConnection2/Update2 and CheckpointCreate.
const (
	saveToDisk = 0x1

	checkpointDeleteNewConnections        = 0x2
	checkpointDisconnectNewDevices        = 0x4
	activeStateActivated           uint32 = 2
	activeStateDeactivated         uint32 = 4
	deviceStateActivated           uint32 = 100
)

// OwnerKey marks the profiles this engine owns, in the profile's user data (the
// "user" setting): ownership stays knowable after a restart, and foreign profiles are
// never touched.
const OwnerKey = "nmoverlay.owner"

// OwnerValue is OwnerKey's value on owned profiles.
const OwnerValue = "engine"

// InputKey records, on an owned profile, a digest of the desired state it was built from:
// the same input again changes nothing, whatever defaults NetworkManager leaves out when
// it returns the profile.
const InputKey = "nmoverlay.input"

// BaseKey records, on an owned profile, the UUID of the profile it was built on (the one
// the interface ran before; "" for none): it is rebuilt on that base each time.
const BaseKey = "nmoverlay.base"

// Client is a connection to one NetworkManager.
type Client struct {
	conn *dbus.Conn
	// Settle is how long Changes waits for quiet before it signals.
	Settle time.Duration
}

// Connect connects to NetworkManager on the system bus, or on address when it is not empty
// (tests run NetworkManager on a private bus).
func Connect(ctx context.Context, address string) (*Client, error) {
	var conn *dbus.Conn
	var err error
	if address == "" {
		conn, err = dbus.ConnectSystemBus(dbus.WithContext(ctx))
	} else {
		conn, err = dbus.Connect(address, dbus.WithContext(ctx))
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to the system bus: %w", err)
	}
	c := &Client{conn: conn, Settle: 200 * time.Millisecond}
	var version string
	if err := c.prop(nmPath, nmIface, "Version", &version); err != nil {
		conn.Close()
		return nil, fmt.Errorf("NetworkManager is not answering on the bus: %w", err)
	}
	return c, nil
}

// Close closes the bus connection.
func (c *Client) Close() error { return c.conn.Close() }

// Version is NetworkManager's version.
func (c *Client) Version() (string, error) {
	var v string
	return v, c.prop(nmPath, nmIface, "Version", &v)
}

func (c *Client) obj(path dbus.ObjectPath) dbus.BusObject { return c.conn.Object(busName, path) }

func (c *Client) call(ctx context.Context, path dbus.ObjectPath, method string, args ...any) *dbus.Call {
	return c.obj(path).CallWithContext(ctx, method, 0, args...)
}

// prop reads one property into out.
func (c *Client) prop(path dbus.ObjectPath, iface, name string, out any) error {
	v, err := c.obj(path).GetProperty(iface + "." + name)
	if err != nil {
		return fmt.Errorf("%s %s.%s: %w", path, iface, name, err)
	}
	return dbus.Store([]any{v.Value()}, out)
}

// settings is a connection profile as NetworkManager's D-Bus API carries it.
type settings map[string]map[string]dbus.Variant

func (s settings) set(section, key string, value any) {
	if s[section] == nil {
		s[section] = map[string]dbus.Variant{}
	}
	s[section][key] = dbus.MakeVariant(value)
}

func (s settings) str(section, key string) string {
	v, ok := s[section][key]
	if !ok {
		return ""
	}
	str, _ := v.Value().(string)
	return str
}

func (s settings) userData(key string) string {
	v, _ := s.userDataOK(key)
	return v
}

func (s settings) userDataOK(key string) (string, bool) {
	v, ok := s["user"]["data"]
	if !ok {
		return "", false
	}
	data, _ := v.Value().(map[string]string)
	val, ok := data[key]
	return val, ok
}

func (s settings) owned() bool { return s.userData(OwnerKey) == OwnerValue }
