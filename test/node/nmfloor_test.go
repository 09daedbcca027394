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

// floorOrder is one way of asking NetworkManager for the profiles.
type floorOrder struct {
	name string
	// addsFirst: every profile is added before any is activated; otherwise each is
	// activated as soon as it is added, in the same window of calls.
	addsFirst bool
	// adds and activations are how many of each are in flight at once.
	adds, activations int
}

// floorOrders are the orders nmFloor is timed in; the lowest time is the floor.
var floorOrders = []floorOrder{
	{name: "all at once, each activated once added", adds: maxPendingReplies, activations: maxPendingReplies},
	{name: "all at once, every one added first", addsFirst: true, adds: maxPendingReplies, activations: maxPendingReplies},
	// The engine's order, without its checkpoint, verification and waves: a window of
	// calls, so that the bus never refuses one, and NetworkManager's queue never empties.
	{name: "64 at a time, every one added first", addsFirst: true, adds: 64, activations: 64},
}

// nmFloor is NetworkManager's own time to create and activate a profile on each of these
// interfaces, each with the address addr gives, asked for over D-Bus in the given order
// (AddConnection2 to disk, then ActivateConnection), until every device reports itself
// activated, with no checkpoint, verification, probe or API write. It is the floor an
// engine's apply of the same interfaces is measured against, in the same run. The
// profiles stay; clean removes them and waits until their devices are disconnected.
func nmFloor(ctx context.Context, busAddress string, names []string, addr func(i int) string, order floorOrder) (took time.Duration, clean func() error, err error) {
	nm, err := nmdbus.Connect(ctx, busAddress)
	if err != nil {
		return 0, nil, err
	}
	defer nm.Close()
	// The devices are looked up first, and their state changes watched, before the clock
	// starts: neither is NetworkManager's work.
	byPath := map[dbus.ObjectPath]int{}
	for i, name := range names {
		var dev dbus.ObjectPath
		if err := nm.Call(ctx, nmdbus.Path, nmdbus.Iface+".GetDeviceByIpIface", name).Store(&dev); err != nil {
			return 0, nil, fmt.Errorf("%s: %w", name, err)
		}
		byPath[dev] = i
	}
	bus := nm.Bus()
	if err := bus.AddMatchSignal(dbus.WithMatchInterface(nmdbus.DeviceIface), dbus.WithMatchMember("StateChanged")); err != nil {
		return 0, nil, err
	}
	signals := make(chan *dbus.Signal, 4*len(names))
	bus.Signal(signals)
	defer bus.RemoveSignal(signals)

	const activated = 100
	addSlots := make(chan struct{}, order.adds)
	activateSlots := addSlots // one window for both: at most maxPendingReplies in flight
	if order.addsFirst {
		activateSlots = make(chan struct{}, order.activations)
	}
	start := time.Now()
	errs := make(chan error, len(names))
	paths := make([]dbus.ObjectPath, len(names))
	var wg, added sync.WaitGroup
	added.Add(len(names))
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			addSlots <- struct{}{}
			settings := map[string]map[string]dbus.Variant{
				"connection": {"id": dbus.MakeVariant(name), "uuid": dbus.MakeVariant(uuid4()), "type": dbus.MakeVariant("802-3-ethernet"),
					"interface-name": dbus.MakeVariant(name)},
				"ipv4": {"method": dbus.MakeVariant("manual"),
					"address-data": dbus.MakeVariant([]map[string]dbus.Variant{{"address": dbus.MakeVariant(addr(i)), "prefix": dbus.MakeVariant(uint32(24))}})},
				"ipv6": {"method": dbus.MakeVariant("disabled")},
			}
			var result map[string]dbus.Variant
			err := nm.Call(ctx, nmdbus.SettingsPath, nmdbus.SettingsIface+".AddConnection2", settings, uint32(0x1|0x20), map[string]dbus.Variant{}).Store(&paths[i], &result)
			added.Done()
			if err != nil {
				<-addSlots
				errs <- fmt.Errorf("%s: adding: %w", name, err)
				return
			}
			if order.addsFirst {
				<-addSlots
				added.Wait()
				activateSlots <- struct{}{}
			}
			defer func() { <-activateSlots }()
			var active dbus.ObjectPath
			if err := nm.Call(ctx, nmdbus.Path, nmdbus.Iface+".ActivateConnection", paths[i], dbus.ObjectPath("/"), dbus.ObjectPath("/")).Store(&active); err != nil {
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
			return 0, nil, err
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
			return 0, nil, ctx.Err()
		}
	}
	elapsed := time.Since(start)
	wg.Wait()
	clean = func() error {
		nm, err := nmdbus.Connect(ctx, busAddress)
		if err != nil {
			return err
		}
		defer nm.Close()
		for _, p := range paths {
			if err := nm.Call(ctx, p, nmdbus.ConnIface+".Delete").Err; err != nil {
				return err
			}
		}
		const disconnected = 30
		deadline := time.Now().Add(time.Minute)
		for dev := range byPath {
			var st uint32
			for nm.Prop(dev, nmdbus.DeviceIface, "State", &st) == nil && st > disconnected {
				if time.Now().After(deadline) {
					return fmt.Errorf("%s still in state %d a minute after its profile was deleted", dev, st)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		return nil
	}
	return elapsed, clean, nil
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
