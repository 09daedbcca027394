package networkmanager

import (
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

func ref[T any](v T) *T { return &v }

// VFs a policy lists are merged by index into those the base profile has.
func TestSetSRIOV(t *testing.T) {
	v := dbus.MakeVariant
	base := settings{"sriov": {"total-vfs": v(uint32(2)), "vfs": v([]map[string]dbus.Variant{
		{"index": v(uint32(0)), "trust": v(true), "mac": v("02:00:00:00:00:AA")},
		{"index": v(uint32(3)), "spoof-check": v(false)},
	})}}
	setSRIOV(base, &state.SRIOVConfig{TotalVFs: ref(4), DriversAutoprobe: ref(false), VFs: []state.VF{
		{ID: 0, MACAddress: ref("02:00:00:00:00:bb"), VLANID: ref(100), QoS: ref(3), VLANProto: state.VLANProto8021AD},
		{ID: 1, MaxTxRate: ref(100), MinTxRate: ref(10)},
	}})
	b, _ := json.Marshal(plain(base["sriov"]))
	want := `{"autoprobe-drivers":0,"total-vfs":4,"vfs":[` +
		`{"index":0,"mac":"02:00:00:00:00:BB","trust":true,"vlans":[{"id":100,"protocol":1,"qos":3}]},` +
		`{"index":1,"max-tx-rate":100,"min-tx-rate":10},` +
		`{"index":3,"spoof-check":false}]}`
	if string(b) != want {
		t.Errorf("\n got %s\nwant %s", b, want)
	}
}

// A link dump's VF info as the kernel writes it (linux/if_link.h), read back.
func TestParseVF(t *testing.T) {
	attr := func(typ uint16, payload []byte) []byte {
		l := unix.SizeofRtAttr + len(payload)
		b := make([]byte, (l+3)&^3)
		binary.NativeEndian.PutUint16(b[0:], uint16(l))
		binary.NativeEndian.PutUint16(b[2:], typ)
		copy(b[unix.SizeofRtAttr:], payload)
		return b
	}
	u32s := func(vs ...uint32) []byte {
		b := make([]byte, 4*len(vs))
		for i, v := range vs {
			binary.NativeEndian.PutUint32(b[4*i:], v)
		}
		return b
	}
	mac := append(u32s(1), make([]byte, 32)...)
	copy(mac[4:], []byte{0x02, 0, 0, 0, 0, 0xbb})
	vlanInfo := append(u32s(1, 100, 3), 0x88, 0xa8) // ETH_P_8021AD, big-endian
	var info []byte
	for _, a := range [][]byte{
		attr(unix.IFLA_VF_MAC, mac),
		attr(unix.IFLA_VF_SPOOFCHK, u32s(1, 0)),
		attr(unix.IFLA_VF_TRUST, u32s(1, 1)),
		attr(unix.IFLA_VF_RATE, u32s(1, 10, 100)),
		attr(unix.IFLA_VF_VLAN_LIST|1<<15, attr(unix.IFLA_VF_VLAN_INFO, vlanInfo)),
	} {
		info = append(info, a...)
	}
	got, _ := json.Marshal(parseVF(info))
	want := `{"id":1,"mac-address":"02:00:00:00:00:BB","spoof-check":false,"trust":true,"min-tx-rate":10,"max-tx-rate":100,"vlan-id":100,"qos":3,"vlan-proto":"802.1ad"}`
	if string(got) != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	noVLAN, _ := json.Marshal(parseVF(attr(unix.IFLA_VF_TRUST, u32s(2, 0))))
	if string(noVLAN) != `{"id":2,"trust":false,"vlan-id":0}` {
		t.Errorf("a VF without a VLAN: %s", noVLAN)
	}
}

// plain unwraps D-Bus variants for comparison as JSON.
func plain(v any) any {
	switch n := v.(type) {
	case dbus.Variant:
		return plain(n.Value())
	case map[string]dbus.Variant:
		out := map[string]any{}
		for k, e := range n {
			out[k] = plain(e)
		}
		return out
	case []map[string]dbus.Variant:
		out := []any{}
		for _, e := range n {
			out = append(out, plain(e))
		}
		return out
	}
	return v
}
