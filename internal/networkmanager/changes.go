package networkmanager

import (
	"context"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager/nmdbus"
)

// Changes signals when NetworkManager reports a change of devices, addresses, routes or
// DNS: one value per burst, after Settle of quiet (at most a second after the burst
// began), so a reporter reads the state once per change, not once per property.
func (c *Client) Changes(ctx context.Context) (<-chan struct{}, error) {
	matches := [][]dbus.MatchOption{
		{dbus.WithMatchSender(nmdbus.BusName), dbus.WithMatchInterface(nmdbus.PropsIface), dbus.WithMatchMember("PropertiesChanged"), dbus.WithMatchPathNamespace(nmdbus.Path)},
		{dbus.WithMatchSender(nmdbus.BusName), dbus.WithMatchInterface(nmdbus.Iface), dbus.WithMatchMember("DeviceAdded")},
		{dbus.WithMatchSender(nmdbus.BusName), dbus.WithMatchInterface(nmdbus.Iface), dbus.WithMatchMember("DeviceRemoved")},
	}
	for _, m := range matches {
		if err := c.conn.AddMatchSignalContext(ctx, m...); err != nil {
			return nil, err
		}
	}
	signals := make(chan *dbus.Signal, 256)
	c.conn.Signal(signals)
	out := make(chan struct{}, 1)
	settle := c.Settle
	go func() {
		defer func() {
			c.conn.RemoveSignal(signals)
			for _, m := range matches {
				_ = c.conn.RemoveMatchSignal(m...)
			}
			close(out)
		}()
		var quiet, cap <-chan time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-signals:
				if !ok {
					return
				}
				quiet = time.After(settle)
				if cap == nil {
					cap = time.After(time.Second)
				}
				continue
			case <-quiet:
			case <-cap:
			}
			quiet, cap = nil, nil
			select {
			case out <- struct{}{}:
			default: // one pending signal is enough
			}
		}
	}()
	return out, nil
}
