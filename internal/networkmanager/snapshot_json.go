package networkmanager

import (
	"encoding/json"
	"fmt"

	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager/nmdbus"
)

// A snapshot is kept as JSON for tests (testdata/snapshots): each D-Bus value as its
// signature and its GVariant text, which godbus parses back to the same value. Of
// NetworkManager's objects it keeps what State reads, by interface; the rest (device
// statistics, state reasons as structs godbus cannot parse back) would only weigh.
var translated = map[string][]string{
	nmdbus.DeviceIface: {"Interface", "DeviceType", "State", "ActiveConnection", "Real", "HwAddress", "Ports",
		"Capabilities", "Mtu", "Ip4Config", "Ip6Config", "LldpNeighbors", "InterfaceFlags", "Path"},
	nmdbus.WiredIface:  {"PermHwAddress"},
	nmdbus.ActiveIface: {"Connection", "StateFlags"},
	nmdbus.IP4Iface:    {"AddressData", "RouteData"},
	nmdbus.IP6Iface:    {"AddressData", "RouteData"},
	nmdbus.DNSIface:    {"Configuration"},
}

type variantJSON [2]string // signature, text

// encodeVariants leaves out the values godbus cannot parse back: structs, which it
// decodes as lists of variants (a device's StateReason, a profile's legacy ipv6.routes).
// The translation reads none.
func encodeVariants(m map[string]dbus.Variant) map[string]variantJSON {
	out := make(map[string]variantJSON, len(m))
	for k, v := range m {
		text := v.String()
		if _, err := dbus.ParseVariant(text, v.Signature()); err == nil {
			out[k] = variantJSON{v.Signature().String(), text}
		}
	}
	return out
}

func decodeVariants(m map[string]variantJSON) (map[string]dbus.Variant, error) {
	out := make(map[string]dbus.Variant, len(m))
	for k, v := range m {
		sig, err := dbus.ParseSignature(v[0])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		if out[k], err = dbus.ParseVariant(v[1], sig); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", k, v[1], err)
		}
	}
	return out, nil
}

func (s settings) MarshalJSON() ([]byte, error) {
	out := make(map[string]map[string]variantJSON, len(s))
	for sec, kv := range s {
		out[sec] = encodeVariants(kv)
	}
	return json.Marshal(out)
}

func (s *settings) UnmarshalJSON(b []byte) error {
	var in map[string]map[string]variantJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*s = settings{}
	for sec, kv := range in {
		vs, err := decodeVariants(kv)
		if err != nil {
			return fmt.Errorf("%s.%w", sec, err)
		}
		(*s)[sec] = vs
	}
	return nil
}

func (o objects) MarshalJSON() ([]byte, error) {
	out := map[dbus.ObjectPath]settings{}
	for p, ifaces := range o {
		kept := settings{}
		for iface, props := range ifaces {
			for _, name := range translated[iface] {
				if v, ok := props[name]; ok {
					if kept[iface] == nil {
						kept[iface] = map[string]dbus.Variant{}
					}
					kept[iface][name] = v
				}
			}
		}
		if len(kept) > 0 {
			out[p] = kept
		}
	}
	return json.Marshal(out)
}

func (o *objects) UnmarshalJSON(b []byte) error {
	var in map[dbus.ObjectPath]settings
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*o = objects{}
	for p, ifaces := range in {
		(*o)[p] = ifaces
	}
	return nil
}
