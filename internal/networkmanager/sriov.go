package networkmanager

import (
	"encoding/binary"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"syscall"

	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// setSRIOV writes NetworkManager's sriov setting from an ethernet.sr-iov section
// (FIELD-NOTES §8): total-vfs, autoprobe-drivers, and the VFs listed merged by index into
// the ones the base profile has, so that VFs a policy does not list keep their settings,
// as under nmstate. NetworkManager writes 0 then the count to sriov_numvfs when the count
// changes, which needs a full activation (its reapply refuses sriov changes).
func setSRIOV(s settings, c *state.SRIOVConfig) {
	if c.TotalVFs != nil {
		s.set("sriov", "total-vfs", uint32(*c.TotalVFs))
	}
	if c.DriversAutoprobe != nil {
		probe := int32(0) // NM_TERNARY_FALSE
		if *c.DriversAutoprobe {
			probe = 1
		}
		s.set("sriov", "autoprobe-drivers", probe)
	}
	if len(c.VFs) == 0 {
		if _, ok := s["sriov"]; !ok {
			s["sriov"] = map[string]dbus.Variant{}
		}
		return
	}
	vfs, _ := s["sriov"]["vfs"].Value().([]map[string]dbus.Variant)
	byIndex := map[uint32]map[string]dbus.Variant{}
	for _, vf := range vfs {
		if i, ok := vf["index"].Value().(uint32); ok {
			byIndex[i] = vf
		}
	}
	for _, vf := range c.VFs {
		m := byIndex[uint32(vf.ID)]
		if m == nil {
			m = map[string]dbus.Variant{"index": dbus.MakeVariant(uint32(vf.ID))}
		} else {
			m = maps.Clone(m)
		}
		if vf.MACAddress != nil {
			m["mac"] = dbus.MakeVariant(strings.ToUpper(*vf.MACAddress))
		}
		if vf.SpoofCheck != nil {
			m["spoof-check"] = dbus.MakeVariant(*vf.SpoofCheck)
		}
		if vf.Trust != nil {
			m["trust"] = dbus.MakeVariant(*vf.Trust)
		}
		if vf.MinTxRate != nil {
			m["min-tx-rate"] = dbus.MakeVariant(uint32(*vf.MinTxRate))
		}
		if vf.MaxTxRate != nil {
			m["max-tx-rate"] = dbus.MakeVariant(uint32(*vf.MaxTxRate))
		}
		if vf.VLANID != nil {
			if *vf.VLANID == 0 {
				delete(m, "vlans")
			} else {
				vlan := map[string]dbus.Variant{"id": dbus.MakeVariant(uint32(*vf.VLANID)), "qos": dbus.MakeVariant(uint32(0)), "protocol": dbus.MakeVariant(uint32(0))}
				if vf.QoS != nil {
					vlan["qos"] = dbus.MakeVariant(uint32(*vf.QoS))
				}
				if vf.VLANProto == state.VLANProto8021AD {
					vlan["protocol"] = dbus.MakeVariant(uint32(1))
				}
				m["vlans"] = dbus.MakeVariant([]map[string]dbus.Variant{vlan})
			}
		}
		byIndex[uint32(vf.ID)] = m
	}
	out := make([]map[string]dbus.Variant, 0, len(byIndex))
	for _, i := range slices.Sorted(maps.Keys(byIndex)) {
		out = append(out, byIndex[i])
	}
	s.set("sriov", "vfs", out)
}

// readSRIOV reads a physical function's VFs from the kernel (rtnetlink, the VF info a
// link dump gives with RTEXT_FILTER_VF), as nmstate reports them: what runs, not what
// NetworkManager was told. nil when the device has no VFs and none were asked of it.
func readSRIOV(ifindex uint32) (*state.SRIOVConfig, error) {
	attrs, err := getLink(ifindex, rtextFilterVF)
	if err != nil {
		return nil, err
	}
	total := 0
	if b, ok := attrs[unix.IFLA_NUM_VF]; ok && len(b) >= 4 {
		total = int(binary.NativeEndian.Uint32(b))
	}
	c := &state.SRIOVConfig{TotalVFs: &total}
	for _, info := range nested(attrs[unix.IFLA_VFINFO_LIST]) {
		if info.typ != unix.IFLA_VF_INFO {
			continue
		}
		c.VFs = append(c.VFs, parseVF(info.data))
	}
	slices.SortFunc(c.VFs, func(a, b state.VF) int { return a.ID - b.ID })
	return c, nil
}

// parseVF reads one IFLA_VF_INFO: struct ifla_vf_* payloads, each beginning with the
// u32 VF index.
func parseVF(data []byte) state.VF {
	var vf state.VF
	u32 := func(b []byte, off int) uint32 { return binary.NativeEndian.Uint32(b[off:]) }
	flag := func(v uint32) *bool { on := v != 0; return &on }
	num := func(v uint32) *int { n := int(v); return &n }
	for _, a := range nested(data) {
		b := a.data
		if len(b) < 8 {
			continue
		}
		if a.typ != unix.IFLA_VF_VLAN_LIST && a.typ != unix.IFLA_VF_STATS { // nested: no index first
			vf.ID = int(u32(b, 0))
		}
		switch a.typ {
		case unix.IFLA_VF_MAC: // u32 vf; u8 mac[32]
			if len(b) >= 10 {
				mac := strings.ToUpper(net.HardwareAddr(b[4:10]).String())
				vf.MACAddress = &mac
			}
		case unix.IFLA_VF_SPOOFCHK:
			vf.SpoofCheck = flag(u32(b, 4))
		case unix.IFLA_VF_TRUST:
			vf.Trust = flag(u32(b, 4))
		case unix.IFLA_VF_RATE: // u32 vf, min_tx_rate, max_tx_rate
			if len(b) >= 12 {
				vf.MinTxRate, vf.MaxTxRate = num(u32(b, 4)), num(u32(b, 8))
			}
		case unix.IFLA_VF_VLAN_LIST: // IFLA_VF_VLAN_INFO: u32 vf, vlan, qos; __be16 proto
			for _, v := range nested(b) {
				if v.typ != unix.IFLA_VF_VLAN_INFO || len(v.data) < 14 {
					continue
				}
				if id := u32(v.data, 4); id != 0 {
					vf.VLANID, vf.QoS = num(id), num(u32(v.data, 8))
					vf.VLANProto = state.VLANProto8021Q
					if binary.BigEndian.Uint16(v.data[12:]) == unix.ETH_P_8021AD {
						vf.VLANProto = state.VLANProto8021AD
					}
				}
				break // NetworkManager sets one VLAN per VF
			}
		}
	}
	if vf.VLANID == nil {
		zero := 0
		vf.VLANID = &zero
	}
	return vf
}

// nmDeviceCapSRIOV is NM_DEVICE_CAP_SRIOV: the device is a physical function.
const nmDeviceCapSRIOV = 0x8

// From linux/rtnetlink.h and linux/netlink.h (not in x/sys/unix).
const (
	rtextFilterVF = 1 << 0
	nlaTypeMask   = ^uint16(1<<15 | 1<<14) // NLA_F_NESTED, NLA_F_NET_BYTEORDER
)

type rtattr struct {
	typ  uint16
	data []byte
}

// nested splits a netlink attribute payload into its attributes (NLA_F_NESTED and
// byte-order flags masked off the type).
func nested(b []byte) []rtattr {
	var out []rtattr
	for len(b) >= unix.SizeofRtAttr {
		l := int(binary.NativeEndian.Uint16(b[0:2]))
		if l < unix.SizeofRtAttr || l > len(b) {
			break
		}
		out = append(out, rtattr{typ: binary.NativeEndian.Uint16(b[2:4]) & nlaTypeMask, data: b[unix.SizeofRtAttr:l]})
		aligned := (l + unix.NLA_ALIGNTO - 1) &^ (unix.NLA_ALIGNTO - 1)
		if aligned > len(b) {
			break
		}
		b = b[aligned:]
	}
	return out
}

// getLink asks the kernel for one link (RTM_GETLINK by index) with extMask, and returns
// its attributes by type.
func getLink(ifindex, extMask uint32) (map[uint16][]byte, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	req := make([]byte, unix.SizeofNlMsghdr+unix.SizeofIfInfomsg+8)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], unix.RTM_GETLINK)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(req[8:], 1) // seq
	ifi := req[unix.SizeofNlMsghdr:]
	ifi[0] = unix.AF_UNSPEC
	binary.NativeEndian.PutUint32(ifi[4:], ifindex)
	attr := ifi[unix.SizeofIfInfomsg:]
	binary.NativeEndian.PutUint16(attr[0:], 8)
	binary.NativeEndian.PutUint16(attr[2:], unix.IFLA_EXT_MASK)
	binary.NativeEndian.PutUint32(attr[4:], extMask)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return nil, err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if errno := int32(binary.NativeEndian.Uint32(m.Data)); errno != 0 {
						return nil, fmt.Errorf("RTM_GETLINK %d: %w", ifindex, unix.Errno(-errno))
					}
				}
			case unix.RTM_NEWLINK:
				if len(m.Data) < unix.SizeofIfInfomsg {
					continue
				}
				attrs := map[uint16][]byte{}
				for _, a := range nested(m.Data[unix.SizeofIfInfomsg:]) {
					attrs[a.typ] = a.data
				}
				return attrs, nil
			}
		}
	}
}
