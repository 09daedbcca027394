package networkmanager

import (
	"maps"
	"reflect"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager/nmdbus"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/published"
)

// TestIPsecProfile maps nmstate's IPsec examples to NetworkManager's settings, as nmstate
// writes them, and reads the profile back into the section, the psk aside.
func TestIPsecProfile(t *testing.T) {
	for _, tc := range []struct {
		example string
		data    map[string]string
		secrets map[string]string
	}{
		{"ipsec_psk.yaml",
			map[string]string{"right": "192.0.2.252", "rightid": "srv-id.example.org", "left": "192.0.2.251", "leftid": "cli-id.example.org", "ikev2": "insist"},
			map[string]string{"pskvalue": "psk_password"}},
		{"ipsec_x509.yaml",
			map[string]string{"right": "192.0.2.252", "rightid": "hostb.example.org", "left": "192.0.2.251", "leftid": "%fromcert", "leftcert": "hosta.example.org", "ikev2": "insist"},
			nil},
		{"" /* every option */, map[string]string{"right": "r", "rightid": "ri", "rightrsasigkey": "rk", "rightcert": "rc",
			"left": "l", "leftid": "li", "leftrsasigkey": "lk", "leftcert": "lc", "ikev2": "never", "ikelifetime": "8h", "salifetime": "1h",
			"ike": "aes256-sha1", "esp": "aes128-sha1", "dpddelay": "30", "dpdtimeout": "120", "dpdaction": "restart", "ipsec-interface": "9",
			"authby": "secret", "rightsubnet": "10.0.0.0/8", "leftsubnet": "10.1.0.0/16", "leftmodecfgclient": "no", "type": "transport",
			"hostaddrfamily": "ipv6", "clientaddrfamily": "ipv4", "require-id-on-certificate": "yes"}, nil},
	} {
		doc := `interfaces: [{name: c, type: ipsec, libreswan: {right: r, rightid: ri, rightrsasigkey: rk, rightcert: rc, left: l, leftid: li,
  leftrsasigkey: lk, leftcert: lc, ikev2: never, ikelifetime: 8h, salifetime: 1h, ike: aes256-sha1, esp: aes128-sha1, dpddelay: '0x1e',
  dpdtimeout: 120, dpdaction: restart, ipsec-interface: 9, authby: secret, rightsubnet: 10.0.0.0/8, leftsubnet: 10.1.0.0/16,
  leftmodecfgclient: false, type: transport, hostaddrfamily: ipv6, clientaddrfamily: ipv4, require-id-on-certificate: true}}]`
		if tc.example != "" {
			var err error
			if doc, err = published.Nmstate(tc.example); err != nil {
				t.Fatal(err)
			}
		}
		s, err := state.Parse([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", tc.example, err)
		}
		it := s.Interfaces[0]
		p, err := buildProfile(it, state.IPsec, nil, "", profileExtras{}, "u")
		if err != nil {
			t.Fatalf("%s: %v", tc.example, err)
		}
		if p.str("connection", "type") != "vpn" || p.str("connection", "id") != it.Name || p.str("vpn", "service-type") != "org.freedesktop.NetworkManager.libreswan" {
			t.Errorf("%s: connection %v, vpn %v", tc.example, p["connection"], p["vpn"])
		}
		if _, ok := p["connection"]["interface-name"]; ok {
			t.Errorf("%s: a VPN profile with an interface-name: %v", tc.example, p["connection"]["interface-name"])
		}
		for _, sec := range []string{"802-3-ethernet", "ethtool"} {
			if _, ok := p[sec]; ok {
				t.Errorf("%s: a VPN profile with %s", tc.example, sec)
			}
		}
		if data, _ := p["vpn"]["data"].Value().(map[string]string); !maps.Equal(data, tc.data) {
			t.Errorf("%s: vpn.data\n got %v\nwant %v", tc.example, data, tc.data)
		}
		secrets, _ := p["vpn"]["secrets"].Value().(map[string]string)
		if !maps.Equal(secrets, tc.secrets) {
			t.Errorf("%s: vpn.secrets %v, want %v", tc.example, secrets, tc.secrets)
		}
		if tc.example != "" && p.str("ipv4", "method") != "auto" {
			t.Errorf("%s: ipv4.method %q, want auto (dhcp: true)", tc.example, p.str("ipv4", "method"))
		}

		// Read back: NetworkManager hands out the profile without its secrets.
		applied := settings{}
		for sec, kv := range p {
			applied[sec] = maps.Clone(kv)
		}
		delete(applied["vpn"], "secrets")
		if !kinds[state.IPsec].claims(applied) {
			t.Errorf("%s: the kind does not claim its own profile", tc.example)
		}
		got := state.Interface{Name: it.Name, Type: state.IPsec, State: state.Up, IPv4: it.IPv4}
		describe(&got, applied, nil, nil, nil)
		want := *state.SectionOf[*state.LibreswanConfig](it)
		want.PSK = ""
		if g := state.SectionOf[*state.LibreswanConfig](got); g == nil || !reflect.DeepEqual(*g, want) {
			t.Errorf("%s: read back\n got %v\nwant %v", tc.example, g, &want)
		}
		if diffs := state.Verify(state.State{Interfaces: []state.Interface{it}}, state.State{Interfaces: []state.Interface{got}}); len(diffs) > 0 {
			t.Errorf("%s: verify: %v", tc.example, diffs)
		}
	}
}

// TestIPsecNotClaimedByDevices: no device is read back as an IPsec interface, and a VPN
// profile of another plugin is not one.
func TestIPsecNotClaimedByDevices(t *testing.T) {
	if typ := typeOfDevice(0); typ == state.IPsec {
		t.Error("a device of unknown type reads back as ipsec")
	}
	other := settings{"connection": {"type": dbus.MakeVariant("vpn")}, "vpn": {"service-type": dbus.MakeVariant("org.freedesktop.NetworkManager.openvpn")}}
	if kinds[state.IPsec].claims(other) {
		t.Error("an OpenVPN profile is claimed as IPsec")
	}
}

// TestVPNDevices: an active VPN connection of libreswan's profile is read as the IPsec
// interface its profile names, up once activated; another VPN plugin's is not part of the
// model; and the profile's key is its id, which the engine finds it by.
func TestVPNDevices(t *testing.T) {
	libreswan := func(id string) settings {
		return settings{"connection": {"type": dbus.MakeVariant("vpn"), "id": dbus.MakeVariant(id)},
			"vpn": {"service-type": dbus.MakeVariant(libreswanService)}}
	}
	profiles := map[dbus.ObjectPath]settings{
		"/s/1": libreswan("ipsec0"), "/s/2": libreswan("ipsec1"),
		"/s/3": {"connection": {"type": dbus.MakeVariant("vpn"), "id": dbus.MakeVariant("office")}, "vpn": {"service-type": dbus.MakeVariant("org.freedesktop.NetworkManager.openvpn")}},
	}
	active := func(profile dbus.ObjectPath, st uint32, vpn bool) map[string]map[string]dbus.Variant {
		return map[string]map[string]dbus.Variant{nmdbus.ActiveIface: {"Vpn": dbus.MakeVariant(vpn), "Connection": dbus.MakeVariant(profile), "State": dbus.MakeVariant(st)}}
	}
	objs := objects{
		"/a/1": active("/s/1", activeStateActivated, true),
		"/a/2": active("/s/2", 1, true), // activating
		"/a/3": active("/s/3", activeStateActivated, true),
		"/a/4": active("/s/4", activeStateActivated, false), // a device's
	}
	got := sortDevices(objs.vpnDevices(func(p dbus.ObjectPath) settings { return profiles[p] }))
	want := []device{
		{name: "ipsec0", key: "ipsec0", typ: state.IPsec, path: "/a/1", active: "/a/1", profile: "/s/1", state: deviceStateActivated, vpn: true},
		{name: "ipsec1", key: "ipsec1", typ: state.IPsec, path: "/a/2", active: "/a/2", profile: "/s/2", vpn: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("vpnDevices:\n got %+v\nwant %+v", got, want)
	}
	if k := libreswan("ipsec0").key(); k != "ipsec0" {
		t.Errorf("key %q, want the profile's id", k)
	}
}
