package state

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestResolveIdentifiers(t *testing.T) {
	devs := []DeviceIdentity{
		{Name: "ens1f0", MAC: "52:54:00:00:00:0a", PermanentMAC: "52:54:00:00:00:0a", PCIAddress: "0000:03:00.0"},
		// bond ports: both run on the bond's address; each keeps its own permanent one.
		{Name: "ens2f0", MAC: "52:54:00:00:00:0b", PermanentMAC: "52:54:00:00:00:0b", PCIAddress: "0000:04:00.0"},
		{Name: "ens2f1", MAC: "52:54:00:00:00:0b", PermanentMAC: "52:54:00:00:00:0c"},
		{Name: "veth9", MAC: "02:00:00:00:00:99"},
		{Name: "vetha", MAC: "02:00:00:00:00:aa"},
		{Name: "vethb", MAC: "02:00:00:00:00:aa"},
	}
	for _, tc := range []struct {
		name, doc, want string
	}{{
		name: "named after its device wherever the state names it (a VLAN's own name is its own); its name names the profile",
		doc: `interfaces:
- {name: uplink, identifier: mac-address, mac-address: "52:54:00:00:00:0A", type: ethernet, mtu: 9000}
- {name: uplink.10, type: vlan, vlan: {base-iface: uplink, id: 10}}
- {name: br0, type: linux-bridge, bridge: {port: [{name: uplink.10}]}}
routes: {config: [{destination: 198.51.100.0/24, next-hop-interface: uplink}]}
route-rules: {config: [{iif: uplink, family: ipv4, route-table: 100}]}`,
		want: `{"interfaces":[{"name":"ens1f0","type":"ethernet","profile-name":"uplink","identifier":"mac-address","mtu":9000,"mac-address":"52:54:00:00:00:0A"},` +
			`{"name":"uplink.10","type":"vlan","vlan":{"id":10,"base-iface":"ens1f0"}},` +
			`{"name":"br0","type":"linux-bridge","bridge":{"port":[{"name":"uplink.10"}]}}],` +
			`"routes":{"config":[{"destination":"198.51.100.0/24","next-hop-interface":"ens1f0"}]},` +
			`"route-rules":{"config":[{"family":"ipv4","route-table":100,"iif":"ens1f0"}]}}`,
	}, {
		name: "a bond's port, and the MAC source of another interface",
		doc: `interfaces:
- {name: uplink, identifier: mac-address, mac-address: "52:54:00:00:00:0a"}
- {name: bond0, type: bond, link-aggregation: {mode: active-backup, port: [uplink, ens2f1]}}
- {name: mv0, type: mac-vlan, copy-mac-from: uplink, mac-vlan: {base-iface: uplink, mode: bridge}}`,
		want: `{"interfaces":[{"name":"ens1f0","profile-name":"uplink","identifier":"mac-address","mac-address":"52:54:00:00:00:0a"},` +
			`{"name":"bond0","type":"bond","link-aggregation":{"mode":"active-backup","port":["ens1f0","ens2f1"]}},` +
			`{"name":"mv0","type":"mac-vlan","copy-mac-from":"ens1f0","mac-vlan":{"base-iface":"ens1f0","mode":"bridge"}}]}`,
	}, {
		name: "a bond's port by its permanent address, and a profile name kept",
		doc:  `interfaces: [{name: p1, profile-name: port-one, identifier: mac-address, mac-address: "52:54:00:00:00:0c"}]`,
		want: `{"interfaces":[{"name":"ens2f1","profile-name":"port-one","identifier":"mac-address","mac-address":"52:54:00:00:00:0c"}]}`,
	}, {
		name: "a device without a permanent address, by its current one",
		doc:  `interfaces: [{name: v, identifier: mac-address, mac-address: "02:00:00:00:00:99"}]`,
		want: `{"interfaces":[{"name":"veth9","profile-name":"v","identifier":"mac-address","mac-address":"02:00:00:00:00:99"}]}`,
	}, {
		name: "no device",
		doc:  `interfaces: [{name: ib0, identifier: mac-address, mac-address: "52:54:00:00:00:ff"}]`,
		want: `interfaces[name=ib0].mac-address: no interface with MAC address 52:54:00:00:00:ff on this node`,
	}, {
		name: "two devices by their current address",
		doc:  `interfaces: [{name: x, identifier: mac-address, mac-address: "02:00:00:00:00:aa"}]`,
		want: `interfaces[name=x].mac-address: 02:00:00:00:00:aa is the MAC address of vetha and vethb: identifier mac-address needs one`,
	}, {
		name: "a bond port's permanent address wins over the bond's running one",
		doc:  `interfaces: [{name: x, identifier: mac-address, mac-address: "52:54:00:00:00:0b"}]`,
		want: `{"interfaces":[{"name":"ens2f0","profile-name":"x","identifier":"mac-address","mac-address":"52:54:00:00:00:0b"}]}`,
	}, {
		name: "by PCI address, a bond's port by its name",
		doc: `interfaces:
- {name: port1, type: ethernet, identifier: pci-address, pci-address: "0000:04:00.0"}
- {name: bond0, type: bond, link-aggregation: {mode: balance-rr, port: [port1]}}`,
		want: `{"interfaces":[{"name":"ens2f0","type":"ethernet","profile-name":"port1","identifier":"pci-address","pci-address":"0000:04:00.0"},` +
			`{"name":"bond0","type":"bond","link-aggregation":{"mode":"balance-rr","port":["ens2f0"]}}]}`,
	}, {
		name: "no device at that PCI address (a veth has none)",
		doc:  `interfaces: [{name: x, identifier: pci-address, pci-address: "0000:09:00.0"}]`,
		want: `interfaces[name=x].pci-address: no interface with PCI address 0000:09:00.0 on this node`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			got, errs := ResolveIdentifiers(s, devs)
			if errs != nil {
				if !strings.HasPrefix(errs.Error(), tc.want) {
					t.Errorf("error %v, want %s", errs, tc.want)
				}
				return
			}
			b, _ := json.Marshal(got)
			if string(b) != tc.want {
				t.Errorf("\n got %s\nwant %s", b, tc.want)
			}
		})
	}
}
