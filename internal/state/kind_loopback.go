package state

// Loopback is the node's loopback interface, lo. NetworkManager (1.42 and later) applies a
// loopback profile to it: its MTU, addresses besides 127.0.0.1/8 and ::1, and the routes
// that have no next hop (blackhole, unreachable, prohibit) outside any VRF, which nmstate
// puts there. Absent gives lo back what the kernel gave it: the engine deletes its profile,
// and NetworkManager keeps the loopback addresses whatever profile lo runs.
const Loopback InterfaceType = "loopback"

// LoopbackName is the loopback interface's name: a network namespace has one.
const LoopbackName = "lo"

func init() { SupportedTypes = append(SupportedTypes, Loopback) }

// validateLoopbackOwn refuses what lo cannot be given, as nmstate does, and what would
// cut the node's own traffic (kubelet, API server, health checks run over lo).
func validateLoopbackOwn(p string, it Interface, fail failFunc) {
	if it.Name != LoopbackName {
		fail(join(p, "name"), "%q: the loopback interface is %s (a node has one)", it.Name, LoopbackName)
	}
	if it.State == Down {
		fail(join(p, "state"), "%s cannot be taken down: the node's own traffic runs over it (absent gives it back its defaults)", LoopbackName)
	}
	for _, f := range []struct {
		family string
		c      *IPConfig
	}{{"ipv4", it.IPv4}, {"ipv6", it.IPv6}} {
		switch c := f.c; {
		case c == nil:
		case c.Enabled != nil && !*c.Enabled:
			fail(join(join(p, f.family), "enabled"), "%s keeps its loopback address: %s cannot be disabled on it", LoopbackName, f.family)
		case isTrue(c.DHCP) || isTrue(c.Autoconf):
			fail(join(p, f.family), "%s takes static addresses only (no DHCP or autoconf)", LoopbackName)
		}
	}
	if it.MACAddress != nil {
		fail(join(p, "mac-address"), "%s has no link-layer address", LoopbackName)
	}
	if it.Controller != nil && *it.Controller != "" {
		fail(join(p, "controller"), "%s cannot be a port", LoopbackName)
	}
}

// LoopbackAddresses are the addresses lo always has, which NetworkManager keeps on it: a
// loopback profile lists them (NetworkManager 1.42 wants an address for method manual).
var LoopbackAddresses = map[string]Address{"ipv4": {IP: "127.0.0.1", PrefixLength: 8}, "ipv6": {IP: "::1", PrefixLength: 128}}
