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

func init() { registerSection(func() Section { return &InfiniBandConfig{} }) }

func (*InfiniBandConfig) Key() string            { return "infiniband" }
func (*InfiniBandConfig) Types() []InterfaceType { return []InterfaceType{InfiniBand} }

// references: a partition's adapter port; an adapter port has none.
func (ib *InfiniBandConfig) references(ref func(RefKind, string, *string)) {
	if ib.BaseIface != "" {
		ref(RefBase, "base-iface", &ib.BaseIface)
	}
}

// validate: the decoder checked the mode and the key; nothing else stands alone.
func (*InfiniBandConfig) validate(Interface, string, failFunc) {}

func (ib *InfiniBandConfig) verify(add addFunc, it Interface, got Section) {
	n := it.Key()
	g, _ := got.(*InfiniBandConfig)
	if g == nil {
		g = &InfiniBandConfig{}
	}
	if ib.Mode != "" && g.Mode != ib.Mode {
		add("%s.infiniband.mode: %s, want %s", n, orNone(g.Mode), ib.Mode)
	}
	if ib.PKey != nil && *ib.PKey != DefaultPKey && (g.PKey == nil || *g.PKey != *ib.PKey) {
		add("%s.infiniband.pkey: %s, want %#x", n, intOrNone(g.PKey), *ib.PKey)
	}
}
