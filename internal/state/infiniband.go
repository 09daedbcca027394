package state

// InfiniBand is an IP-over-InfiniBand interface: a port of an InfiniBand adapter, or a
// partition (a P_Key child) of one.
const InfiniBand InterfaceType = "infiniband"

// InfiniBandConfig is an infiniband interface's section.
type InfiniBandConfig struct {
	// Mode is datagram or connected.
	Mode string `json:"mode,omitempty" nmstate:"one-of=datagram|connected"`
	// PKey is the partition key; nil or 0xffff for the default partition.
	PKey *int `json:"pkey,omitempty" nmstate:"via=pkey"`
	// BaseIface is the adapter port a partition is made on.
	BaseIface string `json:"base-iface,omitempty"`
}

// DefaultPKey is the default partition's key.
const DefaultPKey = 0xffff
