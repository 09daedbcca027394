package state

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
)

// IPsec is an IPsec connection made by libreswan: no kernel interface of its own (nmstate
// calls it a user-space interface), and to NetworkManager a VPN profile of its libreswan
// plugin. An interface of this type given without a state is up, nmstate's default for
// every interface.
const IPsec InterfaceType = "ipsec"

func init() { registerSection(func() Section { return &LibreswanConfig{} }) }

// LibreswanConfig is an IPsec interface's libreswan section: libreswan's own connection
// options (ipsec.conf's names), as nmstate takes them at the commit nmoverlay follows
// (614c66dc). nmstate checks only their types and three enums; libreswan checks the rest
// when the connection is brought up. A string left empty is one not given.
type LibreswanConfig struct {
	// Right is the remote end: an address or a host name.
	Right          string `json:"right" nmstate:"required"`
	RightID        string `json:"rightid,omitempty"`
	RightRSASigKey string `json:"rightrsasigkey,omitempty"`
	RightCert      string `json:"rightcert,omitempty"`
	Left           string `json:"left,omitempty"`
	LeftID         string `json:"leftid,omitempty"`
	LeftRSASigKey  string `json:"leftrsasigkey,omitempty"`
	LeftCert       string `json:"leftcert,omitempty"`
	// IKEv2 is libreswan's ikev2 (insist, never, ...), which nmstate passes on unchecked.
	IKEv2 string `json:"ikev2,omitempty"`
	// PSK is the pre-shared key; without one, the ends authenticate by X.509 or raw RSA
	// keys. It is a Secret: printed, it is hidden.
	PSK         Secret `json:"psk,omitempty"`
	IKELifetime string `json:"ikelifetime,omitempty"`
	SALifetime  string `json:"salifetime,omitempty"`
	IKE         string `json:"ike,omitempty"`
	ESP         string `json:"esp,omitempty"`
	// DPDDelay and DPDTimeout are dead peer detection's seconds, numbers or strings
	// (decimal or 0x hex) as nmstate takes them.
	DPDDelay   *int   `json:"dpddelay,omitempty" nmstate:"via=u64"`
	DPDTimeout *int   `json:"dpdtimeout,omitempty" nmstate:"via=u64"`
	DPDAction  string `json:"dpdaction,omitempty"`
	// IPsecInterface is libreswan's ipsec-interface: yes, no, or the number of the XFRM
	// interface (ipsec<N>) the connection routes through.
	IPsecInterface    IPsecInterfaceID `json:"ipsec-interface,omitempty"`
	AuthBy            string           `json:"authby,omitempty"`
	RightSubnet       string           `json:"rightsubnet,omitempty"`
	LeftSubnet        string           `json:"leftsubnet,omitempty"`
	LeftModeCfgClient *bool            `json:"leftmodecfgclient,omitempty"`
	// Kind is the connection's type: tunnel (libreswan's default) or transport.
	Kind             string `json:"type,omitempty" nmstate:"one-of=tunnel|transport"`
	HostAddrFamily   string `json:"hostaddrfamily,omitempty" nmstate:"one-of=ipv4|ipv6"`
	ClientAddrFamily string `json:"clientaddrfamily,omitempty" nmstate:"one-of=ipv4|ipv6"`
	// RequireIDOnCertificate: the peer's ID must be on its certificate.
	RequireIDOnCertificate *bool `json:"require-id-on-certificate,omitempty"`
}

func (*LibreswanConfig) Key() string            { return "libreswan" }
func (*LibreswanConfig) Types() []InterfaceType { return []InterfaceType{IPsec} }

// needs: NetworkManager applies IPsec through its libreswan VPN plugin, a package of its
// own that not every node has.
func (*LibreswanConfig) needs() Capability { return CapabilityLibreswan }

func (*LibreswanConfig) references(func(RefKind, string, *string)) {}

// HiddenSecret is what nmstate shows for a secret it hides (a psk it reports), and takes
// back in a desired state as "keep the secret the profile has".
const HiddenSecret = "<_password_hid_by_nmstate>"

// noLink are the fields of an interface an IPsec connection has no use for: it has no link
// of its own (nmstate never writes them into its VPN profile).
var noLink = []struct {
	key   string
	given func(Interface) bool
}{
	{"mtu", func(it Interface) bool { return it.MTU != nil }},
	{"mac-address", func(it Interface) bool { return it.MACAddress != nil }},
	{"copy-mac-from", func(it Interface) bool { return it.CopyMACFrom != nil }},
	{"accept-all-mac-addresses", func(it Interface) bool { return it.AcceptAllMACAddresses != nil }},
	{"ethtool", func(it Interface) bool { return it.Ethtool != nil }},
	{"ethernet", func(it Interface) bool { return it.Ethernet != nil }},
	{"lldp", func(it Interface) bool { return it.LLDP != nil }},
}

func (l *LibreswanConfig) validate(_ Interface, p string, fail failFunc) {
	if l.PSK == HiddenSecret {
		// nmstate keeps the profile's secret then; nmoverlay does not read secrets back.
		fail(join(p, "psk"), "nmstate's placeholder for a hidden secret (a state copied from a report): give the pre-shared key itself")
	}
}

// validateIPsecOwn refuses what an IPsec interface, at p, cannot have, section or not.
func validateIPsecOwn(p string, it Interface, fail failFunc) {
	for _, f := range noLink {
		if f.given(it) {
			fail(join(p, f.key), "an IPsec connection has no link of its own to set it on")
		}
	}
}

// withoutSecret is l without its psk: what a node reports back, and what is compared.
func (l *LibreswanConfig) withoutSecret() LibreswanConfig {
	c := *l
	c.PSK = ""
	return c
}

// verify compares all but the psk, which NetworkManager does not hand back without being
// asked for secrets, and nmoverlay never asks.
func (l *LibreswanConfig) verify(add addFunc, it Interface, got Section) {
	g, _ := got.(*LibreswanConfig)
	if g == nil {
		add("%s.libreswan: none, want %s", it.Key(), l)
		return
	}
	if a, b := l.withoutSecret(), g.withoutSecret(); !reflect.DeepEqual(a, b) {
		add("%s.libreswan: %s, want %s", it.Key(), g, l)
	}
}

// String is the section as JSON, the psk left out (said to be there when it is).
func (l *LibreswanConfig) String() string {
	if l == nil {
		return "none"
	}
	c := l.withoutSecret()
	b, _ := json.Marshal(c)
	if l.PSK != "" {
		return string(b) + " with a pre-shared key"
	}
	return string(b)
}

// A Secret is a string that is never printed: fmt shows it as hidden, whatever the verb.
// JSON carries it (a desired state is merged through JSON); what is shown of a state as
// JSON (a merge conflict) goes through hideSecrets first.
type Secret string

// secretShown is what a Secret prints as.
const secretShown = "<hidden>"

func (s Secret) String() string   { return secretShown }
func (s Secret) GoString() string { return secretShown }

// Format hides the secret for every verb (%d of a string would otherwise print it).
func (s Secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, secretShown) }

// decodeValue reads a string, and never says what else it was given: a key written as a
// YAML number is still a key.
func (s *Secret) decodeValue(d *decoder, path string, v any) bool {
	str, ok := v.(string)
	if !ok {
		kind := "not a string"
		switch v.(type) {
		case json.Number:
			kind = "a number"
		case bool:
			kind = "a boolean"
		}
		d.fail(path, "must be a string, got %s (quote it)", kind)
		return false
	}
	*s = Secret(str)
	return true
}

// secretHolder is a section that holds a secret (a pre-shared key).
type secretHolder interface {
	// hidden is a copy of the section with each secret it holds shown as secretShown.
	hidden() Section
}

// hideSecrets is it with each secret it holds replaced by secretShown, for showing.
func hideSecrets(it Interface) Interface {
	if h, ok := it.Section.(secretHolder); ok {
		it.Section = h.hidden()
	}
	return it
}

func (l *LibreswanConfig) hidden() Section {
	c := *l
	if c.PSK != "" {
		c.PSK = secretShown
	}
	return &c
}

// IPsecInterfaceID is libreswan's ipsec-interface: yes, no, or an interface number. nmstate
// takes a number (0 to 2^64-1) or a string of yes, no or a number (0 to 2^32-1).
type IPsecInterfaceID string

func (id *IPsecInterfaceID) decodeValue(d *decoder, path string, v any) bool {
	const why = "must be yes, no or an unsigned integer (the XFRM interface's number)"
	switch t := v.(type) {
	case json.Number:
		if _, err := strconv.ParseUint(t.String(), 10, 64); err != nil {
			d.fail(path, "%s is out of range: %s", t, why)
			return false
		}
		*id = IPsecInterfaceID(t.String())
		return true
	case string:
		if _, err := strconv.ParseUint(t, 10, 32); t != "yes" && t != "no" && err != nil {
			d.fail(path, "%q %s", t, why)
			return false
		}
		*id = IPsecInterfaceID(t)
		return true
	}
	d.fail(path, "%s, got %s", why, describe(v))
	return false
}

// u64 reads an unsigned integer nmstate also takes as a string, decimal or 0x hex
// (libreswan's dpddelay); nmstate's u64, bounded here by Go's int.
func viaU64(d *decoder, path string, v any, _ *fieldSpec) *int {
	if str, ok := v.(string); ok {
		base, digits := 10, str
		if len(str) > 2 && str[:2] == "0x" {
			base, digits = 16, str[2:]
		}
		n, err := strconv.ParseUint(digits, base, 63)
		if err != nil {
			d.fail(path, "%q is not an unsigned integer (decimal or 0x hex)", str)
			return nil
		}
		i := int(n)
		return &i
	}
	return d.integer(path, v, 0, math.MaxInt64)
}

func init() { viaFormats["u64"] = viaU64 }
