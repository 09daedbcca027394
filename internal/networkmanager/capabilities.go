package networkmanager

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/nmoverlay/nmoverlay/api/field"
	"github.com/nmoverlay/nmoverlay/internal/networkmanager/nmdbus"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// Capabilities is what the node's NetworkManager says of itself over D-Bus: its version,
// and its capabilities beyond what its version implies (a distribution's backports, a
// loaded device plugin).
type Capabilities struct {
	// Version is NetworkManager's version as it reports it ("1.46.0-26.el9_4").
	Version string
	// release is Version's major, minor and micro numbers; zero when it is not a version.
	release [3]int
	// OVS: the Open vSwitch device plugin is loaded (NM_CAPABILITY_OVS).
	OVS bool
	// Libreswan: NetworkManager-libreswan is installed: NetworkManager's VPN plugin
	// directory has a plugin file (*.name) for libreswanService. NetworkManager runs the
	// program that file names; the plugin is not on the bus until then.
	Libreswan bool
	// WPASupplicant: wpa_supplicant is on the system bus, or the bus can start it
	// (wpaSupplicantService): NetworkManager agrees MACsec keys through it.
	WPASupplicant bool
	// versionInfo is NetworkManager's VersionInfo (1.42 and later): its version, then a
	// bit field of the capabilities a build announces (NMVersionInfoCapability), which is
	// how a distribution's build says it has what a later release added.
	versionInfo []uint32
}

// announces says whether the build announces capability n in VersionInfo.
func (c Capabilities) announces(n int) bool {
	i := 1 + n/32
	return n >= 0 && i < len(c.versionInfo) && c.versionInfo[i]&(1<<(n%32)) != 0
}

// versionInfoIPv4Forwarding is NM_VERSION_INFO_CAPABILITY_IP4_FORWARDING.
const versionInfoIPv4Forwarding = 1

// wpaSupplicantService is wpa_supplicant's D-Bus name.
const wpaSupplicantService = "fi.w1.wpa_supplicant1"

// libreswanService is the D-Bus name of NetworkManager-libreswan's VPN service, and the
// vpn.service-type of its profiles.
const libreswanService = "org.freedesktop.NetworkManager.libreswan"

// Plugin capabilities, as the Manager's Capabilities property numbers them.
const capabilityOVS = 2

// requirement is what NetworkManager must have to apply what needs a capability: a
// release, or a plugin.
type requirement struct {
	// what names it as NetworkManager does: its setting property.
	what string
	// since is the first NetworkManager release (major, minor) that has it; announced, when
	// not 0, the VersionInfo capability by which an earlier build says it has it.
	since     [2]int
	announced int
	// plugin, for what a plugin of its own package provides: says whether the node has it.
	// lacking is what shows the node has not; why what needs the plugin does.
	plugin       func(Capabilities) bool
	lacking, why string
}

// requirements are the state's capabilities as NetworkManager provides them, from the
// "Since:" of each setting property in NetworkManager's own sources
// (src/libnm-core-impl/nm-setting-*.c).
var requirements = map[state.Capability]requirement{
	state.CapabilityBondPortPriority: {what: "bond-port.prio", since: [2]int{1, 44}},
	state.CapabilityEthtoolFEC:       {what: "ethtool.fec-mode", since: [2]int{1, 52}},
	state.CapabilityHSR:              {what: "hsr profiles", since: [2]int{1, 46}},
	state.CapabilityIPVLAN:           {what: "ipvlan profiles", since: [2]int{1, 52}},
	state.CapabilityIPv4Forwarding:   {what: "ipv4.forwarding", since: [2]int{1, 54}, announced: versionInfoIPv4Forwarding},
	state.CapabilityMACsec: {what: "wpa_supplicant",
		plugin:  func(c Capabilities) bool { return c.WPASupplicant },
		lacking: wpaSupplicantService + " is neither on the system bus nor one it can start",
		why:     "NetworkManager agrees MACsec keys through it"},
	state.CapabilityMACsecOffload: {what: "macsec.offload", since: [2]int{1, 46}},
	// A blackhole route goes on its VRF's profile, which has no address: ipv4.method manual
	// with routes alone (earlier releases want an address).
	state.CapabilityRouteWithoutAddress: {what: "profiles with routes and no address", since: [2]int{1, 46}},
	state.CapabilityLibreswan: {what: "NetworkManager-libreswan",
		plugin:  func(c Capabilities) bool { return c.Libreswan },
		lacking: "no plugin file for " + libreswanService + " in " + vpnPluginDir,
		why:     "IPsec is applied through it"},
}

// Capabilities reads what the node's NetworkManager can apply that not every version can.
func (c *Client) Capabilities() (Capabilities, error) {
	var caps Capabilities
	if err := c.prop(nmdbus.Path, nmdbus.Iface, "Version", &caps.Version); err != nil {
		return caps, fmt.Errorf("reading NetworkManager's version: %w", err)
	}
	var plugins []uint32
	if err := c.prop(nmdbus.Path, nmdbus.Iface, "Capabilities", &plugins); err != nil {
		return caps, fmt.Errorf("reading NetworkManager's capabilities: %w", err)
	}
	caps.OVS = slices.Contains(plugins, capabilityOVS)
	_ = c.prop(nmdbus.Path, nmdbus.Iface, "VersionInfo", &caps.versionInfo) // none before 1.42: nothing announced
	caps.release = parseRelease(caps.Version)
	var err error
	if caps.Libreswan, err = hasVPNPlugin(c.vpnPluginDir(), libreswanService); err != nil {
		return caps, err
	}
	if caps.WPASupplicant, err = c.onBus(wpaSupplicantService); err != nil {
		return caps, err
	}
	return caps, nil
}

// onBus says whether name is on the system bus, or is a service the bus can start.
func (c *Client) onBus(name string) (bool, error) {
	for _, method := range []string{"org.freedesktop.DBus.ListNames", "org.freedesktop.DBus.ListActivatableNames"} {
		var names []string
		if err := c.conn.BusObject().Call(method, 0).Store(&names); err != nil {
			return false, fmt.Errorf("asking the system bus for %s: %w", name, err)
		}
		if slices.Contains(names, name) {
			return true, nil
		}
	}
	return false, nil
}

// hasVPNPlugin says whether dir, NetworkManager's VPN plugin directory, has a plugin file
// for service: a key file whose [VPN Connection] group says service=SERVICE. No dir is no
// plugin.
func hasVPNPlugin(dir, service string) (bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.name"))
	if err != nil {
		return false, err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return false, fmt.Errorf("reading NetworkManager's VPN plugin file: %w", err)
		}
		group := ""
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "[") {
				group = line
			}
			if k, v, ok := strings.Cut(line, "="); ok && group == "[VPN Connection]" && strings.TrimSpace(k) == "service" && strings.TrimSpace(v) == service {
				return true, nil
			}
		}
	}
	return false, nil
}

// parseRelease reads "1.42.4" or "1.46.0-26.el9_4"; zero when it is no version.
func parseRelease(v string) [3]int {
	var r [3]int
	num, _, _ := strings.Cut(v, "-")
	parts := strings.Split(num, ".")
	if len(parts) < 2 {
		return [3]int{}
	}
	for i := 0; i < 3 && i < len(parts); i++ {
		n, err := strconv.Atoi(parts[i])
		if err != nil {
			return [3]int{}
		}
		r[i] = n
	}
	return r
}

func (c Capabilities) meets(r requirement) bool {
	if r.plugin != nil {
		return r.plugin(c)
	}
	return c.release[0] > r.since[0] || c.release[0] == r.since[0] && c.release[1] >= r.since[1] ||
		r.announced != 0 && c.announces(r.announced)
}

// Lacks refuses each field that needs a capability this NetworkManager has not, naming it
// and the releases that have it.
func (c Capabilities) Lacks(needs []state.Need) field.Errors {
	var errs field.Errors
	for _, n := range needs {
		r, ok := requirements[n.Capability]
		if !ok {
			errs = append(errs, &field.Error{Path: n.Path, Reason: fmt.Sprintf("nmoverlay cannot apply %s through NetworkManager", n.Capability)})
			continue
		}
		switch {
		case !c.meets(r) && r.plugin != nil:
			errs = append(errs, &field.Error{Path: n.Path, Reason: fmt.Sprintf("this node has no %s (%s); %s", r.what, r.lacking, r.why)})
		case !c.meets(r):
			errs = append(errs, &field.Error{Path: n.Path, Reason: fmt.Sprintf("NetworkManager %s on this node has no %s (%s)",
				c.Version, r.what, Supports(n.Capability))})
		}
	}
	return errs
}

// Names are the capabilities this NetworkManager has, as the NodeNetworkState lists them:
// the state's it meets, and its plugins.
func (c Capabilities) Names() []string {
	var out []string
	for _, cp := range state.Capabilities {
		if r, ok := requirements[cp]; ok && c.meets(r) {
			out = append(out, string(cp))
		}
	}
	if c.OVS {
		out = append(out, "ovs")
	}
	return out
}

// Supports says which NetworkManager releases apply what needs capability cp.
func Supports(cp state.Capability) string {
	r, ok := requirements[cp]
	switch {
	case !ok:
		return "no NetworkManager release"
	case r.plugin != nil:
		return fmt.Sprintf("nodes with %s apply it", r.what)
	}
	if r.announced != 0 {
		return fmt.Sprintf("NetworkManager %d.%d and later apply it, and builds that announce it", r.since[0], r.since[1])
	}
	return fmt.Sprintf("NetworkManager %d.%d and later apply it", r.since[0], r.since[1])
}
