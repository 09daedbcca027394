package state

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strings"
)

// EthernetConfig is an interface's ethernet section; of it nmoverlay applies sr-iov.
type EthernetConfig struct {
	_ struct{} `key:"speed" refused:"not applied yet"`
	_ struct{} `key:"duplex" refused:"not applied yet"`
	_ struct{} `key:"auto-negotiation" refused:"not applied yet"`

	SRIOV *SRIOVConfig `json:"sr-iov,omitempty"`
}

// SRIOVConfig is a physical function's virtual functions: how many, and the settings of
// those listed (the others keep theirs).
type SRIOVConfig struct {
	TotalVFs         *int  `json:"total-vfs,omitempty" nmstate:"range=0..65535"`
	DriversAutoprobe *bool `json:"drivers-autoprobe,omitempty"`
	VFs              []VF  `json:"vfs,omitempty"`
}

// VF is one virtual function's settings, by its index on the physical function.
type VF struct {
	// The VF's interface name, which nmstate reports and ignores when applying.
	_ struct{} `key:"iface-name" nmstate:"ignored"`

	ID         int     `json:"id" nmstate:"required,range=0..65534"`
	MACAddress *string `json:"mac-address,omitempty"`
	SpoofCheck *bool   `json:"spoof-check,omitempty"`
	Trust      *bool   `json:"trust,omitempty"`
	MinTxRate  *int    `json:"min-tx-rate,omitempty" nmstate:"range=0..u32"`
	MaxTxRate  *int    `json:"max-tx-rate,omitempty" nmstate:"range=0..u32"`
	VLANID     *int    `json:"vlan-id,omitempty" nmstate:"range=0..4095"`
	QoS        *int    `json:"qos,omitempty" nmstate:"range=0..7"`
	// VLANProto is 802.1q (the default) or 802.1ad.
	VLANProto string `json:"vlan-proto,omitempty"`
}

// VLAN protocols of a VF, as nmstate spells them.
const (
	VLANProto8021Q  = "802.1q"
	VLANProto8021AD = "802.1ad"
)

// MaxVFs bounds total-vfs: the PCI SR-IOV capability counts VFs in 16 bits.
const MaxVFs = 65535

// checkDecoded lists each VF once.
func (c *SRIOVConfig) checkDecoded(d *decoder, path string, _ map[string]any) {
	seen := map[int]bool{}
	for i, vf := range c.VFs {
		if seen[vf.ID] {
			d.fail(join(index(join(path, "vfs"), i), "id"), "VF %d is listed twice", vf.ID)
		}
		seen[vf.ID] = true
	}
}

// checkDecoded takes the VLAN protocol in either case, as nmstate does.
func (vf *VF) checkDecoded(d *decoder, path string, m map[string]any) {
	if _, ok := m["vlan-proto"].(string); !ok {
		return
	}
	vf.VLANProto = strings.ToLower(vf.VLANProto)
	if vf.VLANProto != VLANProto8021Q && vf.VLANProto != VLANProto8021AD && vf.VLANProto != "" {
		d.fail(join(path, "vlan-proto"), "%q is not one of 802.1q, 802.1ad", vf.VLANProto)
	}
}

// validateSRIOV checks what needs the whole section: the VFs listed exist, their MAC
// addresses are Ethernet ones, rates are ordered, QoS and the protocol belong to a VLAN.
func validateSRIOV(path string, c *SRIOVConfig, fail func(path, format string, args ...any)) {
	for i, vf := range c.VFs {
		p := index(join(path, "vfs"), i)
		if c.TotalVFs != nil && vf.ID >= *c.TotalVFs {
			fail(join(p, "id"), "VF %d does not exist with total-vfs %d (VFs are numbered from 0)", vf.ID, *c.TotalVFs)
		}
		if vf.MACAddress != nil {
			if hw, err := net.ParseMAC(*vf.MACAddress); err != nil || len(hw) != 6 {
				fail(join(p, "mac-address"), "%q is not an Ethernet MAC address (xx:xx:xx:xx:xx:xx)", *vf.MACAddress)
			}
		}
		if vf.MinTxRate != nil && vf.MaxTxRate != nil && *vf.MaxTxRate != 0 && *vf.MinTxRate > *vf.MaxTxRate {
			fail(join(p, "min-tx-rate"), "%d is above max-tx-rate %d", *vf.MinTxRate, *vf.MaxTxRate)
		}
		if (vf.QoS != nil && *vf.QoS != 0 || vf.VLANProto == VLANProto8021AD) && (vf.VLANID == nil || *vf.VLANID == 0) {
			fail(p, "qos and vlan-proto apply to a VLAN: give vlan-id")
		}
	}
}

// verifySRIOV compares the VF count and each listed VF's stated settings with what the
// kernel runs (got: nil when the device reports no SR-IOV).
func verifySRIOV(add func(string, ...any), path string, want, got *SRIOVConfig) {
	if got == nil {
		if want.TotalVFs != nil && *want.TotalVFs > 0 || len(want.VFs) > 0 {
			add("%s: the device has no SR-IOV (not a physical function)", path)
		}
		return
	}
	verifyField(add, path+".total-vfs", want.TotalVFs, got.TotalVFs)
	for _, w := range want.VFs {
		p := fmt.Sprintf("%s.vfs[id=%d]", path, w.ID)
		i := slices.IndexFunc(got.VFs, func(v VF) bool { return v.ID == w.ID })
		if i < 0 {
			add("%s: no such VF", p)
			continue
		}
		g := got.VFs[i]
		if w.MACAddress != nil && (g.MACAddress == nil || !sameMAC(*g.MACAddress, *w.MACAddress)) {
			add("%s.mac-address: %s, want %s", p, strOrNone(g.MACAddress), *w.MACAddress)
		}
		verifyField(add, p+".spoof-check", w.SpoofCheck, g.SpoofCheck)
		verifyField(add, p+".trust", w.Trust, g.Trust)
		verifyField(add, p+".min-tx-rate", w.MinTxRate, g.MinTxRate)
		verifyField(add, p+".max-tx-rate", w.MaxTxRate, g.MaxTxRate)
		verifyField(add, p+".vlan-id", w.VLANID, g.VLANID)
		if w.VLANID != nil && *w.VLANID != 0 {
			verifyField(add, p+".qos", w.QoS, g.QoS)
			if wp := cmp.Or(w.VLANProto, VLANProto8021Q); g.VLANProto != wp {
				add("%s.vlan-proto: %s, want %s", p, cmp.Or(g.VLANProto, "none"), wp)
			}
		}
	}
}
