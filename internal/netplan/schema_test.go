package netplan

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/nmoverlay/nmoverlay/internal/backend"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		wantErr   string // "" accepts
	}{
		{"netplan's example, renderer added", `{"network":{"version":2,"ethernets":{"eth1":{"dhcp4":false,"addresses":["10.10.10.10/24"]}}}}`, ""},
		{"YAML as well as JSON", "network:\n  version: 2\n  renderer: NetworkManager\n  bonds:\n    bond0: {interfaces: [eth1, eth2]}\n", ""},
		{"nmstate's schema names both", `{"interfaces":[{"name":"eth1","type":"ethernet"}]}`, "interfaces: this is nmstate's schema (interfaces, routes, ...); this node's backend is netplan"},
		{"captured nmstate routes too", `{"routes":{"config":[]}}`, "routes: this is nmstate's schema"},
		{"another top-level key", `{"network":{"version":2},"extra":1}`, "extra: not netplan's"},
		{"no network", `{}`, "network: missing"},
		{"version 1", `{"network":{"version":1}}`, "network.version: 1, want 2"},
		{"networkd", `{"network":{"version":2,"renderer":"networkd"}}`, "network.renderer: networkd: nmoverlay renders netplan through NetworkManager"},
		{"a device rendered by networkd", `{"network":{"version":2,"ethernets":{"eth1":{"renderer":"networkd"}}}}`, "network.ethernets.eth1.renderer: networkd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Schema{}.Parse([]byte(tc.raw))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if r := got.(map[string]any)["renderer"]; r != Renderer {
					t.Errorf("renderer %v, want %s", r, Renderer)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func parsed(t *testing.T, policy, raw string) backend.Parsed {
	t.Helper()
	s, err := Schema{}.Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return backend.Parsed{Policy: policy, State: s}
}

func TestMergeKeepsDocumentsAndNamesConflicts(t *testing.T) {
	a := parsed(t, "a", `{"network":{"version":2,"ethernets":{"eth1":{"mtu":9000}}}}`)
	b := parsed(t, "b", `{"network":{"version":2,"ethernets":{"eth1":{"mtu":9000},"eth2":{}}}}`)
	desired, owners, err := Schema{}.Merge([]backend.Parsed{a, b})
	if err != nil {
		t.Fatalf("the same definition in two policies: %v", err)
	}
	cfg, err := ConfigOf(desired)
	if err != nil || len(cfg.Documents) != 2 || cfg.Documents[0].Policy != "a" {
		t.Fatalf("config %+v, %v", cfg, err)
	}
	if got := strings.Join(owners["eth1"], ","); got != "a,b" {
		t.Errorf("eth1 owned by %s", got)
	}
	c := parsed(t, "c", `{"network":{"version":2,"ethernets":{"eth1":{"mtu":1500}}}}`)
	_, _, err = Schema{}.Merge([]backend.Parsed{a, c})
	var conflicts state.Conflicts
	if !errors.As(err, &conflicts) || len(conflicts) != 1 || conflicts[0].Path != "network.ethernets.eth1" ||
		strings.Join(conflicts[0].Policies, ",") != "a,c" {
		t.Errorf("conflict %v", err)
	}
}

func TestExpected(t *testing.T) {
	doc := parsed(t, "p", `{"network":{"version":2,
		"ethernets":{"eth1":{"addresses":["192.0.2.10/24",{"2001:db8::1/64":{"label":"x"}}],"mtu":9000,
			"routes":[{"to":"default","via":"192.0.2.1"},{"to":"203.0.113.7","via":"192.0.2.1","metric":300,"table":200}]},
			"eth2":{"dhcp4":true},
			"nic":{"match":{"macaddress":"52:54:00:00:00:01"}},
			"nic2":{"match":{"macaddress":"52:54:00:00:00:02"},"set-name":"lan0"}},
		"bonds":{"bond0":{"interfaces":["eth3","eth4"],"parameters":{"mode":"active-backup"}}},
		"bridges":{"br0":{"interfaces":["bond0"],"parameters":{"stp":false}}},
		"vlans":{"vlan10":{"id":10,"link":"br0"}}}}`)
	got := Expected(Config{Documents: []Document{{Policy: "p", Network: doc.State.(map[string]any)}}})
	js, _ := json.Marshal(got)
	for _, want := range []string{
		`{"name":"eth1","type":"ethernet","state":"up","mtu":9000,"ipv4":{"enabled":true,"address":[{"ip":"192.0.2.10","prefix-length":24}]},"ipv6":{"enabled":true,"address":[{"ip":"2001:db8::1","prefix-length":64}]}}`,
		`{"name":"eth2","type":"ethernet","state":"up","ipv4":{"enabled":true,"dhcp":true}}`,
		`{"name":"lan0","type":"ethernet","state":"up"}`,
		`"link-aggregation":{"mode":"active-backup","port":["eth3","eth4"]}`,
		`"bridge":{"options":{"stp":{"enabled":false}},"port":[{"name":"bond0"}]}`,
		`"vlan":{"id":10,"base-iface":"br0"}`,
		`{"destination":"0.0.0.0/0","next-hop-address":"192.0.2.1","next-hop-interface":"eth1"}`,
		`{"destination":"203.0.113.7/32","next-hop-address":"192.0.2.1","next-hop-interface":"eth1","metric":300,"table-id":200}`,
	} {
		if !strings.Contains(string(js), want) {
			t.Errorf("missing %s in\n%s", want, js)
		}
	}
	if strings.Contains(string(js), `"nic"`) {
		t.Errorf("a device matched by MAC and not renamed has no name to check: %s", js)
	}
}

func TestRefusalNamesThePoliciesNetplanQuotes(t *testing.T) {
	cfg := Config{Documents: []Document{{Policy: "good"}, {Policy: "bad"}}}
	err := refusal(cfg, "/run/netplan/90-nmoverlay-bad.yaml:3:19: Error in network definition: invalid boolean value 'maybe'", nil)
	var r *backend.PoliciesRefused
	if !errors.As(err, &r) || len(r.Reasons) != 1 || !strings.Contains(r.Reasons["bad"], "netplan: /run/netplan/90-nmoverlay-bad.yaml:3:19") {
		t.Errorf("refusal %v", err)
	}
	err = refusal(cfg, "/etc/netplan/00-node.yaml:1:1: Error in network definition: ...", nil)
	if !errors.As(err, &r) || len(r.Reasons) != 2 {
		t.Errorf("the node's own file blames every policy: %v", err)
	}
}
