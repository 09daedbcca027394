// Command fakevpn is a stand-in for NetworkManager-libreswan's VPN service
// (nm-libreswan-service). Debian does not package NetworkManager-libreswan, so
// without this program NetworkManager refuses to activate the engine's
// "libreswan" (IPsec) profiles at all. With it installed as the plugin's
// program= in a .name file, tests can drive NetworkManager's own VPN
// activation machinery (plugin start, NeedSecrets, Connect, Config, state
// changes, Disconnect) end to end.
//
// It does not run IPsec: no tunnel is built and no packets are protected. It
// only speaks the org.freedesktop.NetworkManager.VPN.Plugin D-Bus interface,
// reports the remote gateway back to NetworkManager and claims success.
//
// If FAKEVPN_LOG names a file, one line per D-Bus call is appended to it so a
// test can see what NetworkManager asked for (secret values are never logged,
// only whether they were present).
package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/introspect"
	"github.com/godbus/dbus/v5/prop"
)

const (
	defaultBusName = "org.freedesktop.NetworkManager.libreswan"
	pluginPath     = dbus.ObjectPath("/org/freedesktop/NetworkManager/VPN/Plugin")
	pluginIface    = "org.freedesktop.NetworkManager.VPN.Plugin"
	errBadArgs     = "org.freedesktop.NetworkManager.VPN.Error.BadArguments"
)

// NMVpnServiceState values.
const (
	stateInit     uint32 = 1
	stateStarting uint32 = 3
	stateStarted  uint32 = 4
	stateStopping uint32 = 5
	stateStopped  uint32 = 6
)

// NMVpnPluginFailure CONNECT_FAILED (0 is LOGIN_FAILED, 2 BAD_IP_CONFIG).
const failureConnectFailed uint32 = 1

// Test hooks: a profile whose remote gateway ("right") is failGateway, or
// whose "leftid" is failLeftID, is refused after the service has reported
// "starting", so a test can make an activation fail on purpose and watch
// NetworkManager handle a plugin failure. 192.0.2.66 is in TEST-NET-1.
var failGateway = netip.MustParseAddr("192.0.2.66")

const failLeftID = "@fail"

// plugin implements the D-Bus interface. godbus runs each incoming call in
// its own goroutine, so mu serialises state changes together with the
// signals that announce them, keeping the signal order NetworkManager sees
// consistent with the State property.
type plugin struct {
	conn  *dbus.Conn
	props *prop.Properties
	quit  func()

	mu    sync.Mutex
	state uint32
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("fakevpn: ")

	// NetworkManager runs "program --bus-name NAME" for plugins that support
	// multiple connections (NAME is then "<service>.Connection_<n>"), and
	// may grow other arguments; take --bus-name and ignore the rest.
	busName := busNameFromArgs(os.Args[1:], defaultBusName)

	conn, err := dbus.ConnectSystemBus()
	if err != nil {
		log.Fatalf("connect system bus: %v", err)
	}
	defer conn.Close()

	done := make(chan struct{})
	var once sync.Once
	p := &plugin{conn: conn, state: stateInit, quit: func() { once.Do(func() { close(done) }) }}

	if err := conn.Export(p, pluginPath, pluginIface); err != nil {
		log.Fatalf("export: %v", err)
	}
	p.props, err = prop.Export(conn, pluginPath, prop.Map{
		pluginIface: {"State": {Value: stateInit, Emit: prop.EmitTrue}},
	})
	if err != nil {
		log.Fatalf("export properties: %v", err)
	}
	node := &introspect.Node{
		Name: string(pluginPath),
		Interfaces: []introspect.Interface{
			introspect.IntrospectData,
			prop.IntrospectData,
			pluginIntrospection(p.props.Introspection(pluginIface)),
		},
	}
	if err := conn.Export(introspect.NewIntrospectable(node), pluginPath, "org.freedesktop.DBus.Introspectable"); err != nil {
		log.Fatalf("export introspection: %v", err)
	}

	// Request the name only once everything is exported: NetworkManager
	// starts calling as soon as it sees the name owned.
	reply, err := conn.RequestName(busName, dbus.NameFlagDoNotQueue)
	if err != nil {
		log.Fatalf("request name %s: %v", busName, err)
	}
	if reply != dbus.RequestNameReplyPrimaryOwner {
		log.Fatalf("request name %s: not primary owner (reply %d)", busName, reply)
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sigs:
	case <-done:
	}
}

// busNameFromArgs returns the value of --bus-name (as "--bus-name NAME" or
// "--bus-name=NAME", one or two dashes), or def if it is absent.
func busNameFromArgs(args []string, def string) string {
	for i, a := range args {
		name := strings.TrimLeft(a, "-")
		if len(name) == len(a) {
			continue // not a flag
		}
		if name == "bus-name" && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(name, "bus-name="); ok {
			return v
		}
	}
	return def
}

// vpnItems returns the string map stored under key ("data" or "secrets") in
// the connection's "vpn" setting, or nil if there is none. Both are a{ss} on
// the wire, which godbus decodes to map[string]string.
func vpnItems(connection map[string]map[string]dbus.Variant, key string) map[string]string {
	v, ok := connection["vpn"][key]
	if !ok {
		return nil
	}
	m, _ := v.Value().(map[string]string)
	return m
}

// remoteGateway returns the profile's remote gateway: the libreswan "right"
// key, which must be a literal IPv4 address. A real plugin would resolve a
// host name; this one only has to hand NetworkManager an address it can put
// in the Config signal, and the engine writes literal addresses.
func remoteGateway(connection map[string]map[string]dbus.Variant) (netip.Addr, error) {
	right, ok := vpnItems(connection, "data")["right"]
	if !ok || right == "" {
		return netip.Addr{}, errors.New(`vpn data has no "right" (remote gateway)`)
	}
	addr, err := netip.ParseAddr(right)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("vpn data right=%q is not an IP address", right)
	}
	if !addr.Is4() {
		return netip.Addr{}, fmt.Errorf("vpn data right=%q is not an IPv4 address", right)
	}
	return addr, nil
}

// gatewayValue encodes an IPv4 address as NetworkManager expects the Config
// signal's "gateway" entry: a "u" whose in-memory bytes are the address in
// network byte order. NetworkManager (_vardict_to_addr in
// src/core/vpn/nm-vpn-connection.c) reads the u32 natively and stores it
// straight into an in_addr_t, so the value must be the address bytes read in
// host byte order (on x86, little endian: 192.0.2.1 -> 0x010200c0). The
// plugin and NetworkManager always share a host, so native order is right.
func gatewayValue(addr netip.Addr) uint32 {
	a4 := addr.As4()
	return binary.NativeEndian.Uint32(a4[:])
}

// setState records the service state, updates the State property and
// announces it with StateChanged. Callers hold p.mu.
func (p *plugin) setState(s uint32) {
	p.state = s
	p.props.SetMust(pluginIface, "State", s)
	p.emit("StateChanged", s)
}

func (p *plugin) emit(name string, args ...any) {
	if err := p.conn.Emit(pluginPath, pluginIface+"."+name, args...); err != nil {
		log.Printf("emit %s: %v", name, err)
	}
}

// fail reports a failed connection attempt the way real plugins do (Failure,
// then StateChanged stopped) and returns the error for the method reply.
// Callers hold p.mu.
func (p *plugin) fail(msg string) *dbus.Error {
	p.emit("Failure", failureConnectFailed)
	p.setState(stateStopped)
	p.quitSoon()
	return dbus.NewError(errBadArgs, []any{msg})
}

// quitSoon exits shortly after the service has stopped, as real plugins
// quit when idle: NetworkManager starts a fresh plugin process (under a new
// bus name) for every activation, so a stopped one is never reused. The
// delay lets the final signals and the method reply go out first.
func (p *plugin) quitSoon() {
	time.AfterFunc(time.Second, p.quit)
}

func (p *plugin) connect(connection map[string]map[string]dbus.Variant) *dbus.Error {
	p.mu.Lock()
	defer p.mu.Unlock()

	psk := "unset"
	if vpnItems(connection, "secrets")["pskvalue"] != "" {
		psk = "set"
	}
	right := vpnItems(connection, "data")["right"]
	gw, err := remoteGateway(connection)
	if err != nil {
		logCall("connect right=%s psk=%s error=%q", right, psk, err)
		return p.fail(err.Error())
	}

	p.setState(stateStarting)

	if gw == failGateway || vpnItems(connection, "data")["leftid"] == failLeftID {
		msg := "refusing to connect: profile asks to fail (test hook)"
		logCall("connect right=%s psk=%s error=%q", right, psk, msg)
		return p.fail(msg)
	}
	logCall("connect right=%s psk=%s", right, psk)

	// Report the configuration after the Connect reply, as a real plugin
	// does once the tunnel is up. No tunnel device and no IP configuration:
	// NetworkManager then completes the activation on the parent device with
	// just the external gateway.
	go func() {
		time.Sleep(100 * time.Millisecond)
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.state != stateStarting {
			return // disconnected meanwhile
		}
		p.emit("Config", map[string]dbus.Variant{
			"gateway": dbus.MakeVariant(gatewayValue(gw)),
			"has-ip4": dbus.MakeVariant(false),
			"has-ip6": dbus.MakeVariant(false),
		})
		p.setState(stateStarted)
	}()
	return nil
}

// Connect is called by NetworkManager when not all secret agents support
// interactive secrets.
func (p *plugin) Connect(connection map[string]map[string]dbus.Variant) *dbus.Error {
	return p.connect(connection)
}

// ConnectInteractive is what NetworkManager normally calls; this plugin never
// asks for secrets interactively, so it is the same as Connect.
func (p *plugin) ConnectInteractive(connection map[string]map[string]dbus.Variant, details map[string]dbus.Variant) *dbus.Error {
	return p.connect(connection)
}

// NeedSecrets returns "" (nothing missing): whatever secrets the profile has
// are passed along to Connect, which only notes whether a PSK was present.
func (p *plugin) NeedSecrets(settings map[string]map[string]dbus.Variant) (string, *dbus.Error) {
	logCall("need-secrets")
	return "", nil
}

func (p *plugin) Disconnect() *dbus.Error {
	p.mu.Lock()
	defer p.mu.Unlock()
	logCall("disconnect")
	p.setState(stateStopping)
	p.setState(stateStopped)
	p.quitSoon()
	return nil
}

// The remaining methods are how helper processes of real plugins report back
// to their service; NetworkManager itself does not call them. Accept them
// so the interface is complete.

func (p *plugin) SetConfig(config map[string]dbus.Variant) *dbus.Error {
	logCall("set-config")
	return nil
}

func (p *plugin) SetIp4Config(config map[string]dbus.Variant) *dbus.Error {
	logCall("set-ip4-config")
	return nil
}

func (p *plugin) SetIp6Config(config map[string]dbus.Variant) *dbus.Error {
	logCall("set-ip6-config")
	return nil
}

func (p *plugin) SetFailure(reason string) *dbus.Error {
	logCall("set-failure reason=%q", reason)
	return nil
}

func (p *plugin) NewSecrets(connection map[string]map[string]dbus.Variant) *dbus.Error {
	logCall("new-secrets")
	return nil
}

// logCall appends one line to $FAKEVPN_LOG, if set. The file is opened per
// call in append mode so lines from successive plugin processes (one per
// activation) accumulate in one file.
func logCall(format string, args ...any) {
	path := os.Getenv("FAKEVPN_LOG")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		log.Printf("log: %v", err)
		return
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, format+"\n", args...); err != nil {
		log.Printf("log: %v", err)
	}
}

// pluginIntrospection describes the VPN plugin interface, with the argument
// names NetworkManager's own introspection data uses.
func pluginIntrospection(props []introspect.Property) introspect.Interface {
	in := func(name, typ string) introspect.Arg { return introspect.Arg{Name: name, Type: typ, Direction: "in"} }
	out := func(name, typ string) introspect.Arg { return introspect.Arg{Name: name, Type: typ, Direction: "out"} }
	sig := func(name, typ string) introspect.Arg { return introspect.Arg{Name: name, Type: typ} }
	return introspect.Interface{
		Name: pluginIface,
		Methods: []introspect.Method{
			{Name: "Connect", Args: []introspect.Arg{in("connection", "a{sa{sv}}")}},
			{Name: "ConnectInteractive", Args: []introspect.Arg{in("connection", "a{sa{sv}}"), in("details", "a{sv}")}},
			{Name: "NeedSecrets", Args: []introspect.Arg{in("settings", "a{sa{sv}}"), out("setting_name", "s")}},
			{Name: "Disconnect"},
			{Name: "SetConfig", Args: []introspect.Arg{in("config", "a{sv}")}},
			{Name: "SetIp4Config", Args: []introspect.Arg{in("config", "a{sv}")}},
			{Name: "SetIp6Config", Args: []introspect.Arg{in("config", "a{sv}")}},
			{Name: "SetFailure", Args: []introspect.Arg{in("reason", "s")}},
			{Name: "NewSecrets", Args: []introspect.Arg{in("connection", "a{sa{sv}}")}},
		},
		Signals: []introspect.Signal{
			{Name: "StateChanged", Args: []introspect.Arg{sig("state", "u")}},
			{Name: "Config", Args: []introspect.Arg{sig("config", "a{sv}")}},
			{Name: "Ip4Config", Args: []introspect.Arg{sig("ip4config", "a{sv}")}},
			{Name: "Failure", Args: []introspect.Arg{sig("reason", "u")}},
		},
		Properties: props,
	}
}
