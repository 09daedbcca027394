//go:build node

package node_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager/nmdbus"
)

// nmFloor is NetworkManager's own time to create and activate a profile on each of these
// interfaces, each with the address addr gives: every profile asked for at once over
// D-Bus (AddConnection2 to disk, then ActivateConnection; as many in flight as the bus
// lets one connection have), until every device reports
// itself activated, with no checkpoint, verification, probe or API write. It is the floor
// an engine's apply of the same interfaces is measured against, in the same run.
func nmFloor(ctx context.Context, busAddress string, names []string, addr func(i int) string) (time.Duration, error) {
	nm, err := nmdbus.Connect(ctx, busAddress)
	if err != nil {
		return 0, err
	}
	defer nm.Close()
	// The devices are looked up first, and their state changes watched, before the clock
	// starts: neither is NetworkManager's work.
	byPath := map[dbus.ObjectPath]int{}
	for i, name := range names {
		var dev dbus.ObjectPath
		if err := nm.Call(ctx, nmdbus.Path, nmdbus.Iface+".GetDeviceByIpIface", name).Store(&dev); err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		byPath[dev] = i
	}
	bus := nm.Bus()
	if err := bus.AddMatchSignal(dbus.WithMatchInterface(nmdbus.DeviceIface), dbus.WithMatchMember("StateChanged")); err != nil {
		return 0, err
	}
	signals := make(chan *dbus.Signal, 4*len(names))
	bus.Signal(signals)
	defer bus.RemoveSignal(signals)

	const activated = 100
	inFlight := make(chan struct{}, maxPendingReplies)
	start := time.Now()
	errs := make(chan error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inFlight <- struct{}{}
			defer func() { <-inFlight }()
			settings := map[string]map[string]dbus.Variant{
				"connection": {"id": dbus.MakeVariant(name), "uuid": dbus.MakeVariant(uuid4()), "type": dbus.MakeVariant("802-3-ethernet"),
					"interface-name": dbus.MakeVariant(name)},
				"ipv4": {"method": dbus.MakeVariant("manual"),
					"address-data": dbus.MakeVariant([]map[string]dbus.Variant{{"address": dbus.MakeVariant(addr(i)), "prefix": dbus.MakeVariant(uint32(24))}})},
				"ipv6": {"method": dbus.MakeVariant("disabled")},
			}
			var path dbus.ObjectPath
			var result map[string]dbus.Variant
			if err := nm.Call(ctx, nmdbus.SettingsPath, nmdbus.SettingsIface+".AddConnection2", settings, uint32(0x1|0x20), map[string]dbus.Variant{}).Store(&path, &result); err != nil {
				errs <- fmt.Errorf("%s: adding: %w", name, err)
				return
			}
			var active dbus.ObjectPath
			if err := nm.Call(ctx, nmdbus.Path, nmdbus.Iface+".ActivateConnection", path, dbus.ObjectPath("/"), dbus.ObjectPath("/")).Store(&active); err != nil {
				errs <- fmt.Errorf("%s: activating: %w", name, err)
			}
		}()
	}
	done := map[int]bool{}
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for len(done) < len(names) {
		select {
		case err := <-errs:
			return 0, err
		case s := <-signals:
			i, ours := byPath[s.Path]
			if ours && len(s.Body) > 0 && s.Body[0] == uint32(activated) {
				done[i] = true
			}
		case <-ticker.C:
			// A signal missed while the channel was full is caught by reading the state.
			for path, i := range byPath {
				var st uint32
				if !done[i] && nm.Prop(path, nmdbus.DeviceIface, "State", &st) == nil && st == activated {
					done[i] = true
				}
			}
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	elapsed := time.Since(start)
	wg.Wait()
	return elapsed, nil
}

// maxPendingReplies is below dbus-daemon's limit of calls awaiting a reply on one
// connection on the system bus (max_replies_per_connection, 128).
const maxPendingReplies = 120

func uuid4() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
