package networkmanager

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager/nmdbus"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

func TestScopeOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		desired string
		want    []string // nil: the whole node
	}{
		{"interfaces and their routes' next hops", `{"interfaces":[{"name":"eth1","type":"ethernet","state":"up"}],
			"routes":{"config":[{"destination":"0.0.0.0/0","next-hop-address":"192.0.2.254","next-hop-interface":"eth2"}]}}`, []string{"eth1", "eth2"}},
		{"ports, base interfaces and controllers", `{"interfaces":[{"name":"bond0","type":"bond","state":"up","link-aggregation":{"mode":"active-backup","port":["eth1","eth2"]}},
			{"name":"bond0.10","type":"vlan","state":"up","vlan":{"base-iface":"bond0","id":10}},{"name":"eth3","type":"ethernet","state":"up","controller":"br0"}]}`,
			[]string{"bond0", "bond0.10", "br0", "eth1", "eth2", "eth3"}},
		{"a MAC address's source", `{"interfaces":[{"name":"br0","type":"linux-bridge","state":"up","copy-mac-from":"eth1"}]}`, []string{"br0", "eth1"}},
		{"nothing named", `{}`, []string{}},
		{"absent", `{"interfaces":[{"name":"vlan10","state":"absent"}]}`, []string{"vlan10"}},
		{"an identifier", `{"interfaces":[{"name":"uplink","type":"ethernet","state":"up","identifier":"mac-address","mac-address":"02:00:00:00:00:01"}]}`, nil},
		{"Open vSwitch", `{"interfaces":[{"name":"br-ex","type":"ovs-bridge","state":"up"}]}`, nil},
		{"InfiniBand", `{"interfaces":[{"name":"ib0","type":"infiniband","state":"up","infiniband":{"mode":"datagram"}}]}`, nil},
		{"leaving a controller", `{"interfaces":[{"name":"eth1","type":"ethernet","state":"up","controller":""}]}`, nil},
		{"DNS", `{"dns-resolver":{"config":{"server":["192.0.2.53"]}}}`, nil},
		{"route rules", `{"route-rules":{"config":[{"ip-to":"192.0.2.0/24","route-table":100}]}}`, nil},
		{"a route removal", `{"routes":{"config":[{"destination":"0.0.0.0/0","state":"absent"}]}}`, nil},
		{"a route with no next hop", `{"routes":{"config":[{"destination":"198.51.100.0/24","route-type":"blackhole"}]}}`, nil},
		{"a route in a VRF", `{"routes":{"config":[{"destination":"198.51.100.0/24","next-hop-interface":"eth1","vrf-name":"vrf0"}]}}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var desired state.State
			if err := json.Unmarshal([]byte(tc.desired), &desired); err != nil {
				t.Fatal(err)
			}
			sc := scopeOf(desired)
			if !reflect.DeepEqual(sc.names, tc.want) {
				t.Errorf("scope %v (%s), want %v", sc.names, sc, tc.want)
			}
			if (sc.names == nil) != (sc.whole != "") {
				t.Errorf("whole %q with names %v: one or the other", sc.whole, sc.names)
			}
		})
	}
}

// recordedObjects answers a read by name from a whole read recorded on a real node.
type recordedObjects objects

func (r recordedObjects) deviceNamed(_ context.Context, name string) (dbus.ObjectPath, error) {
	var found []dbus.ObjectPath
	for p, ifaces := range r {
		props, ok := ifaces[nmdbus.DeviceIface]
		if n, _ := props["Interface"].Value().(string); ok && n == name {
			found = append(found, p)
		}
	}
	slices.Sort(found)
	if len(found) == 0 {
		return "", nil
	}
	return found[0], nil
}

func (r recordedObjects) properties(_ context.Context, path dbus.ObjectPath, iface string) (map[string]dbus.Variant, error) {
	return r[path][iface], nil
}

// TestReadNamedTranslatesAsTheWholeRead reads, from each snapshot recorded on a real
// node, what the verification of its desired state reads by name, as the bus would answer
// it; the interfaces it translates to are the whole read's, and the desired state verifies
// the same against both.
func TestReadNamedTranslatesAsTheWholeRead(t *testing.T) {
	files, err := filepath.Glob("testdata/snapshots/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded snapshots: %v", err)
	}
	var byName int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			Where    string      `json:"where"`
			Desired  state.State `json:"desired"`
			Snapshot Snapshot    `json:"snapshot"`
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatal(err)
		}
		sc := scopeOf(rec.Desired)
		if sc.names == nil {
			continue
		}
		objs, ok, err := readNamed(context.Background(), recordedObjects(rec.Snapshot.Objects), sc.names, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			continue // an Open vSwitch device named
		}
		forState, _, err := readNamed(context.Background(), recordedObjects(rec.Snapshot.Objects), sc.names, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		byName++
		// The devices, as the apply's read of the host has them (a profile active on one, a
		// permanent MAC address to copy).
		wholeDevs := map[string]device{}
		for _, d := range rec.Snapshot.Objects.devices() {
			wholeDevs[d.key] = d
		}
		for _, d := range objs.devices() {
			if want := wholeDevs[d.key]; !reflect.DeepEqual(d, want) {
				t.Errorf("%s: device %s read by name: %+v, whole: %+v", rec.Where, d.key, d, want)
			}
		}
		named := partOf(rec.Snapshot, forState)
		whole, got := rec.Snapshot.State(), named.State()
		wholeByKey := map[string]state.Interface{}
		for _, it := range whole.Interfaces {
			wholeByKey[it.Key()] = it
		}
		for _, it := range got.Interfaces {
			if want := wholeByKey[it.Key()]; !reflect.DeepEqual(it, want) {
				g, _ := json.Marshal(it)
				w, _ := json.Marshal(want)
				t.Errorf("%s: %s read by name:\n%s\nwhole:\n%s", rec.Where, it.Key(), g, w)
			}
		}
		for _, want := range rec.Desired.Interfaces {
			if _, exists := wholeByKey[want.Key()]; exists && !slices.ContainsFunc(got.Interfaces, func(it state.Interface) bool { return it.Key() == want.Key() }) {
				t.Errorf("%s: %s is not read by name", rec.Where, want.Key())
			}
		}
		desired := rec.Desired
		desired.OVN = nil // Open vSwitch's database, not NetworkManager's
		if w, g := state.Verify(desired, whole), state.Verify(desired, got); !slices.Equal(w, g) {
			t.Errorf("%s: verified against the read by name:\n%s\nagainst the whole read:\n%s", rec.Where, strings.Join(g, "\n"), strings.Join(w, "\n"))
		}
		// Something the desired state does not run must read as not converged either way.
		for _, want := range desired.Interfaces {
			if want.State != state.Up {
				continue
			}
			mtu := 1234
			if want.MTU != nil {
				mtu = *want.MTU + 1
			}
			off := desired
			off.Interfaces = slices.Clone(desired.Interfaces)
			for i := range off.Interfaces {
				if off.Interfaces[i].Key() == want.Key() {
					off.Interfaces[i].MTU = &mtu
				}
			}
			if w, g := state.Verify(off, whole), state.Verify(off, got); len(g) == 0 || !slices.Equal(w, g) {
				t.Errorf("%s: %s with MTU %d: by name %v, whole %v", rec.Where, want.Key(), mtu, g, w)
			}
			break
		}
	}
	if byName < 10 {
		t.Errorf("only %d recorded snapshots have a desired state read by name", byName)
	}
}

// partOf is the snapshot a read of objs by name completes (snapshotOf): what it reads of
// the applied profiles and the kernel is its devices'.
func partOf(whole Snapshot, objs objects) Snapshot {
	part := Snapshot{Objects: objs, Applied: map[string]settings{}, VFs: map[string]*state.SRIOVConfig{}, Ethtool: map[string]*kernelEthtool{},
		Sysfs: map[string]map[string]string{}}
	for _, d := range objs.devices() {
		if a, ok := whole.Applied[d.key]; ok && d.state == deviceStateActivated {
			part.Applied[d.key] = a
		}
		if v, ok := whole.VFs[d.name]; ok {
			part.VFs[d.name] = v
		}
		if e, ok := whole.Ethtool[d.name]; ok {
			part.Ethtool[d.name] = e
		}
		if s, ok := whole.Sysfs[d.name]; ok {
			part.Sysfs[d.name] = s
		}
	}
	if routeAttributesApplied(part.Applied) {
		part.KernelRoutes = whole.KernelRoutes
	}
	return part
}

// A read by name follows ports down (a bond in a bridge), checks a known path's name, and
// gives way to the whole read for an Open vSwitch device.
func TestReadNamedFollowsPorts(t *testing.T) {
	dev := func(name string, nmType uint32, ports ...dbus.ObjectPath) map[string]map[string]dbus.Variant {
		props := map[string]dbus.Variant{"Interface": dbus.MakeVariant(name), "DeviceType": dbus.MakeVariant(nmType)}
		if ports != nil {
			props["Ports"] = dbus.MakeVariant(ports)
		}
		return map[string]map[string]dbus.Variant{nmdbus.DeviceIface: props}
	}
	path := func(i int) dbus.ObjectPath {
		return dbus.ObjectPath(fmt.Sprintf("/org/freedesktop/NetworkManager/Devices/%d", i))
	}
	node := recordedObjects{
		path(1): dev("br0", 13, path(2)), path(2): dev("bond0", 10, path(3), path(4)),
		path(3): dev("eth1", 1), path(4): dev("eth2", 1), path(5): dev("eth9", 1), path(6): dev("br-ex", 26),
	}
	for _, tc := range []struct {
		name  string
		names []string
		known map[string]dbus.ObjectPath
		want  []dbus.ObjectPath // nil: the whole node must be read
	}{
		{"a bridge, its bond and the bond's ports", []string{"br0"}, nil, []dbus.ObjectPath{path(1), path(2), path(3), path(4)}},
		{"a port alone", []string{"eth1"}, nil, []dbus.ObjectPath{path(3)}},
		{"a known path now another device's", []string{"eth1"}, map[string]dbus.ObjectPath{"eth1": path(5)}, []dbus.ObjectPath{path(3)}},
		{"a known path", []string{"eth9"}, map[string]dbus.ObjectPath{"eth9": path(5)}, []dbus.ObjectPath{path(5)}},
		{"no such interface", []string{"eth7"}, nil, []dbus.ObjectPath{}},
		{"Open vSwitch", []string{"eth9", "br-ex"}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, ok, err := readNamed(context.Background(), node, tc.names, tc.known, true)
			if err != nil {
				t.Fatal(err)
			}
			if ok != (tc.want != nil) {
				t.Fatalf("ok %t, want %t", ok, tc.want != nil)
			}
			if !ok {
				return
			}
			got := []dbus.ObjectPath{}
			for p := range objs {
				if p != nmdbus.DNSManagerPath {
					got = append(got, p)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("read %v, want %v", got, tc.want)
			}
		})
	}
}
