package state

import (
	"fmt"
	"regexp"
)

// MACsec is an IEEE 802.1AE interface on a base interface: its frames authenticated, and
// encrypted, with keys agreed by MACsec Key Agreement from a pre-shared key.
const MACsec InterfaceType = "macsec"

func init() { registerSection(func() Section { return &MACsecConfig{} }) }

// MACsecConfig is a MACsec interface's macsec section.
type MACsecConfig struct {
	BaseIface string `json:"base-iface" nmstate:"required"`
	Encrypt   bool   `json:"encrypt"`
	// MKACAK and MKACKN are MACsec Key Agreement's pre-shared Connectivity Association Key
	// and its name; both or neither.
	MKACAK Secret `json:"mka-cak,omitempty"`
	MKACKN string `json:"mka-ckn,omitempty"`
	// Port is the port of the Secure Channel Identifier; 0 leaves NetworkManager's, 1.
	Port       int    `json:"port" nmstate:"range=0..65534"`
	Validation string `json:"validation,omitempty" nmstate:"one-of=disabled|check|strict"`
	SendSCI    bool   `json:"send-sci"`
	// Offload is where the frames are protected: off (the kernel), phy or mac.
	Offload string `json:"offload,omitempty" nmstate:"one-of=off|phy|mac,needs=macsec-offload"`
}

func (*MACsecConfig) Key() string            { return "macsec" }
func (*MACsecConfig) Types() []InterfaceType { return []InterfaceType{MACsec} }

// needs: NetworkManager runs MACsec Key Agreement through wpa_supplicant.
func (*MACsecConfig) needs() Capability { return CapabilityMACsec }

func (m *MACsecConfig) references(ref func(RefKind, string, *string)) {
	ref(RefBase, "base-iface", &m.BaseIface)
}

var (
	macsecCAK = regexp.MustCompile(`^[0-9a-fA-F]{32}$`)
	macsecCKN = regexp.MustCompile(`^([0-9a-fA-F]{2}){1,32}$`)
)

func (m *MACsecConfig) validate(it Interface, p string, fail failFunc) {
	checkOther(fail, join(p, "base-iface"), m.BaseIface, it.Name, "a MACsec interface cannot sit on itself")
	switch {
	case (m.MKACAK == "") != (m.MKACKN == ""):
		fail(p, "give mka-cak and mka-ckn together, or neither")
	case m.MKACAK == "":
		// NetworkManager's other mode takes its keys from 802.1X, which nmoverlay does not apply.
		fail(join(p, "mka-cak"), "required: NetworkManager agrees MACsec keys from a pre-shared key (mka-cak, mka-ckn) or from 802.1X, which is not supported")
	case !macsecCAK.MatchString(string(m.MKACAK)):
		fail(join(p, "mka-cak"), "not a key of 32 hexadecimal characters")
	case !macsecCKN.MatchString(m.MKACKN):
		fail(join(p, "mka-ckn"), "%q is not a name of 2 to 64 hexadecimal characters, an even number of them", m.MKACKN)
	}
}

// port is the port NetworkManager gives the channel: 1 when nmstate's 0 leaves it.
func (m *MACsecConfig) port() int { return max(m.Port, 1) }

func (m *MACsecConfig) validation() string {
	if m.Validation == "" {
		return "disabled" // nmstate's default
	}
	return m.Validation
}

func (m *MACsecConfig) hidden() Section {
	c := *m
	if c.MKACAK != "" {
		c.MKACAK = secretShown
	}
	return &c
}

// verify compares all but the key, which NetworkManager does not hand back without being
// asked for secrets, and nmoverlay never asks.
func (m *MACsecConfig) verify(add addFunc, it Interface, got Section) {
	g, _ := got.(*MACsecConfig)
	if g == nil || g.BaseIface != m.BaseIface || g.Encrypt != m.Encrypt || g.MKACKN != m.MKACKN || g.port() != m.port() ||
		g.validation() != m.validation() || g.SendSCI != m.SendSCI || m.Offload != "" && g.Offload != m.Offload {
		add("%s.macsec: %s, want %s", it.Key(), g, m)
	}
}

func (m *MACsecConfig) String() string {
	if m == nil {
		return "none"
	}
	return fmt.Sprintf("on %s, encrypt %t, ckn %s, port %d, validation %s, send-sci %t, offload %s",
		orNone(m.BaseIface), m.Encrypt, orNone(m.MKACKN), m.port(), m.validation(), m.SendSCI, orNone(m.Offload))
}
