package state

// VRF is a virtual routing and forwarding domain: its ports route in its table.
const VRF InterfaceType = "vrf"

func init() { registerSection(func() Section { return &VRFConfig{} }) }

// VRFConfig is a VRF's vrf section.
type VRFConfig struct {
	Port         []string `json:"port" nmstate:"alias=ports,nonnil"`
	RouteTableID int      `json:"route-table-id" nmstate:"required,range=1..u32"`
}

func (*VRFConfig) Key() string            { return "vrf" }
func (*VRFConfig) Types() []InterfaceType { return []InterfaceType{VRF} }

func (v *VRFConfig) references(ref func(RefKind, string, *string)) { portRefs(ref, v.Port) }

func (v *VRFConfig) validate(_ Interface, p string, fail failFunc) {
	switch v.RouteTableID {
	case 253, 254, 255:
		fail(join(p, "route-table-id"), "%d is a table the kernel reserves (default, main, local)", v.RouteTableID)
	}
	checkPorts(join(p, "port"), v.Port, fail)
}

func (v *VRFConfig) verify(add addFunc, it Interface, got Section) {
	n := it.Key()
	g, _ := got.(*VRFConfig)
	if g == nil {
		g = &VRFConfig{}
	}
	if g.RouteTableID != v.RouteTableID {
		add("%s.vrf.route-table-id: %d, want %d", n, g.RouteTableID, v.RouteTableID)
	}
	verifyPorts(add, n+".vrf.port", v.Port, g.Port)
}

func (v *VRFConfig) addPort(name string) { v.Port = append(v.Port, name) }

// VRFTables are the route tables of the VRFs the states have, by name: the first state's
// first (a desired state before the node's).
func VRFTables(states ...State) map[string]int {
	out := map[string]int{}
	for _, s := range states {
		for _, it := range s.Interfaces {
			if v := SectionOf[*VRFConfig](it); v != nil && it.State != Absent {
				if _, ok := out[it.Name]; !ok {
					out[it.Name] = v.RouteTableID
				}
			}
		}
	}
	return out
}
