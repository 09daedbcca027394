package networkmanager

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/godbus/dbus/v5"

	"golang.org/x/sys/unix"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// rtattrOf is one netlink attribute, padded as the kernel pads it.
func rtattrOf(typ uint16, data []byte) []byte {
	b := make([]byte, unix.SizeofRtAttr, unix.SizeofRtAttr+len(data)+3)
	binary.NativeEndian.PutUint16(b[0:], uint16(unix.SizeofRtAttr+len(data)))
	binary.NativeEndian.PutUint16(b[2:], typ)
	b = append(b, data...)
	for len(b)%unix.NLA_ALIGNTO != 0 {
		b = append(b, 0)
	}
	return b
}

func u32bytes(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

// kernelRouteMsg is an RTM_NEWROUTE payload for 198.51.100.0/24 on ifindex 5.
func kernelRouteMsg(typ byte, metrics []byte) []byte {
	msg := []byte{unix.AF_INET, 24, 0, 0, 254, unix.RTPROT_STATIC, 0, typ, 0, 0, 0, 0}
	msg = append(msg, rtattrOf(unix.RTA_DST, []byte{198, 51, 100, 0})...)
	msg = append(msg, rtattrOf(unix.RTA_PREFSRC, []byte{192, 0, 2, 251})...)
	msg = append(msg, rtattrOf(unix.RTA_OIF, u32bytes(5))...)
	msg = append(msg, rtattrOf(unix.RTA_PRIORITY, u32bytes(150))...)
	if metrics != nil {
		msg = append(msg, rtattrOf(unix.RTA_METRICS, metrics)...)
	}
	return msg
}

func TestParseKernelRoute(t *testing.T) {
	names := map[uint32]string{5: "eth1"}
	locked := append(rtattrOf(rtaxLock, u32bytes(1<<rtaxCwnd)), rtattrOf(rtaxCwnd, u32bytes(20))...)
	for _, tc := range []struct {
		name string
		msg  []byte
		want kernelRoute
		ok   bool
	}{
		{"source and a locked window", kernelRouteMsg(unix.RTN_UNICAST, locked),
			kernelRoute{Destination: "198.51.100.0/24", Interface: "eth1", Table: 254, Metric: 150, Source: "192.0.2.251", Cwnd: 20}, true},
		// ip-route(8): a window that is not locked is a hint the kernel does not keep to.
		{"a window not locked", kernelRouteMsg(unix.RTN_UNICAST, rtattrOf(rtaxCwnd, u32bytes(20))),
			kernelRoute{Destination: "198.51.100.0/24", Interface: "eth1", Table: 254, Metric: 150, Source: "192.0.2.251"}, true},
		{"a blackhole route, on no interface", kernelRouteMsg(unix.RTN_BLACKHOLE, nil),
			kernelRoute{Type: "blackhole", Destination: "198.51.100.0/24", Table: 254, Metric: 150, Source: "192.0.2.251"}, true},
		{"a local route is not one of the model's", kernelRouteMsg(unix.RTN_LOCAL, nil), kernelRoute{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseKernelRoute(tc.msg, names)
			if ok != tc.ok || got != tc.want {
				t.Errorf("got %+v %v, want %+v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestWithKernelAttributes(t *testing.T) {
	table, metric := 254, 150
	rt := state.Route{Destination: "198.51.100.0/24", NextHopInterface: "eth1", TableID: &table, Metric: &metric}
	kernel := []kernelRoute{
		{Destination: "198.51.100.0/24", Interface: "eth2", Table: 254, Metric: 150, Source: "192.0.2.9"},
		{Destination: "198.51.100.0/24", Interface: "eth1", Table: 254, Metric: 150, Source: "192.0.2.251", Cwnd: 20},
	}
	got := withKernelAttributes(rt, kernel)
	if got.Source != "192.0.2.251" || got.Cwnd == nil || *got.Cwnd != 20 {
		t.Errorf("got %+v, want eth1's route's source and window", got)
	}
	if other := withKernelAttributes(rt, kernel[:1]); other.Source != "" || other.Cwnd != nil {
		t.Errorf("took another interface's route: %+v", other)
	}
}

// A route's source and window go into the profile as NetworkManager's route attributes
// (the window locked), and read back from it.
func TestRouteAttributesInProfile(t *testing.T) {
	cwnd := 20
	r := state.Route{Destination: "198.51.100.0/24", NextHopInterface: "eth1", NextHopAddress: "192.0.2.1", Source: "192.0.2.251", Cwnd: &cwnd}
	rd := routeData(r, netip.MustParsePrefix(r.Destination))
	if v, _ := rd["src"].Value().(string); v != "192.0.2.251" {
		t.Errorf("src %v", rd["src"])
	}
	if v, _ := rd["cwnd"].Value().(uint32); v != 20 {
		t.Errorf("cwnd %v", rd["cwnd"])
	}
	if v, _ := rd["lock-cwnd"].Value().(bool); !v {
		t.Errorf("lock-cwnd %v: the kernel would take the window as a hint", rd["lock-cwnd"])
	}
	back := runningRoute(rd, "eth1")
	if back.Source != r.Source || back.Cwnd == nil || *back.Cwnd != cwnd {
		t.Errorf("read back %+v", back)
	}
	if !routeAttributesApplied(map[string]settings{"eth1": {"ipv4": {"route-data": dbus.MakeVariant([]map[string]dbus.Variant{rd})}}}) {
		t.Error("a profile with a route source does not ask for the kernel's routes")
	}
}

// A profile without the family (a VRF's) carries blackhole routes with the family on and
// routes alone; a route with a next hop still needs the family enabled.
func TestBlackholeRoutesOnAProfileWithoutAddresses(t *testing.T) {
	table := 100
	blackhole := state.Route{Destination: "198.51.200.0/24", RouteType: "blackhole", TableID: &table}
	s := settings{}
	s.set("ipv4", "method", "disabled")
	if err := setRoutes(s, "ipv4", []state.Route{blackhole}); err != nil || s.str("ipv4", "method") != "manual" {
		t.Errorf("blackhole: %v, ipv4.method %q, want manual", err, s.str("ipv4", "method"))
	}
	if rd := dictList(s["ipv4"]["route-data"]); len(rd) != 1 || rd[0]["type"].Value() != "blackhole" || rd[0]["table"].Value() != uint32(100) {
		t.Errorf("route-data %v", rd)
	}
	s = settings{}
	s.set("ipv4", "method", "disabled")
	if err := setRoutes(s, "ipv4", []state.Route{{Destination: "198.51.100.0/24", NextHopAddress: "192.0.2.1", NextHopInterface: "vrf0"}}); err == nil {
		t.Error("a unicast route on a profile with IPv4 disabled: no error")
	}
}

func TestParseKernelRouteGateway(t *testing.T) {
	def := []byte{unix.AF_INET, 0, 0, 0, 254, unix.RTPROT_STATIC, 0, unix.RTN_UNICAST, 0, 0, 0, 0}
	single := append(append([]byte{}, def...), rtattrOf(unix.RTA_GATEWAY, []byte{192, 0, 2, 254})...)
	// Two next hops: struct rtnexthop (length, flags, hops, ifindex), then each one's gateway.
	hop := func(gw []byte) []byte {
		attr := rtattrOf(unix.RTA_GATEWAY, gw)
		h := binary.NativeEndian.AppendUint16(nil, uint16(8+len(attr)))
		h = append(h, 0, 0)
		h = binary.NativeEndian.AppendUint32(h, 5)
		return append(h, attr...)
	}
	multi := append(append([]byte{}, def...), rtattrOf(unix.RTA_MULTIPATH, append(hop([]byte{192, 0, 2, 1}), hop([]byte{192, 0, 2, 2})...))...)
	for _, tc := range []struct {
		name string
		msg  []byte
		want netip.Addr
	}{
		{"one next hop", single, netip.MustParseAddr("192.0.2.254")},
		{"a multipath route: its first next hop", multi, netip.MustParseAddr("192.0.2.1")},
		{"no next hop", def, netip.Addr{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := parseKernelRoute(tc.msg, nil)
			if !ok || r.Gateway != tc.want || r.Destination != "0.0.0.0/0" {
				t.Errorf("got %+v %v, want a default route via %v", r, ok, tc.want)
			}
		})
	}
}

func TestDefaultGateway(t *testing.T) {
	route := func(dst string, table, metric int, gw string) kernelRoute {
		r := kernelRoute{Destination: dst, Table: table, Metric: metric}
		if gw != "" {
			r.Gateway = netip.MustParseAddr(gw)
		}
		return r
	}
	v4a, v4b := route("0.0.0.0/0", 254, 200, "192.0.2.1"), route("0.0.0.0/0", 254, 100, "192.0.2.2")
	v6 := route("::/0", 254, 50, "2001:db8::1")
	for _, tc := range []struct {
		name   string
		routes []kernelRoute
		want   string
	}{
		{"the IPv4 one with the lowest metric", []kernelRoute{v4a, v6, v4b}, "192.0.2.2"},
		{"IPv6 when there is no IPv4 one", []kernelRoute{v6, route("198.51.100.0/24", 254, 0, "192.0.2.9")}, "2001:db8::1"},
		{"another table's default is not the node's", []kernelRoute{route("0.0.0.0/0", 100, 0, "192.0.2.7"), v6}, "2001:db8::1"},
		{"a default route with no next hop (a point-to-point link)", []kernelRoute{route("0.0.0.0/0", 254, 0, "")}, ""},
		{"a blackhole default is no gateway", []kernelRoute{{Type: "blackhole", Destination: "0.0.0.0/0", Table: 254}}, ""},
		{"none", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := defaultGateway(tc.routes)
			if want := tc.want; (want == "" && got.IsValid()) || (want != "" && got != netip.MustParseAddr(want)) {
				t.Errorf("got %v, want %q", got, want)
			}
		})
	}
}
