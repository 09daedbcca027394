package networkmanager

import (
	"strconv"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// An IPsec interface is a VPN profile of NetworkManager-libreswan, as nmstate writes it:
// connection.type vpn with no interface-name (the profile is found by its id, the
// interface's name), vpn.service-type the plugin's, vpn.data libreswan's options under the
// keys nmstate's schema gives them (the plugin reads the same names), and vpn.secrets the
// psk as pskvalue. nmstate sets no pskvalue-flags, so the psk is the profile's own secret
// (flags 0: NetworkManager keeps it in the profile). ipv4 and ipv6 are the interface's, as
// for any other kind.
//
// The profile has no device: the engine activates it on none (NetworkManager runs it over
// the device of its default route) and waits for its VPN connection (vpn.go).
func init() {
	register(&kind{typ: state.IPsec, connType: "vpn", deviceless: true, noMTU: true,
		write: func(s settings, it state.Interface, _ profileExtras) {
			delete(s["connection"], "interface-name")
			l := state.SectionOf[*state.LibreswanConfig](it)
			if l == nil {
				return
			}
			s.set("vpn", "service-type", libreswanService)
			s.set("vpn", "data", libreswanData(l))
			if l.PSK != "" {
				s.set("vpn", "secrets", map[string]string{"pskvalue": string(l.PSK)})
			}
		},
		read: func(it *state.Interface, r readBack) {
			if r.applied.str("vpn", "service-type") != libreswanService {
				return
			}
			data, _ := r.applied["vpn"]["data"].Value().(map[string]string)
			it.Section = libreswanFromData(data)
		},
		claims: func(a settings) bool {
			return a.str("connection", "type") == "vpn" && a.str("vpn", "service-type") == libreswanService
		},
	})
}

// libreswanStrings are the section's string options, each with its vpn.data key.
func libreswanStrings(l *state.LibreswanConfig) []struct {
	key string
	v   *string
} {
	return []struct {
		key string
		v   *string
	}{
		{"right", &l.Right}, {"rightid", &l.RightID}, {"rightrsasigkey", &l.RightRSASigKey}, {"rightcert", &l.RightCert},
		{"left", &l.Left}, {"leftid", &l.LeftID}, {"leftrsasigkey", &l.LeftRSASigKey}, {"leftcert", &l.LeftCert},
		{"ikev2", &l.IKEv2}, {"ikelifetime", &l.IKELifetime}, {"salifetime", &l.SALifetime}, {"ike", &l.IKE}, {"esp", &l.ESP},
		{"dpdaction", &l.DPDAction}, {"authby", &l.AuthBy}, {"rightsubnet", &l.RightSubnet}, {"leftsubnet", &l.LeftSubnet},
		{"type", &l.Kind}, {"hostaddrfamily", &l.HostAddrFamily}, {"clientaddrfamily", &l.ClientAddrFamily},
	}
}

// libreswanNumbers and libreswanFlags are its numbers (decimal in vpn.data) and its
// booleans (yes or no).
func libreswanNumbers(l *state.LibreswanConfig) map[string]**int {
	return map[string]**int{"dpddelay": &l.DPDDelay, "dpdtimeout": &l.DPDTimeout}
}

func libreswanFlags(l *state.LibreswanConfig) map[string]**bool {
	return map[string]**bool{"leftmodecfgclient": &l.LeftModeCfgClient, "require-id-on-certificate": &l.RequireIDOnCertificate}
}

// libreswanData is vpn.data for l: only what it gives.
func libreswanData(l *state.LibreswanConfig) map[string]string {
	data := map[string]string{}
	for _, f := range libreswanStrings(l) {
		if *f.v != "" {
			data[f.key] = *f.v
		}
	}
	for k, n := range libreswanNumbers(l) {
		if *n != nil {
			data[k] = strconv.Itoa(**n)
		}
	}
	for k, b := range libreswanFlags(l) {
		if *b != nil {
			data[k] = map[bool]string{true: "yes", false: "no"}[**b]
		}
	}
	if l.IPsecInterface != "" {
		data["ipsec-interface"] = string(l.IPsecInterface)
	}
	return data
}

// libreswanFromData reads vpn.data back; secrets are not read back (Show asks
// NetworkManager for none), so the psk is left out. A value nmstate would not take (a
// number that is not one) is left out too, as nmstate leaves it.
func libreswanFromData(data map[string]string) *state.LibreswanConfig {
	l := &state.LibreswanConfig{}
	for _, f := range libreswanStrings(l) {
		*f.v = data[f.key]
	}
	for k, n := range libreswanNumbers(l) {
		if v, err := strconv.Atoi(data[k]); err == nil && v >= 0 {
			*n = &v
		}
	}
	for k, b := range libreswanFlags(l) {
		if v, ok := data[k]; ok {
			yes := v == "yes"
			*b = &yes
		}
	}
	l.IPsecInterface = state.IPsecInterfaceID(data["ipsec-interface"])
	return l
}
