package state

import (
	"fmt"
	"regexp"
	"slices"
)

// Bond is a Linux bond: its ports under one interface.
const Bond InterfaceType = "bond"

func init() { registerSection(func() Section { return &BondConfig{} }) }

// bondOptionName is the form of the kernel's bonding option names.
var bondOptionName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// BondMode is a Linux bonding mode by nmstate's name.
type BondMode string

// BondModes are the modes nmstate names.
var BondModes = []BondMode{"balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"}

// BondConfig is a bond's link-aggregation section.
type BondConfig struct {
	Mode    BondMode    `json:"mode,omitempty" nmstate:"required"`
	Options BondOptions `json:"options,omitempty"`
	Port    []string    `json:"port" nmstate:"alias=ports,nonnil"`
	// PortsConfig is what the bond sets on some of its ports.
	PortsConfig []BondPort `json:"ports-config,omitempty"`
}

// BondPort is a bond's settings for one of its ports.
type BondPort struct {
	Name string `json:"name" nmstate:"required"`
	// Priority orders the ports for becoming active (active-backup, balance-tlb and
	// balance-alb): the highest first.
	Priority *int `json:"priority,omitempty" nmstate:"range=-2147483648..2147483647,needs=bond-port-priority"`
	// QueueID is the transmit queue the port's traffic goes out by (0: none).
	QueueID *int `json:"queue-id,omitempty" nmstate:"range=0..65535"`
}

// PortConfig is the bond's settings for port, nil when it gives none.
func (b *BondConfig) PortConfig(port string) *BondPort {
	for i := range b.PortsConfig {
		if b.PortsConfig[i].Name == port {
			return &b.PortsConfig[i]
		}
	}
	return nil
}

func (*BondConfig) Key() string            { return "link-aggregation" }
func (*BondConfig) Types() []InterfaceType { return []InterfaceType{Bond} }

func (b *BondConfig) references(ref func(RefKind, string, *string)) { portRefs(ref, b.Port) }

func (b *BondConfig) validate(_ Interface, p string, fail failFunc) {
	if b.Mode != "" && !slices.Contains(BondModes, b.Mode) {
		fail(join(p, "mode"), "%q is not a bond mode (%v)", b.Mode, BondModes)
	}
	for k := range b.Options {
		if !bondOptionName.MatchString(k) || k == "mode" {
			fail(join(p, "options."+k), "not a bonding option name (the mode goes in link-aggregation.mode)")
		}
	}
	checkPorts(join(p, "port"), b.Port, fail)
	seen := map[string]bool{}
	for i, pc := range b.PortsConfig {
		path := index(join(p, "ports-config"), i)
		switch {
		case seen[pc.Name]:
			fail(join(path, "name"), "%q is configured twice", pc.Name)
		case !slices.Contains(b.Port, pc.Name):
			fail(join(path, "name"), "%q is not one of the bond's ports %v", pc.Name, b.Port)
		}
		seen[pc.Name] = true
	}
}

// verify compares the mode and options the policy sets, and the ports. A missing section
// is compared as an empty one.
func (b *BondConfig) verify(add addFunc, it Interface, got Section) {
	n := it.Key()
	g, _ := got.(*BondConfig)
	if g == nil {
		g = &BondConfig{}
	}
	if b.Mode != "" && b.Mode != g.Mode {
		add("%s.link-aggregation.mode: %s, want %s", n, orNone(string(g.Mode)), b.Mode)
	}
	for _, k := range sortedKeys(b.Options) {
		if v, ok := g.Options[k]; !ok || !SameBondOption(k, v, b.Options[k]) {
			add("%s.link-aggregation.options.%s: %s, want %s", n, k, orNone(v), b.Options[k])
		}
	}
	verifyPorts(add, n+".link-aggregation.port", b.Port, g.Port)
	for _, want := range b.PortsConfig {
		have := g.PortConfig(want.Name)
		if have == nil {
			have = &BondPort{}
		}
		path := fmt.Sprintf("%s.link-aggregation.ports-config[%s]", n, want.Name)
		verifyField(add, path+".priority", want.Priority, have.Priority)
		verifyField(add, path+".queue-id", want.QueueID, have.QueueID)
	}
}

func (b *BondConfig) addPort(name string) { b.Port = append(b.Port, name) }
