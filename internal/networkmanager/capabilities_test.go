package networkmanager

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// TestEveryCapabilityHasARequirement: a field the state marks as needing a capability
// can be checked against a node's NetworkManager.
func TestEveryCapabilityHasARequirement(t *testing.T) {
	for _, cp := range state.Capabilities {
		if _, ok := requirements[cp]; !ok {
			t.Errorf("capability %s: no requirement says which NetworkManager has it", cp)
		}
	}
}

func TestCapabilitiesLacks(t *testing.T) {
	needs := []state.Need{{Path: "interfaces[0].link-aggregation.ports-config[1].priority", Capability: state.CapabilityBondPortPriority}}
	for _, tc := range []struct {
		version string
		want    string // "" when nothing lacks
		names   []string
	}{
		{"1.42.4", "interfaces[0].link-aggregation.ports-config[1].priority: NetworkManager 1.42.4 on this node has no bond-port.prio " +
			"(NetworkManager 1.44 and later apply it)", nil},
		{"1.44.0", "", []string{"bond-port-priority"}},
		{"1.46.0-26.el9_4", "", []string{"bond-port-priority", "hsr", "macsec-offload", "route-without-address"}},
		{"1.52.1", "", []string{"bond-port-priority", "ethtool-fec", "hsr", "ipvlan", "macsec-offload", "route-without-address"}},
		{"2.0.0", "", []string{"bond-port-priority", "ethtool-fec", "hsr", "ipv4-forwarding", "ipvlan", "macsec-offload", "route-without-address"}},
		{"1.8", "interfaces[0].link-aggregation.ports-config[1].priority: NetworkManager 1.8 on this node has no bond-port.prio " +
			"(NetworkManager 1.44 and later apply it)", nil},
		{"unknown", "interfaces[0].link-aggregation.ports-config[1].priority: NetworkManager unknown on this node has no bond-port.prio " +
			"(NetworkManager 1.44 and later apply it)", nil},
	} {
		c := Capabilities{Version: tc.version, release: parseRelease(tc.version)}
		got := ""
		if errs := c.Lacks(needs); errs != nil {
			got = errs.Error()
		}
		if got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.version, got, tc.want)
		}
		if names := c.Names(); !slices.Equal(names, tc.names) {
			t.Errorf("%s: names %v, want %v", tc.version, names, tc.names)
		}
	}
	if names := (Capabilities{OVS: true}).Names(); !slices.Equal(names, []string{"ovs"}) {
		t.Errorf("OVS plugin: names %v", names)
	}
}

// TestCapabilitiesIPv4Forwarding: ipv4.forwarding is 1.54's, or an earlier build's that
// announces it in VersionInfo (RHEL backports it); the refusal names the node's release.
func TestCapabilitiesIPv4Forwarding(t *testing.T) {
	needs := []state.Need{{Path: "interfaces[0].ipv4.forwarding", Capability: state.CapabilityIPv4Forwarding}}
	for _, tc := range []struct {
		caps Capabilities
		want string
	}{
		{Capabilities{Version: "1.52.1", release: parseRelease("1.52.1"), versionInfo: []uint32{0x013401, 0b01}},
			"interfaces[0].ipv4.forwarding: NetworkManager 1.52.1 on this node has no ipv4.forwarding (NetworkManager 1.54 and later apply it, and builds that announce it)"},
		{Capabilities{Version: "1.42.4", release: parseRelease("1.42.4")},
			"interfaces[0].ipv4.forwarding: NetworkManager 1.42.4 on this node has no ipv4.forwarding (NetworkManager 1.54 and later apply it, and builds that announce it)"},
		{Capabilities{Version: "1.52.0-3.el10", release: parseRelease("1.52.0-3.el10"), versionInfo: []uint32{0x013400, 0b11}}, ""},
		{Capabilities{Version: "1.54.0", release: parseRelease("1.54.0")}, ""},
	} {
		got := ""
		if errs := tc.caps.Lacks(needs); errs != nil {
			got = errs.Error()
		}
		if got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.caps.Version, got, tc.want)
		}
	}
}

// TestCapabilitiesLacksLibreswan: an IPsec interface is refused on a node without
// NetworkManager-libreswan, naming the field, the plugin and why; a node with it applies
// it.
func TestCapabilitiesLacksLibreswan(t *testing.T) {
	needs := []state.Need{{Path: "interfaces[0].type", Capability: state.CapabilityLibreswan}}
	for _, tc := range []struct {
		caps  Capabilities
		want  string
		names []string
	}{
		{Capabilities{Version: "1.52.1", release: parseRelease("1.52.1")},
			"interfaces[0].type: this node has no NetworkManager-libreswan (no plugin file for org.freedesktop.NetworkManager.libreswan " +
				"in /usr/lib/NetworkManager/VPN); IPsec is applied through it", []string{"bond-port-priority", "ethtool-fec", "hsr", "ipvlan", "macsec-offload", "route-without-address"}},
		{Capabilities{Version: "1.46.0-26.el9_4", release: parseRelease("1.46.0-26.el9_4"), Libreswan: true},
			"", []string{"bond-port-priority", "hsr", "libreswan", "macsec-offload", "route-without-address"}},
	} {
		got := ""
		if errs := tc.caps.Lacks(needs); errs != nil {
			got = errs.Error()
		}
		if got != tc.want {
			t.Errorf("%+v:\n got %q\nwant %q", tc.caps, got, tc.want)
		}
		if names := tc.caps.Names(); !slices.Equal(names, tc.names) {
			t.Errorf("%+v: names %v, want %v", tc.caps, names, tc.names)
		}
	}
	if s := Supports(state.CapabilityLibreswan); s != "nodes with NetworkManager-libreswan apply it" {
		t.Errorf("Supports: %q", s)
	}
}

// The libreswan plugin is found by its plugin file, as NetworkManager finds it: another
// plugin's, or a file saying the service under another group, is not it.
func TestHasVPNPlugin(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  bool
	}{
		{"none", nil, false},
		{"libreswan", map[string]string{"nm-libreswan-service.name": "[VPN Connection]\nname=libreswan\nservice=org.freedesktop.NetworkManager.libreswan\nprogram=/usr/libexec/nm-libreswan-service\n"}, true},
		{"another plugin", map[string]string{"nm-openvpn-service.name": "[VPN Connection]\nservice=org.freedesktop.NetworkManager.openvpn\n"}, false},
		{"the service under another group", map[string]string{"x.name": "[GNOME]\nservice=org.freedesktop.NetworkManager.libreswan\n"}, false},
		{"not a plugin file", map[string]string{"nm-libreswan-service.txt": "[VPN Connection]\nservice=org.freedesktop.NetworkManager.libreswan\n"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := hasVPNPlugin(dir, libreswanService)
			if err != nil || got != tc.want {
				t.Errorf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	if got, err := hasVPNPlugin(filepath.Join(t.TempDir(), "missing"), libreswanService); got || err != nil {
		t.Errorf("no directory: %v, %v; want no plugin and no error", got, err)
	}
}

// A MACsec interface is refused on a node without wpa_supplicant, saying why.
func TestCapabilitiesLacksWPASupplicant(t *testing.T) {
	needs := []state.Need{{Path: "interfaces[0].type", Capability: state.CapabilityMACsec}}
	without := Capabilities{Version: "1.42.4", release: parseRelease("1.42.4")}
	want := "interfaces[0].type: this node has no wpa_supplicant (fi.w1.wpa_supplicant1 is neither on the system bus nor one it can start); " +
		"NetworkManager agrees MACsec keys through it"
	if errs := without.Lacks(needs); errs == nil || errs.Error() != want {
		t.Errorf("without wpa_supplicant:\n got %v\nwant %s", errs, want)
	}
	with := without
	with.WPASupplicant = true
	if errs := with.Lacks(needs); errs != nil {
		t.Errorf("with wpa_supplicant: %v", errs)
	}
	if names := with.Names(); !slices.Contains(names, "macsec") {
		t.Errorf("names %v lack macsec", names)
	}
}
