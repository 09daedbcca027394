package networkmanager

import (
	"strings"
	"testing"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

const persistSample = `{"interfaces":[
 {"name":"eth0","type":"ethernet","state":"up"},{"name":"eth1","type":"ethernet","state":"up"},
 {"name":"bond0","type":"bond","state":"up","link-aggregation":{"mode":"active-backup","options":{"miimon":"100"},"port":["eth0","eth1"]},
  "ipv4":{"enabled":true,"dhcp":false,"address":[{"ip":"192.0.2.10","prefix-length":24}]},"ipv6":{"enabled":false}},
 {"name":"bond0.100","type":"vlan","state":"up","vlan":{"base-iface":"bond0","id":100},"ipv4":{"enabled":true,"dhcp":true},"ipv6":{"enabled":true,"autoconf":true,"dhcp":true}}],
 "routes":{"config":[{"destination":"0.0.0.0/0","next-hop-address":"192.0.2.1","next-hop-interface":"bond0"},
  {"destination":"198.51.100.0/24","next-hop-address":"192.0.2.2","next-hop-interface":"bond0","table-id":100,"metric":50}]},
 "route-rules":{"config":[{"ip-from":"192.0.2.0/24","route-table":100,"priority":3000}]},
 "dns-resolver":{"config":{"server":["192.0.2.53"],"search":["example.com"]}}}`

func TestPersistentKeyfiles(t *testing.T) {
	desired, err := state.Parse([]byte(persistSample))
	if err != nil {
		t.Fatal(err)
	}
	files, err := PersistentKeyfiles(desired)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := PersistentKeyfiles(desired)
	byName := map[string]string{}
	for i, f := range files {
		byName[f.Name] = string(f.Content)
		if string(again[i].Content) != string(f.Content) {
			t.Errorf("%s: rendered differently the second time (its UUID must follow from the interface)", f.Name)
		}
		t.Logf("%s:\n%s", f.Name, f.Content)
	}
	for name, wants := range map[string][]string{
		"bond0.nmconnection": {"[connection]\nautoconnect=true\n", "type=bond\n", "[bond]\nmiimon=100\nmode=active-backup\n",
			"address1=192.0.2.10/24\n", "route1=0.0.0.0/0,192.0.2.1\n", "route2=198.51.100.0/24,192.0.2.2,50\n", "route2_options=table=100\n",
			"routing-rule1=priority 3000 from 192.0.2.0/24 table 100\n", "dns=192.0.2.53;\n", "dns-search=example.com;\n", "method=manual\n"},
		"eth0.nmconnection":      {"master=bond0\n", "slave-type=bond\n"},
		"bond0.100.nmconnection": {"[vlan]\nid=100\nparent=bond0\n"},
	} {
		for _, w := range wants {
			if !strings.Contains(byName[name], w) {
				t.Errorf("%s lacks %q:\n%s", name, w, byName[name])
			}
		}
		if strings.Contains(byName[name], "nmoverlay.") {
			t.Errorf("%s carries the engine's marks:\n%s", name, byName[name])
		}
	}
}

func TestPersistentKeyfilesRefuse(t *testing.T) {
	for _, tc := range []struct{ desired, want string }{
		{`{"interfaces":[{"name":"br9","type":"linux-bridge","state":"absent"}]}`, "interfaces[0].state: absent removes or stops what a node runs"},
		{`{"interfaces":[{"name":"br9","type":"linux-bridge","state":"up","bridge":{"port":[{"name":"eth5"}]}}]}`, "name it among the interfaces with its type"},
		{`{"routes":{"config":[{"destination":"0.0.0.0/0","next-hop-interface":"eth0","state":"absent"}]}}`, "routes.config[0].state: absent removes a route"},
	} {
		desired, err := state.Parse([]byte(tc.desired))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := PersistentKeyfiles(desired); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.desired, err, tc.want)
		}
	}
}
