package state

import (
	"encoding/json"
	"testing"
)

// A state copied from a NodeNetworkState parses: what nmstate reports and ignores when
// applying (MTU bounds, the permanent MAC address, address lifetimes under each of their
// names, a VF's interface name, the running routes and DNS) is dropped, and the rest is
// kept (a PCI address without identifier pci-address, which only that identifier acts
// on); ” for an OVS bridge's fail mode and datapath sets neither, and 802.1q is the
// VLAN protocol already.
func TestQueryOnlyIgnored(t *testing.T) {
	s, err := Parse([]byte(`
interfaces:
- name: eth1
  type: ethernet
  state: up
  pci-address: "0000:00:04.0"
  mtu: 1500
  min-mtu: 68
  max-mtu: 9000
  permanent-mac-address: 52:54:00:00:00:01
  ipv4:
    enabled: true
    address:
    - {ip: 192.0.2.10, prefix-length: 24, valid-life-time: forever, preferred-life-time: forever}
    - {ip: 192.0.2.11, prefix-length: 24, valid-lft: 3600sec, preferred-lft: 3600sec, valid-left: 1sec, preferred-left: 1sec}
  ethernet:
    sr-iov:
      total-vfs: 1
      vfs: [{id: 0, iface-name: eth1v0, trust: true}]
- name: eth1.10
  type: vlan
  vlan: {id: 10, base-iface: eth1, protocol: 802.1q}
- name: br1
  type: ovs-bridge
  bridge:
    options: {fail-mode: '', datapath: ''}
    port: [{name: eth2}]
routes:
  running:
  - {destination: 0.0.0.0/0, next-hop-address: 192.0.2.1, next-hop-interface: eth1}
  config:
  - {destination: 198.51.100.0/24, next-hop-address: 192.0.2.1, next-hop-interface: eth1}
dns-resolver:
  running: {server: [192.0.2.53]}
  config: {server: [192.0.2.54]}
`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(s)
	want := `{"interfaces":[{"name":"eth1","type":"ethernet","state":"up","pci-address":"0000:00:04.0","mtu":1500,"ipv4":{"enabled":true,"address":[{"ip":"192.0.2.10","prefix-length":24},{"ip":"192.0.2.11","prefix-length":24}]},"ethernet":{"sr-iov":{"total-vfs":1,"vfs":[{"id":0,"trust":true}]}}},` +
		`{"name":"eth1.10","type":"vlan","vlan":{"id":10,"base-iface":"eth1","protocol":"802.1q"}},` +
		`{"name":"br1","type":"ovs-bridge","bridge":{"options":{},"port":[{"name":"eth2"}]}}],` +
		`"routes":{"config":[{"destination":"198.51.100.0/24","next-hop-address":"192.0.2.1","next-hop-interface":"eth1"}]},` +
		`"dns-resolver":{"config":{"server":["192.0.2.54"]}}}`
	if string(b) != want {
		t.Errorf("parsed:\n%s\nwant\n%s", b, want)
	}
}
