package state

func init() { registerSection(func() Section { return &OVSPatch{} }) }

// OVSPatch is an ovs-interface's patch section: it makes the interface a patch port to
// another bridge's patch port.
type OVSPatch struct {
	Peer string `json:"peer" nmstate:"required"`
}

func (*OVSPatch) Key() string            { return "patch" }
func (*OVSPatch) Types() []InterfaceType { return []InterfaceType{OVSInterface} }

// references: none; the peer is an OVSDB interface of another bridge.
func (*OVSPatch) references(func(RefKind, string, *string)) {}

func (pt *OVSPatch) validate(it Interface, p string, fail failFunc) {
	checkOther(fail, join(p, "peer"), pt.Peer, it.Name, "a patch port cannot peer with itself")
}

func (pt *OVSPatch) verify(add addFunc, it Interface, got Section) {
	n := it.Key()
	if g, _ := got.(*OVSPatch); g == nil || g.Peer != pt.Peer {
		peer := "none"
		if g != nil {
			peer = g.Peer
		}
		add("%s.patch.peer: %s, want %s", n, peer, pt.Peer)
	}
}
