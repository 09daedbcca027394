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
	SRIOV *SRIOVConfig `json:"sr-iov,omitempty"`
}

// SRIOVConfig is a physical function's virtual functions: how many, and the settings of
// those listed (the others keep theirs).
type SRIOVConfig struct {
	TotalVFs         *int  `json:"total-vfs,omitempty"`
	DriversAutoprobe *bool `json:"drivers-autoprobe,omitempty"`
	VFs              []VF  `json:"vfs,omitempty"`
}

// VF is one virtual function's settings, by its index on the physical function.
type VF struct {
	ID         int     `json:"id"`
	MACAddress *string `json:"mac-address,omitempty"`
	SpoofCheck *bool   `json:"spoof-check,omitempty"`
	Trust      *bool   `json:"trust,omitempty"`
	MinTxRate  *int    `json:"min-tx-rate,omitempty"`
	MaxTxRate  *int    `json:"max-tx-rate,omitempty"`
	VLANID     *int    `json:"vlan-id,omitempty"`
	QoS        *int    `json:"qos,omitempty"`
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

func (d *decoder) ethernet(path string, v any) *EthernetConfig {
	m, ok := d.object(path, v, []string{"sr-iov"}, map[string]string{
		"speed": "not applied yet", "duplex": "not applied yet", "auto-negotiation": "not applied yet"})
	if !ok {
		return nil
	}
	e := &EthernetConfig{}
	if v, ok := m["sr-iov"]; ok {
		e.SRIOV = d.sriov(join(path, "sr-iov"), v)
	}
	return e
}

func (d *decoder) sriov(path string, v any) *SRIOVConfig {
	m, ok := d.object(path, v, []string{"total-vfs", "drivers-autoprobe", "vfs"}, nil)
	if !ok {
		return nil
	}
	c := &SRIOVConfig{}
	if v, ok := m["total-vfs"]; ok {
		c.TotalVFs = d.integer(join(path, "total-vfs"), v, 0, MaxVFs)
	}
	if v, ok := m["drivers-autoprobe"]; ok {
		c.DriversAutoprobe = d.boolean(join(path, "drivers-autoprobe"), v)
	}
	if v, ok := m["vfs"]; ok {
		seen := map[int]bool{}
		for i, e := range d.list(join(path, "vfs"), v) {
			p := index(join(path, "vfs"), i)
			vm, ok := d.object(p, e, []string{"id", "mac-address", "spoof-check", "trust", "min-tx-rate", "max-tx-rate", "vlan-id", "qos", "vlan-proto"}, nil)
			if !ok {
				continue
			}
			vf := VF{ID: d.requiredInt(p, vm, "id", 0, MaxVFs-1)}
			if seen[vf.ID] {
				d.fail(join(p, "id"), "VF %d is listed twice", vf.ID)
			}
			seen[vf.ID] = true
			if v, ok := vm["mac-address"]; ok {
				s := d.str(join(p, "mac-address"), v)
				vf.MACAddress = &s
			}
			if v, ok := vm["spoof-check"]; ok {
				vf.SpoofCheck = d.boolean(join(p, "spoof-check"), v)
			}
			if v, ok := vm["trust"]; ok {
				vf.Trust = d.boolean(join(p, "trust"), v)
			}
			if v, ok := vm["min-tx-rate"]; ok {
				vf.MinTxRate = d.integer(join(p, "min-tx-rate"), v, 0, 1<<32-1)
			}
			if v, ok := vm["max-tx-rate"]; ok {
				vf.MaxTxRate = d.integer(join(p, "max-tx-rate"), v, 0, 1<<32-1)
			}
			if v, ok := vm["vlan-id"]; ok {
				vf.VLANID = d.integer(join(p, "vlan-id"), v, 0, 4095)
			}
			if v, ok := vm["qos"]; ok {
				vf.QoS = d.integer(join(p, "qos"), v, 0, 7)
			}
			if v, ok := vm["vlan-proto"]; ok {
				s := strings.ToLower(d.str(join(p, "vlan-proto"), v))
				if s != VLANProto8021Q && s != VLANProto8021AD && s != "" {
					d.fail(join(p, "vlan-proto"), "%q is not one of 802.1q, 802.1ad", s)
				}
				vf.VLANProto = s
			}
			c.VFs = append(c.VFs, vf)
		}
	}
	return c
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
