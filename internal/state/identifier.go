package state

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/nmoverlay/nmoverlay/api/field"
)

// Identifiers: how an interface of a desired state finds its device.
const (
	// IdentifyByName: the device of the interface's name (the default).
	IdentifyByName = "name"
	// IdentifyByMAC: the device whose MAC address is the interface's mac-address,
	// whatever its name; the interface's name names its profile.
	IdentifyByMAC = "mac-address"
	// IdentifyByPCI: the device at the interface's pci-address, likewise.
	IdentifyByPCI = "pci-address"
)

// pciAddressPattern is a PCI address as the kernel names a device: domain, bus, device
// and function (0000:03:00.1).
var pciAddressPattern = regexp.MustCompile(`^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-1][0-9a-fA-F]\.[0-7]$`)

// Renamed is the state with every mention of interface from (its own name, a port, a
// base interface, a route's or a rule's interface, a MAC source) made to name to instead:
// an interface identified by MAC address is its device's, known only on the node.
func (s State) Renamed(from, to string) State {
	out := s
	out.Interfaces = make([]Interface, len(s.Interfaces))
	swap := func(name string) string {
		if name == from {
			return to
		}
		return name
	}
	for i, it := range s.Interfaces {
		it = it.renamed(swap)
		it.Name = swap(it.Name)
		out.Interfaces[i] = it
	}
	if s.Routes != nil {
		r := *s.Routes
		r.Config = slices.Clone(s.Routes.Config)
		for i := range r.Config {
			r.Config[i].NextHopInterface = swap(r.Config[i].NextHopInterface)
		}
		out.Routes = &r
	}
	if s.RouteRules != nil {
		r := *s.RouteRules
		r.Config = slices.Clone(s.RouteRules.Config)
		for i := range r.Config {
			r.Config[i].IIF = swap(r.Config[i].IIF)
		}
		out.RouteRules = &r
	}
	return out
}

// DeviceIdentity is what identifying an interface by its MAC or PCI address needs of
// a device.
type DeviceIdentity struct {
	Name, MAC, PermanentMAC string
	// PCIAddress is "" for a device not on a PCI bus of its own (a veth, a USB NIC).
	PCIAddress string
}

// ResolveIdentifiers finds the device of each interface identified by MAC address (by
// its permanent address first: a bond's port runs on the bond's) or by PCI address among
// devs (the node's Ethernet devices) and names the interface after it everywhere in the
// state; the name the policy gave names its profile (nmstate's profile-name), unless it
// has one. No device, or several, is an error at the interface's address field.
func ResolveIdentifiers(desired State, devs []DeviceIdentity) (State, field.Errors) {
	var errs field.Errors
	out := desired
	for _, it := range desired.Interfaces {
		if it.State == Absent {
			continue
		}
		var found []string
		var path, what, value string
		switch {
		case it.Identifier == IdentifyByMAC && it.MACAddress != nil:
			want, ok := HardwareAddress(*it.MACAddress)
			if !ok {
				continue // Validate says why
			}
			var byPerm, byCurrent []string
			for _, d := range devs {
				if hw, ok := HardwareAddress(d.PermanentMAC); ok && bytes.Equal(hw, want) {
					byPerm = append(byPerm, d.Name)
				} else if hw, ok := HardwareAddress(d.MAC); ok && bytes.Equal(hw, want) {
					byCurrent = append(byCurrent, d.Name)
				}
			}
			found = byPerm
			if len(found) == 0 {
				found = byCurrent
			}
			path, what, value = "mac-address", "MAC address", *it.MACAddress
		case it.Identifier == IdentifyByPCI && it.PCIAddress != nil:
			for _, d := range devs {
				if d.PCIAddress != "" && strings.EqualFold(d.PCIAddress, *it.PCIAddress) {
					found = append(found, d.Name)
				}
			}
			path, what, value = "pci-address", "PCI address", *it.PCIAddress
		default:
			continue
		}
		slices.Sort(found)
		path = fmt.Sprintf("interfaces[name=%s].%s", it.Name, path)
		switch {
		case len(found) == 0:
			errs = append(errs, &field.Error{Path: path, Reason: fmt.Sprintf("no interface with %s %s on this node", what, value)})
			continue
		case len(found) > 1:
			errs = append(errs, &field.Error{Path: path, Reason: fmt.Sprintf("%s is the %s of %s: identifier %s needs one", value, what, strings.Join(found, " and "), it.Identifier)})
			continue
		}
		out = out.Renamed(it.Name, found[0])
		if it.ProfileName == nil {
			i := slices.IndexFunc(out.Interfaces, func(o Interface) bool { return o.Name == found[0] && o.Identifier == it.Identifier })
			name := it.Name
			out.Interfaces[i].ProfileName = &name
		}
	}
	if len(errs) > 0 {
		return desired, errs
	}
	return out, nil
}

// HardwareAddress reads a link-layer address written as hex octets separated by colons:
// an Ethernet MAC (6 octets) or an IP-over-InfiniBand one (20; nmstate's own documentation
// gives 21, the DHCP client-ID form, which it also takes).
func HardwareAddress(s string) ([]byte, bool) {
	parts := strings.Split(s, ":")
	if len(parts) < 6 || len(parts) > 21 {
		return nil, false
	}
	out := make([]byte, len(parts))
	for i, p := range parts {
		b, err := hex.DecodeString(p)
		if len(p) != 2 || err != nil {
			return nil, false
		}
		out[i] = b[0]
	}
	return out, true
}
