package state

import (
	"strconv"
	"strings"
)

// InfiniBand is an IP-over-InfiniBand interface: a port of an InfiniBand adapter, or a
// partition (a P_Key child) of one.
const InfiniBand InterfaceType = "infiniband"

// InfiniBandConfig is an infiniband interface's section.
type InfiniBandConfig struct {
	// Mode is datagram or connected.
	Mode string `json:"mode,omitempty"`
	// PKey is the partition key; nil or 0xffff for the default partition.
	PKey *int `json:"pkey,omitempty"`
	// BaseIface is the adapter port a partition is made on.
	BaseIface string `json:"base-iface,omitempty"`
}

// DefaultPKey is the default partition's key.
const DefaultPKey = 0xffff

func (d *decoder) infiniband(path string, v any) *InfiniBandConfig {
	m, ok := d.object(path, v, []string{"mode", "pkey", "base-iface"}, nil)
	if !ok {
		return nil
	}
	c := &InfiniBandConfig{}
	if v, ok := m["mode"]; ok {
		c.Mode = d.str(join(path, "mode"), v)
		if c.Mode != "datagram" && c.Mode != "connected" {
			d.fail(join(path, "mode"), "%q is not one of datagram, connected", c.Mode)
		}
	}
	if v, ok := m["pkey"]; ok {
		// nmstate takes "0xffff" or a number.
		text := strings.ToLower(d.scalar(join(path, "pkey"), v))
		n, err := strconv.ParseInt(strings.TrimPrefix(text, "0x"), map[bool]int{true: 16, false: 10}[strings.HasPrefix(text, "0x")], 32)
		if err != nil || n < 0 || n > DefaultPKey {
			d.fail(join(path, "pkey"), "%q is not a partition key (0x0001 to 0xffff)", text)
		} else {
			p := int(n)
			c.PKey = &p
		}
	}
	if v, ok := m["base-iface"]; ok {
		c.BaseIface = d.str(join(path, "base-iface"), v)
	}
	return c
}
