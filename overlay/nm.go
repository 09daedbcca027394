package overlay

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/godbus/dbus/v5"
)

const (
	nmBusName       = "org.freedesktop.NetworkManager"
	nmSettingsPath  = "/org/freedesktop/NetworkManager/Settings"
	nmSettingsIface = "org.freedesktop.NetworkManager.Settings"
	nmConnIface     = "org.freedesktop.NetworkManager.Settings.Connection"
)

// NM talks to a running NetworkManager over the system bus (DBUS_SYSTEM_BUS_ADDRESS is
// honoured, which is how tests point it at a private bus).
type NM struct{ conn *dbus.Conn }

// ConnectNM returns nil, nil when there is no system bus yet (its socket is missing) or
// NetworkManager does not own its name on it: before NetworkManager starts is the helper's
// normal case. Any other failure (a bus that refuses us, a call that fails) is an error:
// "not running" must never stand in for "could not tell".
func ConnectNM(ctx context.Context) (*NM, error) {
	conn, err := dbus.ConnectSystemBus(dbus.WithContext(ctx))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, nil
		}
		return nil, fmt.Errorf("connecting to the system bus: %w", err)
	}
	var has bool
	if err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, nmBusName).Store(&has); err != nil {
		conn.Close()
		return nil, fmt.Errorf("asking the system bus whether NetworkManager runs: %w", err)
	}
	if !has {
		conn.Close()
		return nil, nil
	}
	return &NM{conn: conn}, nil
}

func (n *NM) Close() error { return n.conn.Close() }

// NMProfile is one connection profile as NetworkManager holds it.
type NMProfile struct {
	ID       string `json:"id"`
	UUID     string `json:"uuid"`
	Filename string `json:"filename"` // "" for profiles that live in memory only
}

// Profiles lists NetworkManager's profiles and the files they were loaded from.
func (n *NM) Profiles(ctx context.Context) ([]NMProfile, error) {
	var paths []dbus.ObjectPath
	if err := n.conn.Object(nmBusName, nmSettingsPath).CallWithContext(ctx, nmSettingsIface+".ListConnections", 0).Store(&paths); err != nil {
		return nil, fmt.Errorf("NetworkManager ListConnections: %w", err)
	}
	profiles := make([]NMProfile, 0, len(paths))
	for _, p := range paths {
		obj := n.conn.Object(nmBusName, p)
		var settings map[string]map[string]dbus.Variant
		if err := obj.CallWithContext(ctx, nmConnIface+".GetSettings", 0).Store(&settings); err != nil {
			continue // deleted meanwhile
		}
		var filename string
		if v, err := obj.GetProperty(nmConnIface + ".Filename"); err == nil {
			filename, _ = v.Value().(string)
		}
		id, _ := settings["connection"]["id"].Value().(string)
		uuid, _ := settings["connection"]["uuid"].Value().(string)
		profiles = append(profiles, NMProfile{ID: id, UUID: uuid, Filename: filename})
	}
	return profiles, nil
}

// Reload makes NetworkManager re-read every profile from disk: it never does by itself.
func (n *NM) Reload(ctx context.Context) error {
	var ok bool
	if err := n.conn.Object(nmBusName, nmSettingsPath).CallWithContext(ctx, nmSettingsIface+".ReloadConnections", 0).Store(&ok); err != nil {
		return fmt.Errorf("NetworkManager ReloadConnections: %w", err)
	}
	if !ok {
		return fmt.Errorf("NetworkManager ReloadConnections reported failure")
	}
	return nil
}
