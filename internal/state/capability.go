package state

// A Capability is what of nmstate's schema only some nodes can apply: a setting that
// NetworkManager gained in a later version than others run, or a plugin a node may lack.
// The state marks the fields that need one (the tag option needs=CAPABILITY); each backend
// says which capabilities a node has, and refuses on that node a policy that needs one it
// lacks, naming it.
type Capability string

// The capabilities fields can need.
const (
	// CapabilityBondPortPriority: a bond port's priority (ports-config[].priority).
	CapabilityBondPortPriority Capability = "bond-port-priority"
)

// Capabilities are every capability a field can need, in a stable order.
var Capabilities = []Capability{CapabilityBondPortPriority}

// Need is one field a desired state gives that needs a capability.
type Need struct {
	Path       string
	Capability Capability
}

// ParseNeeds is Parse, with the fields the state gives that need a capability, in
// document order.
func ParseNeeds(doc []byte) (State, []Need, error) {
	return parse(doc)
}
