package networkmanager

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// readLLDP is an interface's lldp section: enabled when the profile applied to it
// receives LLDP (connection.lldp), with the neighbours NetworkManager heard on the
// device (its LldpNeighbors property), in nmstate's form.
func readLLDP(a settings, props map[string]dbus.Variant) *state.LLDP {
	if v, _ := a["connection"]["lldp"].Value().(int32); v <= 0 {
		return nil
	}
	enabled := true
	l := &state.LLDP{Enabled: &enabled}
	nbs, _ := props["LldpNeighbors"].Value().([]map[string]dbus.Variant)
	for _, nb := range nbs {
		if tlvs := lldpTLVs(nb); len(tlvs) > 0 {
			l.Neighbors = append(l.Neighbors, tlvs)
		}
	}
	return l
}

// LLDP TLV types and the organisationally specific subtypes nmstate names.
const (
	tlvChassisID    = 1
	tlvPortID       = 2
	tlvSystemName   = 5
	tlvSystemDesc   = 6
	tlvSystemCaps   = 7
	tlvMgmtAddress  = 8
	tlvOrgSpecific  = 127
	ouiIEEE8021     = "00:80:c2"
	ouiIEEE8023     = "00:12:0f"
	subtypeMACPhy   = 1
	subtypePPVIDs   = 2
	subtypeVLANs    = 3
	subtypeMaxFrame = 4
)

// chassisIDTypes and portIDTypes are the ID subtypes' names (IEEE 802.1AB), as nmstate
// describes them.
var (
	chassisIDTypes = []string{"Reserved", "Chasis compontent", "Interface alias", "Port component", "MAC address",
		"Network address", "Interface name", "Locally assigned"}
	portIDTypes = []string{"Reserved", "Interface alias", "Port component", "MAC address", "Network address",
		"Interface name", "Agent circuit ID", "Locally assigned"}
	// systemCapabilities by bit, from bit 0.
	systemCapabilities = []string{"Other", "Repeater", "MAC Bridge component", "802.11 Access Point (AP)", "Router",
		"Telephone", "DOCSIS cable device", "Station Only", "C-VLAN component", "S-VLAN component", "Two-port MAC Relay component"}
)

// lldpTLVs turns one neighbour as NetworkManager reports it (libnm's NM_LLDP_ATTR_*
// keys) into nmstate's list of TLVs, in nmstate's order: a capture can then select an
// interface by interfaces.lldp.neighbors.0.0.system-name as it does under nmstate.
func lldpTLVs(nb map[string]dbus.Variant) []map[string]any {
	str := func(k string) (string, bool) { s, ok := nb[k].Value().(string); return s, ok }
	num := func(k string) (uint32, bool) { n, ok := nb[k].Value().(uint32); return n, ok }
	var tlvs []map[string]any
	if s, ok := str("system-name"); ok {
		tlvs = append(tlvs, map[string]any{"type": tlvSystemName, "system-name": s})
	}
	if s, ok := str("system-description"); ok {
		tlvs = append(tlvs, map[string]any{"type": tlvSystemDesc, "system-description": s})
	}
	if caps, ok := num("system-capabilities"); ok {
		names := []string{}
		for bit, name := range systemCapabilities {
			if caps&(1<<bit) != 0 {
				names = append(names, name)
			}
		}
		tlvs = append(tlvs, map[string]any{"type": tlvSystemCaps, "system-capabilities": names})
	}
	if id, ok := str("chassis-id"); ok {
		t, _ := num("chassis-id-type")
		tlvs = append(tlvs, map[string]any{"type": tlvChassisID, "chassis-id": id, "chassis-id-type": t, "_description": describeID(chassisIDTypes, t)})
	}
	if id, ok := str("port-id"); ok {
		t, _ := num("port-id-type")
		tlvs = append(tlvs, map[string]any{"type": tlvPortID, "port-id": id, "port-id-type": t, "_description": describeID(portIDTypes, t)})
	}
	if vs, ok := nb["ieee-802-1-vlans"].Value().([]map[string]dbus.Variant); ok {
		vlans := []map[string]any{}
		for _, v := range vs {
			vid, ok1 := v["vid"].Value().(uint32)
			name, ok2 := v["name"].Value().(string)
			if ok1 && ok2 {
				vlans = append(vlans, map[string]any{"vid": vid, "name": name})
			}
		}
		tlvs = append(tlvs, map[string]any{"type": tlvOrgSpecific, "oui": ouiIEEE8021, "subtype": subtypeVLANs, "ieee-802-1-vlans": vlans})
	}
	if conf, ok := nb["ieee-802-3-mac-phy-conf"].Value().(map[string]dbus.Variant); ok {
		autoneg, ok1 := conf["autoneg"].Value().(uint32)
		pmd, ok2 := conf["pmd-autoneg-cap"].Value().(uint32)
		mau, ok3 := conf["operational-mau-type"].Value().(uint32)
		if ok1 && ok2 && ok3 {
			tlvs = append(tlvs, map[string]any{"type": tlvOrgSpecific, "oui": ouiIEEE8023, "subtype": subtypeMACPhy,
				"ieee-802-3-mac-phy-conf": map[string]any{"autoneg": autoneg > 0, "pmd-autoneg-cap": pmd, "operational-mau-type": mau}})
		}
	}
	if ps, ok := nb["ieee-802-1-ppvids"].Value().([]map[string]dbus.Variant); ok {
		ppvids := []uint32{}
		for _, p := range ps {
			if id, ok := p["ppvid"].Value().(uint32); ok {
				ppvids = append(ppvids, id)
			}
		}
		tlvs = append(tlvs, map[string]any{"type": tlvOrgSpecific, "oui": ouiIEEE8021, "subtype": subtypePPVIDs, "ieee-802-1-ppvids": ppvids})
	}
	if ms, ok := nb["management-addresses"].Value().([]map[string]dbus.Variant); ok {
		addrs := []map[string]any{}
		for _, m := range ms {
			if a := mgmtAddress(m); a != nil {
				addrs = append(addrs, a)
			}
		}
		tlvs = append(tlvs, map[string]any{"type": tlvMgmtAddress, "management-addresses": addrs})
	}
	if n, ok := num("ieee-802-3-max-frame-size"); ok {
		tlvs = append(tlvs, map[string]any{"type": tlvOrgSpecific, "oui": ouiIEEE8023, "subtype": subtypeMaxFrame, "ieee-802-3-max-frame-size": n})
	}
	return tlvs
}

func describeID(names []string, t uint32) string {
	if int(t) < len(names) {
		return names[t]
	}
	return names[0]
}

// mgmtAddress is one management address (IANA address family 1 IPv4, 2 IPv6, 6 MAC);
// nil for another family or a malformed one.
func mgmtAddress(m map[string]dbus.Variant) map[string]any {
	family, ok1 := m["address-subtype"].Value().(uint32)
	raw, ok2 := m["address"].Value().([]byte)
	ifSubtype, ok3 := m["interface-number-subtype"].Value().(uint32)
	ifNumber, ok4 := m["interface-number"].Value().(uint32)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return nil
	}
	var addr, name string
	switch {
	case family == 1 && len(raw) == 4:
		addr, name = netip.AddrFrom4([4]byte(raw)).String(), "IPv4"
	case family == 2 && len(raw) == 16:
		addr, name = netip.AddrFrom16([16]byte(raw)).String(), "IPv6"
	case family == 6:
		parts := make([]string, len(raw))
		for i, b := range raw {
			parts[i] = fmt.Sprintf("%02X", b)
		}
		addr, name = strings.Join(parts, ":"), "MAC"
	default:
		return nil
	}
	return map[string]any{"address": addr, "address-subtype": name, "interface-number": ifNumber, "interface-number-subtype": ifSubtype}
}
