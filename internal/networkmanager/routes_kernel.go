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

// readKernelRoutes dumps the kernel's unicast routes of both families (rtnetlink).
func readKernelRoutes() ([]kernelRoute, error) {
	b, err := syscall.NetlinkRIB(unix.RTM_GETROUTE, unix.AF_UNSPEC)
	if err != nil {
		return nil, fmt.Errorf("dumping the kernel's routes: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(b)
	if err != nil {
		return nil, fmt.Errorf("dumping the kernel's routes: %w", err)
	}
	names := map[uint32]string{}
	if links, err := net.Interfaces(); err == nil {
		for _, l := range links {
			names[uint32(l.Index)] = l.Name
		}
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
