package state

// Veth is one end of a veth pair.
const Veth InterfaceType = "veth"

func init() { registerSection(func() Section { return &VethConfig{} }) }

// VethConfig is a veth's veth section.
type VethConfig struct {
	Peer string `json:"peer" nmstate:"required"`
}

func (*VethConfig) Key() string            { return "veth" }
func (*VethConfig) Types() []InterfaceType { return []InterfaceType{Veth} }

// references: none; the peer is created with the veth, not before it.
func (*VethConfig) references(func(RefKind, string, *string)) {}

func (v *VethConfig) validate(it Interface, p string, fail failFunc) {
	checkOther(fail, join(p, "peer"), v.Peer, it.Name, "a veth cannot peer with itself")
}

// verify: the peer is what the kernel created the pair with; nothing to compare.
func (*VethConfig) verify(addFunc, Interface, Section) {}
