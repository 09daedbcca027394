package networkmanager

import (
	"context"
	"sync"
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
	c.watch.set(c.conn, matches, signals)
	out := make(chan struct{}, 1)
	settle := c.Settle
	go func() {
		defer func() {
			c.watch.set(nil, nil, nil)
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

// changeWatch is what Changes subscribed to, so that an apply can pause it.
type changeWatch struct {
	mu      sync.Mutex
	conn    *dbus.Conn
	matches [][]dbus.MatchOption
	signals chan *dbus.Signal
	paused  int
}

func (w *changeWatch) set(conn *dbus.Conn, matches [][]dbus.MatchOption, signals chan *dbus.Signal) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.conn, w.matches, w.signals, w.paused = conn, matches, signals, 0
}

// pause stops the bus from sending Changes its signals until resume, which then signals
// one change. An apply makes NetworkManager announce thousands of property changes (500
// interfaces: every device's and IP configuration's, at each step), which the bus would
// route here and the reader decode, on the connection the apply's own calls are answered
// on, while nothing reads the node until the transaction ended anyway.
func (w *changeWatch) pause() (resume func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conn == nil {
		return func() {}
	}
	conn := w.conn
	if w.paused++; w.paused == 1 {
		for _, m := range w.matches {
			_ = conn.RemoveMatchSignal(m...)
		}
	}
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.conn != conn || w.paused == 0 {
			return // Changes ended meanwhile
		}
		if w.paused--; w.paused > 0 {
			return
		}
		for _, m := range w.matches {
			_ = conn.AddMatchSignal(m...)
		}
		select {
		case w.signals <- &dbus.Signal{}: // what changed while paused
		default: // a signal is pending already
		}
	}
}
