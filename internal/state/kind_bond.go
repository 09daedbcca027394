package state

import (
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
	_ struct{} `key:"ports-config" refused:"not applied yet"`

	Mode    BondMode    `json:"mode,omitempty" nmstate:"required"`
	Options BondOptions `json:"options,omitempty"`
	Port    []string    `json:"port" nmstate:"alias=ports,nonnil"`
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
}
