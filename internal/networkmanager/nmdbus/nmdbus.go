// Package nmdbus is NetworkManager's D-Bus API as nmoverlay uses it: its names, a
// connection, and the calls that both the engine (internal/networkmanager) and the
// nm-overlay helper make. It depends on godbus alone, so the helper that links it stays
// small.
package nmdbus

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/godbus/dbus/v5"
)

// D-Bus names of NetworkManager's API (org.freedesktop.NetworkManager(5)).
const (
	BusName         = "org.freedesktop.NetworkManager"
	Path            = "/org/freedesktop/NetworkManager"
	Iface           = "org.freedesktop.NetworkManager"
	SettingsPath    = "/org/freedesktop/NetworkManager/Settings"
	SettingsIface   = "org.freedesktop.NetworkManager.Settings"
	ConnIface       = "org.freedesktop.NetworkManager.Settings.Connection"
	DeviceIface     = "org.freedesktop.NetworkManager.Device"
	WiredIface      = "org.freedesktop.NetworkManager.Device.Wired"
	ActiveIface     = "org.freedesktop.NetworkManager.Connection.Active"
	CheckpointIface = "org.freedesktop.NetworkManager.Checkpoint"
	IP4Iface        = "org.freedesktop.NetworkManager.IP4Config"
	IP6Iface        = "org.freedesktop.NetworkManager.IP6Config"
	DNSManagerPath  = "/org/freedesktop/NetworkManager/DnsManager"
	DNSIface        = "org.freedesktop.NetworkManager.DnsManager"
	PropsIface      = "org.freedesktop.DBus.Properties"
)

// Conn is a connection to NetworkManager on a bus.
type Conn struct{ bus *dbus.Conn }

// Connect connects to NetworkManager on the system bus (DBUS_SYSTEM_BUS_ADDRESS is
// honoured), or on address when it is not empty (tests run NetworkManager on a private
// bus), and checks that it answers.
func Connect(ctx context.Context, address string) (*Conn, error) {
	bus, err := dial(ctx, address)
	if err != nil {
		return nil, fmt.Errorf("connecting to the system bus: %w", err)
	}
	c := &Conn{bus: bus}
	var version string
	if err := c.Prop(Path, Iface, "Version", &version); err != nil {
		bus.Close()
		return nil, fmt.Errorf("NetworkManager is not answering on the bus: %w", err)
	}
	return c, nil
}

// ConnectIfRunning connects to NetworkManager on the system bus, or returns nil, nil when
// there is no system bus yet (its socket is missing) or NetworkManager does not own its
// name on it: before NetworkManager starts is the nm-overlay helper's normal case. Any
// other failure (a bus that refuses us, a call that fails) is an error: "not running"
// must never stand in for "could not tell".
func ConnectIfRunning(ctx context.Context) (*Conn, error) {
	bus, err := dial(ctx, "")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, nil
		}
		return nil, fmt.Errorf("connecting to the system bus: %w", err)
	}
	var has bool
	if err := bus.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, BusName).Store(&has); err != nil {
		bus.Close()
		return nil, fmt.Errorf("asking the system bus whether NetworkManager runs: %w", err)
	}
	if !has {
		bus.Close()
		return nil, nil
	}
	return &Conn{bus: bus}, nil
}

func dial(ctx context.Context, address string) (*dbus.Conn, error) {
	if address == "" {
		return dbus.ConnectSystemBus(dbus.WithContext(ctx))
	}
	return dbus.Connect(address, dbus.WithContext(ctx))
}

// Close closes the bus connection.
func (c *Conn) Close() error { return c.bus.Close() }

// Bus is the underlying connection, for signals.
func (c *Conn) Bus() *dbus.Conn { return c.bus }

// Object is NetworkManager's object at path.
func (c *Conn) Object(path dbus.ObjectPath) dbus.BusObject { return c.bus.Object(BusName, path) }

// Call calls a method of NetworkManager's object at path.
func (c *Conn) Call(ctx context.Context, path dbus.ObjectPath, method string, args ...any) *dbus.Call {
	return c.Object(path).CallWithContext(ctx, method, 0, args...)
}

// Prop reads one property into out.
func (c *Conn) Prop(path dbus.ObjectPath, iface, name string, out any) error {
	v, err := c.Object(path).GetProperty(iface + "." + name)
	if err != nil {
		return fmt.Errorf("%s %s.%s: %w", path, iface, name, err)
	}
	return dbus.Store([]any{v.Value()}, out)
}

// Settings is a connection profile as NetworkManager's D-Bus API carries it.
type Settings map[string]map[string]dbus.Variant

// Connections lists the paths of every profile NetworkManager holds.
func (c *Conn) Connections(ctx context.Context) ([]dbus.ObjectPath, error) {
	var paths []dbus.ObjectPath
	if err := c.Call(ctx, SettingsPath, SettingsIface+".ListConnections").Store(&paths); err != nil {
		return nil, fmt.Errorf("NetworkManager ListConnections: %w", err)
	}
	return paths, nil
}

// Settings reads one profile's settings (without secrets).
func (c *Conn) Settings(ctx context.Context, path dbus.ObjectPath) (Settings, error) {
	var s Settings
	if err := c.Call(ctx, path, ConnIface+".GetSettings").Store(&s); err != nil {
		return nil, fmt.Errorf("%s GetSettings: %w", path, err)
	}
	return s, nil
}

// Profile is one connection profile as NetworkManager holds it.
type Profile struct {
	ID       string `json:"id"`
	UUID     string `json:"uuid"`
	Filename string `json:"filename"` // "" for profiles that live in memory only
}

// Profiles lists NetworkManager's profiles and the files they were loaded from.
func (c *Conn) Profiles(ctx context.Context) ([]Profile, error) {
	paths, err := c.Connections(ctx)
	if err != nil {
		return nil, err
	}
	profiles := make([]Profile, 0, len(paths))
	for _, p := range paths {
		s, err := c.Settings(ctx, p)
		if err != nil {
			continue // deleted meanwhile
		}
		var filename string
		_ = c.Prop(p, ConnIface, "Filename", &filename) // absent on older NetworkManager: in memory
		id, _ := s["connection"]["id"].Value().(string)
		uuid, _ := s["connection"]["uuid"].Value().(string)
		profiles = append(profiles, Profile{ID: id, UUID: uuid, Filename: filename})
	}
	return profiles, nil
}

// Reload makes NetworkManager re-read every profile from disk: it never does by itself.
func (c *Conn) Reload(ctx context.Context) error {
	var ok bool
	if err := c.Call(ctx, SettingsPath, SettingsIface+".ReloadConnections").Store(&ok); err != nil {
		return fmt.Errorf("NetworkManager ReloadConnections: %w", err)
	}
	if !ok {
		return fmt.Errorf("NetworkManager ReloadConnections reported failure")
	}
	return nil
}
