package networkmanager

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"syscall"

	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// kernelRoute is a route as the kernel runs it, with what NetworkManager's RouteData
// leaves out: its preferred source, its locked congestion window, and the routes that
// drop what they match (RouteData has unicast routes alone).
type kernelRoute struct {
	// Type is blackhole, unreachable or prohibit; "" for a unicast route.
	Type        string `json:"type,omitempty"`
	Destination string `json:"destination"`
	Interface   string `json:"interface,omitempty"`
	Table       int    `json:"table"`
	Metric      int    `json:"metric"`
	Source      string `json:"source,omitempty"`
	Cwnd        int    `json:"cwnd,omitempty"` // 0: none locked
	// Gateway is the next hop (a multipath route's first); only KernelDefaultGateway
	// reads it: the model's routes take theirs from NetworkManager.
	Gateway netip.Addr `json:"-"`
}

// From linux/rtnetlink.h (not in x/sys/unix).
const (
	rtaxLock = 1
	rtaxCwnd = 7
)

// routeAttributesApplied says whether an applied profile has a route with what only the
// kernel reports back: reading the kernel's routes costs a dump, which is skipped without.
func routeAttributesApplied(applied map[string]settings) bool {
	for _, a := range applied {
		for _, fam := range ipFamilies {
			if slices.ContainsFunc(dictList(a[fam]["route-data"]), func(r map[string]dbus.Variant) bool {
				_, src := r["src"]
				_, cwnd := r["cwnd"]
				_, typ := r["type"]
				return src || cwnd || typ
			}) {
				return true
			}
		}
	}
	return false
}

// readKernelRoutes dumps the kernel's unicast routes of both families (rtnetlink), each
// with its interface's name.
func readKernelRoutes() ([]kernelRoute, error) {
	names := map[uint32]string{}
	if links, err := net.Interfaces(); err == nil {
		for _, l := range links {
			names[uint32(l.Index)] = l.Name
		}
	}
	return dumpKernelRoutes(names)
}

// dumpKernelRoutes dumps the kernel's routes, naming their interfaces from names (nil:
// unnamed).
func dumpKernelRoutes(names map[uint32]string) ([]kernelRoute, error) {
	b, err := syscall.NetlinkRIB(unix.RTM_GETROUTE, unix.AF_UNSPEC)
	if err != nil {
		return nil, fmt.Errorf("dumping the kernel's routes: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(b)
	if err != nil {
		return nil, fmt.Errorf("dumping the kernel's routes: %w", err)
	}
	var out []kernelRoute
	for i := range msgs {
		m := &msgs[i]
		if m.Header.Type != unix.RTM_NEWROUTE || len(m.Data) < unix.SizeofRtMsg {
			continue
		}
		if r, ok := parseKernelRoute(m.Data, names); ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// parseKernelRoute reads one RTM_NEWROUTE payload: struct rtmsg, then its attributes.
func parseKernelRoute(data []byte, names map[uint32]string) (kernelRoute, bool) {
	family, dstLen, table, typ := data[0], int(data[1]), int(data[4]), data[7]
	name, known := routeTypes[typ]
	if !known || family != unix.AF_INET && family != unix.AF_INET6 {
		return kernelRoute{}, false
	}
	r := kernelRoute{Type: name, Table: table}
	dst := netip.IPv4Unspecified()
	if family == unix.AF_INET6 {
		dst = netip.IPv6Unspecified()
	}
	u32 := func(b []byte) uint32 {
		if len(b) < 4 {
			return 0
		}
		return binary.NativeEndian.Uint32(b)
	}
	var cwnd, lock uint32
	for _, a := range nested(data[unix.SizeofRtMsg:]) {
		switch a.typ {
		case unix.RTA_DST:
			if ip, ok := netip.AddrFromSlice(a.data); ok {
				dst = ip
			}
		case unix.RTA_PREFSRC:
			if ip, ok := netip.AddrFromSlice(a.data); ok {
				r.Source = ip.String()
			}
		case unix.RTA_OIF:
			r.Interface = names[u32(a.data)]
		case unix.RTA_GATEWAY:
			r.Gateway, _ = netip.AddrFromSlice(a.data)
		case unix.RTA_MULTIPATH:
			r.Gateway = firstNextHop(a.data)
		case unix.RTA_TABLE:
			r.Table = int(u32(a.data))
		case unix.RTA_PRIORITY:
			r.Metric = int(u32(a.data))
		case unix.RTA_METRICS:
			for _, x := range nested(a.data) {
				switch x.typ {
				case rtaxCwnd:
					cwnd = u32(x.data)
				case rtaxLock:
					lock = u32(x.data)
				}
			}
		}
	}
	if lock&(1<<rtaxCwnd) != 0 {
		r.Cwnd = int(cwnd)
	}
	if r.Type != "" {
		r.Interface = "" // the kernel gives an IPv6 one lo's; it has none
	}
	r.Destination = netip.PrefixFrom(dst, dstLen).String()
	return r, true
}

// firstNextHop is the gateway of a multipath route's first next hop: struct rtnexthop
// (8 bytes), then its attributes.
func firstNextHop(data []byte) netip.Addr {
	const sizeofRtNexthop = 8
	if len(data) < sizeofRtNexthop {
		return netip.Addr{}
	}
	l := int(binary.NativeEndian.Uint16(data[0:2]))
	if l < sizeofRtNexthop || l > len(data) {
		return netip.Addr{}
	}
	for _, a := range nested(data[sizeofRtNexthop:l]) {
		if a.typ == unix.RTA_GATEWAY {
			gw, _ := netip.AddrFromSlice(a.data)
			return gw
		}
	}
	return netip.Addr{}
}

// KernelDefaultGateway is the next hop of the default route the kernel routes by now;
// invalid when there is none. The gateway probe reads it before and after every apply:
// a dump of the kernel's routes costs milliseconds, where reading the node from
// NetworkManager (Show) took 0.45 s on 2,000 interfaces, and more while NetworkManager
// was still busy with the apply.
func KernelDefaultGateway() (netip.Addr, error) {
	routes, err := dumpKernelRoutes(nil) // the gateway needs no names: no dump of the links
	if err != nil {
		return netip.Addr{}, err
	}
	return defaultGateway(routes), nil
}

// defaultGateway is state.DefaultGateway's pick among the kernel's unicast routes that
// have a next hop.
func defaultGateway(routes []kernelRoute) netip.Addr {
	s := state.State{Routes: &state.Routes{}}
	for _, r := range routes {
		if r.Type != "" || !r.Gateway.IsValid() {
			continue
		}
		table, metric := r.Table, r.Metric
		s.Routes.Running = append(s.Routes.Running, state.Route{Destination: r.Destination, NextHopAddress: r.Gateway.Unmap().String(), TableID: &table, Metric: &metric})
	}
	return state.DefaultGateway(s)
}

// routeTypes names the kernel's route types nmstate has; unicast is "".
var routeTypes = map[byte]string{unix.RTN_UNICAST: "", unix.RTN_BLACKHOLE: "blackhole", unix.RTN_UNREACHABLE: "unreachable", unix.RTN_PROHIBIT: "prohibit"}

// droppingRoutes are the kernel's routes that drop what they match, as the model says
// them: no next hop, no interface.
func droppingRoutes(kernel []kernelRoute) []state.Route {
	var out []state.Route
	for _, k := range kernel {
		if k.Type != "" {
			table, metric := k.Table, k.Metric
			out = append(out, state.Route{Destination: k.Destination, RouteType: k.Type, TableID: &table, Metric: &metric})
		}
	}
	return out
}

// withKernelAttributes is rt with the source and congestion window of the kernel's route
// that is rt: the same destination, interface, table and metric.
func withKernelAttributes(rt state.Route, kernel []kernelRoute) state.Route {
	for _, k := range kernel {
		if k.Type == "" && k.Destination == rt.Destination && k.Interface == rt.NextHopInterface && k.Table == *rt.TableID &&
			(rt.Metric == nil || *rt.Metric == k.Metric) {
			rt.Source = k.Source
			if k.Cwnd != 0 {
				cwnd := k.Cwnd
				rt.Cwnd = &cwnd
			}
			return rt
		}
	}
	return rt
}
