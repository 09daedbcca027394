package networkmanager

import (
	"slices"

	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// lo's profile is a loopback profile (NetworkManager 1.42 and later): its MTU in the
// loopback section, and both families manual with the loopback address first, as nmstate
// writes it (NetworkManager keeps that address on lo whatever its profile says, and 1.42
// refuses method manual without an address). Deleting the profile gives lo back to
// NetworkManager's own handling: the loopback addresses stay, the MTU goes back.
func init() {
	register(&kind{typ: state.Loopback, connType: "loopback", deviceType: 32, link: "loopback",
		write: func(s settings, _ state.Interface, _ profileExtras) {
			emptySection(s, "loopback")
			delete(s, "802-3-ethernet") // accept-all-mac-addresses, which a copied state gives: lo has no link layer
		},
		fixIP: func(s settings) {
			for _, fam := range ipFamilies {
				s.set(fam, "method", "manual")
				lo := state.LoopbackAddresses[fam]
				addrs := dictList(s[fam]["address-data"])
				if !slices.ContainsFunc(addrs, func(a map[string]dbus.Variant) bool { return a["address"].Value() == lo.IP }) {
					addrs = append([]map[string]dbus.Variant{{"address": dbus.MakeVariant(lo.IP), "prefix": dbus.MakeVariant(uint32(lo.PrefixLength))}}, addrs...)
				}
				s.set(fam, "address-data", addrs)
			}
		},
	})
}
