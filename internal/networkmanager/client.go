// Package networkmanager is the engine's backend: it turns a desired state (package
// state) into NetworkManager connection profiles over D-Bus, inside one checkpoint,
// verifies the result and rolls back what did not converge. It reads the current state
// back in the model's schema and signals when the host's network changed.
package networkmanager

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager/nmdbus"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// Flags of AddConnection2/Update2 and CheckpointCreate.
const (
	saveToDisk = 0x1
	// blockAutoconnect: a profile added is activated by the engine, in dependency order.
	blockAutoconnect = 0x20

	checkpointDeleteNewConnections        = 0x2
	checkpointDisconnectNewDevices        = 0x4
	activeStateActivating          uint32 = 1
	activeStateActivated           uint32 = 2
	activeStateDeactivated         uint32 = 4
	deviceStateIPConfig            uint32 = 70
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
	nm   *nmdbus.Conn
	conn *dbus.Conn // nm's bus, for signals
	// Settle is how long Changes waits for quiet before it signals.
	Settle time.Duration
	// SysfsRoot is where the network devices' sysfs is, /sys/class/net when empty (a test
	// reaching a node in other namespaces names the node's, through /proc/PID/root).
	SysfsRoot string
	// NetNS is the network namespace NetworkManager runs in, as a path (/proc/PID/ns/net),
	// when it is not this process's (a test reaching a node in other namespaces): Show's
	// reads of the kernel (routes, ethtool, VFs) are made there. The handler runs in the
	// host's, as NetworkManager does.
	NetNS string
	// VPNPluginDir is NetworkManager's VPN plugin directory as this process sees the
	// host's, vpnPluginDir when empty: the handler's pod mounts the host's there.
	VPNPluginDir string
	// watch is Changes' subscription, paused during an apply.
	watch changeWatch
}

// vpnPluginDir is where NetworkManager finds its VPN plugins' files (NM_VPN_PLUGIN_DIR).
const vpnPluginDir = "/usr/lib/NetworkManager/VPN"

func (c *Client) vpnPluginDir() string {
	if c.VPNPluginDir != "" {
		return c.VPNPluginDir
	}
	return vpnPluginDir
}

// inNetNS runs read in NetworkManager's network namespace: this process's when NetNS is
// empty, else on an OS thread of its own moved there, which is discarded afterwards.
func (c *Client) inNetNS(read func() error) error {
	if c.NetNS == "" {
		return read()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread, in another namespace, ends with the goroutine
		fd, err := unix.Open(c.NetNS, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			err = unix.Setns(fd, unix.CLONE_NEWNET)
			unix.Close(fd)
		}
		if err != nil {
			errc <- fmt.Errorf("entering NetworkManager's network namespace %s: %w", c.NetNS, err)
			return
		}
		errc <- read()
	}()
	return <-errc
}

func (c *Client) sysfsRoot() string {
	if c.SysfsRoot != "" {
		return c.SysfsRoot
	}
	return "/sys/class/net"
}

// Connect connects to NetworkManager on the system bus, or on address when it is not empty
// (tests run NetworkManager on a private bus).
func Connect(ctx context.Context, address string) (*Client, error) {
	nm, err := nmdbus.Connect(ctx, address)
	if err != nil {
		return nil, err
	}
	return &Client{nm: nm, conn: nm.Bus(), Settle: 200 * time.Millisecond}, nil
}

// Close closes the bus connection.
func (c *Client) Close() error { return c.nm.Close() }

// Version is NetworkManager's version.
func (c *Client) Version() (string, error) {
	var v string
	return v, c.prop(nmdbus.Path, nmdbus.Iface, "Version", &v)
}

// Ping asks NetworkManager for its version over D-Bus, bounded by ctx: the handler's
// readiness. While NetworkManager is gone, the bus answers that no one owns its name.
func (c *Client) Ping(ctx context.Context) error {
	return c.call(ctx, nmdbus.Path, "org.freedesktop.DBus.Properties.Get", nmdbus.Iface, "Version").Err
}

func (c *Client) obj(path dbus.ObjectPath) dbus.BusObject { return c.nm.Object(path) }

func (c *Client) call(ctx context.Context, path dbus.ObjectPath, method string, args ...any) *dbus.Call {
	return c.nm.Call(ctx, path, method, args...)
}

func (c *Client) prop(path dbus.ObjectPath, iface, name string, out any) error {
	return c.nm.Prop(path, iface, name, out)
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

// key identifies what the profile configures as state.Interface.Key does: its interface
// name, and for an OVS bridge or port, its kind (br-ex names a bridge, a port and an
// interface).
func (s settings) key() string {
	it := state.Interface{Name: s.str("connection", "interface-name")}
	switch s.str("connection", "type") {
	case kinds[state.OVSBridge].connType:
		it.Type = state.OVSBridge
	case kinds[state.OVSPort].connType:
		it.Type = state.OVSPort
	case kinds[state.IPsec].connType:
		it.Name = s.str("connection", "id") // a VPN profile has no interface: nmstate names it by its id
	}
	return it.Key()
}
