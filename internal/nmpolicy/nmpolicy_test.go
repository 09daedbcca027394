package nmpolicy

import (
	"encoding/json"
	"strings"
	"testing"
)

// current is a node as Show reports it: eth0 carries the default route and a static
// address, eth1 is down, and LLDP names the switch port behind eth1.
const current = `{
  "interfaces": [
    {"name": "eth0", "type": "ethernet", "state": "up", "mac-address": "52:54:00:00:00:01", "mtu": 1500,
     "ipv4": {"enabled": true, "dhcp": false, "address": [{"ip": "192.0.2.10", "prefix-length": 24}]}},
    {"name": "eth1", "type": "ethernet", "state": "down", "mtu": 9000,
     "lldp": {"enabled": true, "neighbors": [[{"type": 5, "system-name": "tor-1"}, {"type": 2, "port-id": "Ethernet12"}]]}},
    {"name": "lo", "type": "loopback", "state": "up"}
  ],
  "routes": {
    "running": [
      {"destination": "0.0.0.0/0", "next-hop-address": "192.0.2.1", "next-hop-interface": "eth0", "metric": 100, "table-id": 254},
      {"destination": "192.0.2.0/24", "next-hop-interface": "eth0", "metric": 100, "table-id": 254},
      {"destination": "198.51.100.0/24", "next-hop-interface": "eth1", "metric": 101, "table-id": 254}
    ],
    "config": [
      {"destination": "0.0.0.0/0", "next-hop-address": "192.0.2.1", "next-hop-interface": "eth0"}
    ]
  },
  "route-rules": {"config": [{"ip-from": "192.0.2.0/24", "route-table": 100, "priority": 3000}]}
}`

func tree(t *testing.T, doc string) Tree {
	t.Helper()
	tr, err := ToTree([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// The documented captures (OpenShift's "bridge on the NIC of the default route, keeping
// its address", kubernetes-nmstate's examples) and each kind of expression.
func TestEvaluate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		captures map[string]string
		want     map[string]string // capture → its result as JSON
	}{{
		name: "default gateway, its interface and its routes, moved to a bridge",
		captures: map[string]string{
			"default-gw":        `routes.running.destination=="0.0.0.0/0"`,
			"base-iface":        `interfaces.name==capture.default-gw.routes.running.0.next-hop-interface`,
			"base-iface-routes": `routes.running.next-hop-interface==capture.default-gw.routes.running.0.next-hop-interface`,
			"bridge-routes":     `capture.base-iface-routes | routes.running.next-hop-interface:="br1"`,
		},
		want: map[string]string{
			"default-gw": `{"routes":{"running":[{"destination":"0.0.0.0/0","metric":100,"next-hop-address":"192.0.2.1","next-hop-interface":"eth0","table-id":254}]}}`,
			"base-iface": `{"interfaces":[{"ipv4":{"address":[{"ip":"192.0.2.10","prefix-length":24}],"dhcp":false,"enabled":true},"mac-address":"52:54:00:00:00:01","mtu":1500,"name":"eth0","state":"up","type":"ethernet"}]}`,
			"base-iface-routes": `{"routes":{"running":[{"destination":"0.0.0.0/0","metric":100,"next-hop-address":"192.0.2.1","next-hop-interface":"eth0","table-id":254},` +
				`{"destination":"192.0.2.0/24","metric":100,"next-hop-interface":"eth0","table-id":254}]}}`,
			"bridge-routes": `{"routes":{"running":[{"destination":"0.0.0.0/0","metric":100,"next-hop-address":"192.0.2.1","next-hop-interface":"br1","table-id":254},` +
				`{"destination":"192.0.2.0/24","metric":100,"next-hop-interface":"br1","table-id":254}]}}`,
		},
	}, {
		name:     "numbers compare as written, unquoted",
		captures: map[string]string{"jumbo": `interfaces.mtu == 9000`},
		want:     map[string]string{"jumbo": `{"interfaces":[` + mustIface(t, "eth1") + `]}`},
	}, {
		name:     "LLDP: the interface facing a switch, by index into its neighbours",
		captures: map[string]string{"uplink": `interfaces.lldp.neighbors.0.0.system-name == "tor-1"`},
		want:     map[string]string{"uplink": `{"interfaces":[` + mustIface(t, "eth1") + `]}`},
	}, {
		name:     "null matches entries without the field",
		captures: map[string]string{"no-mtu": `interfaces.mtu == null`},
		want:     map[string]string{"no-mtu": `{"interfaces":[{"name":"lo","state":"up","type":"loopback"}]}`},
	}, {
		name:     "config routes and route rules",
		captures: map[string]string{"static": `routes.config.next-hop-interface == "eth0"`, "rule": `route-rules.config.route-table == 100`},
		want: map[string]string{
			"static": `{"routes":{"config":[{"destination":"0.0.0.0/0","next-hop-address":"192.0.2.1","next-hop-interface":"eth0"}]}}`,
			"rule":   `{"route-rules":{"config":[{"ip-from":"192.0.2.0/24","priority":3000,"route-table":100}]}}`,
		},
	}, {
		name: "replace creates the objects on its path and keeps types",
		captures: map[string]string{
			"eth0":   `interfaces.name == "eth0"`,
			"jumbo0": `capture.eth0 | interfaces.ethernet.speed := 1000`,
		},
		want: map[string]string{
			"jumbo0": `{"interfaces":[{"ethernet":{"speed":1000},"ipv4":{"address":[{"ip":"192.0.2.10","prefix-length":24}],"dhcp":false,"enabled":true},"mac-address":"52:54:00:00:00:01","mtu":1500,"name":"eth0","state":"up","type":"ethernet"}]}`,
		},
	}, {
		name:     "a bare path keeps that section; a bare capture copies it",
		captures: map[string]string{"rules": `route-rules`, "eth0": `interfaces.name=="eth0"`, "copy": `capture.eth0`, "only-ifaces": `capture.rules | interfaces`},
		want: map[string]string{
			"rules":       `{"route-rules":{"config":[{"ip-from":"192.0.2.0/24","priority":3000,"route-table":100}]}}`,
			"copy":        `{"interfaces":[` + mustIface(t, "eth0") + `]}`,
			"only-ifaces": `{}`,
		},
	}, {
		name:     "a value read from the current state",
		captures: map[string]string{"same-mtu": `interfaces.mtu == interfaces.0.mtu`},
		want:     map[string]string{"same-mtu": `{"interfaces":[` + mustIface(t, "eth0") + `]}`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := Evaluate(tc.captures, tree(t, current), nil)
			if errs != nil {
				t.Fatal(errs)
			}
			for name, want := range tc.want {
				if js(got[name]) != want {
					t.Errorf("%s:\n got %s\nwant %s", name, js(got[name]), want)
				}
			}
			if len(got) != len(tc.captures) {
				t.Errorf("got %d results for %d captures", len(got), len(tc.captures))
			}
		})
	}
}

func mustIface(t *testing.T, name string) string {
	for _, i := range tree(t, current)["interfaces"].([]any) {
		if i.(map[string]any)["name"] == name {
			return js(i)
		}
	}
	t.Fatalf("no %s", name)
	return ""
}

// A cached result is used as it is and not evaluated again, and the captures reading it
// see the cached value: after a reboot the default route is on br1, yet the policy
// renders what was captured first.
func TestEvaluateKeepsCached(t *testing.T) {
	captures := map[string]string{
		"default-gw": `routes.running.destination=="0.0.0.0/0"`,
		"base-iface": `interfaces.name==capture.default-gw.routes.running.0.next-hop-interface`,
	}
	first, errs := Evaluate(captures, tree(t, current), nil)
	if errs != nil {
		t.Fatal(errs)
	}
	after := strings.ReplaceAll(current, `"next-hop-interface": "eth0"`, `"next-hop-interface": "br1"`)
	again, errs := Evaluate(captures, tree(t, after), first)
	if errs != nil {
		t.Fatal(errs)
	}
	if js(again) != js(first) {
		t.Errorf("cached results changed:\n got %s\nwant %s", js(again), js(first))
	}
	// Only default-gw cached: base-iface is evaluated from it, not from the new state.
	partial, errs := Evaluate(captures, tree(t, after), map[string]Tree{"default-gw": first["default-gw"]})
	if errs != nil {
		t.Fatal(errs)
	}
	if js(partial["base-iface"]) != js(first["base-iface"]) {
		t.Errorf("base-iface evaluated from the new state: %s", js(partial["base-iface"]))
	}
	// Without the cache the capture follows the node: br1 is not an interface here.
	if _, errs := Evaluate(captures, tree(t, after), nil); errs == nil || !strings.Contains(errs.Error(), `no interface has name == "br1"`) {
		t.Errorf("want base-iface to find no br1, got %v", errs)
	}
}

// Every error names the capture, the position and the reason.
func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want string
	}{
		{``, `capture.c: empty expression (at character 1 of: )`},
		{`interfaces.name = "eth0"`, `expected "==", not a lone "=" (at character 17`},
		{`interfaces.name != "eth0"`, `unknown operator: an expression uses == or := (at character 17`},
		{`interfaces.name == "eth0`, `no closing double quote (at character 20`},
		{`interfaces.name ==`, `no value after == (at character 17`},
		{`interfaces.name == "a" "b"`, `one value after ==, a quoted string, a word, a path or null (at character 24`},
		{`interfaces.name == "a" == "b"`, `one == or := at most in an expression (at character 24`},
		{`interfaces == "eth0"`, `no interface field after interfaces: interfaces.name == ... (at character 1`},
		{`routes.destination == "0.0.0.0/0"`, `a route path is routes.running.FIELD or routes.config.FIELD (at character 1`},
		{`route-rules.running.priority == 1`, `a route rule path is route-rules.config.FIELD (at character 1`},
		{`dns-resolver.config.server == "a"`, `== matches or sets entries of interfaces, routes or route-rules, not "dns-resolver" (at character 1`},
		{`interfaces | interfaces.name == "a"`, `what a pipe reads must be one capture: capture.NAME | ..., not "interfaces" (at character 1`},
		{`capture.a |`, `nothing after the pipe`},
		{`capture.a | interfaces.name == "a" | x`, `one pipe at most`},
		{`capture.a | capture.b.interfaces.name == "x"`, `the path reads capture "b", but the pipe already gives capture "a" (at character 13`},
		{`capture.a == "x"`, `no property path after the capture name (at character 1`},
		{`interfaces..name == "x"`, `empty key in path "interfaces..name" (at character 1`},
		{`interfaces.name == capture.a`, `no property path after the capture name: capture.a.PATH (at character 20`},
		{`interfaces.name == capture.undefined.interfaces.0.name`, `capture "undefined" is not defined in spec.capture (at character 20`},
		{`interfaces.name == "eth9"`, `no interface has name == "eth9" (at character 1`},
		{`routes.running.destination == "::/0"`, `no running route has destination == "::/0" (at character 1`},
		{`interfaces.name == interfaces.7.name`, `no index 7 in interfaces: it has 3 entries (at character 20`},
		{`interfaces.name == routes.running.0.gateway`, `no "gateway" in routes.running.0 (it has destination, metric, next-hop-address, next-hop-interface, table-id) (at character 20`},
		{`interfaces.ipv4.address.ip := "x"`, `ipv4.address is not an object: cannot set "ip" in it (at character 1`},
	} {
		_, errs := Evaluate(map[string]string{"c": tc.expr}, tree(t, current), nil)
		if errs == nil || !strings.Contains(errs.Error(), tc.want) || !strings.HasPrefix(errs.Error(), "capture.c: ") {
			t.Errorf("%q:\n got %v\nwant …%s…", tc.expr, errs, tc.want)
		}
	}
}

func TestCycle(t *testing.T) {
	_, errs := Evaluate(map[string]string{
		"a":    `capture.b | interfaces.name == "eth0"`,
		"b":    `interfaces.name == capture.a.interfaces.0.name`,
		"ok":   `interfaces.name == "eth0"`,
		"uses": `capture.ok | interfaces`,
	}, tree(t, current), nil)
	if errs == nil || errs.Error() != "capture.a: captures read each other in a cycle: a → b → a" {
		t.Errorf("got %v", errs)
	}
}

func TestRender(t *testing.T) {
	results, errs := Evaluate(map[string]string{
		"default-gw":    `routes.running.destination=="0.0.0.0/0"`,
		"base-iface":    `interfaces.name==capture.default-gw.routes.running.0.next-hop-interface`,
		"bridge-routes": `capture.default-gw | routes.running.next-hop-interface:="br1"`,
	}, tree(t, current), nil)
	if errs != nil {
		t.Fatal(errs)
	}
	doc := `
interfaces:
- name: br1
  type: linux-bridge
  description: "bridge on {{ capture.base-iface.interfaces.0.name }}, mtu {{capture.base-iface.interfaces.0.mtu}}"
  mtu: "{{ capture.base-iface.interfaces.0.mtu }}"
  ipv4: "{{ capture.base-iface.interfaces.0.ipv4 }}"
  bridge:
    port:
    - name: "{{ capture.base-iface.interfaces.0.name }}"
routes:
  config: "{{ capture.bridge-routes.routes.running }}"
`
	got, ferrs := RenderDocument([]byte(doc), results)
	if ferrs != nil {
		t.Fatal(ferrs)
	}
	want := `{"interfaces":[{"bridge":{"port":[{"name":"eth0"}]},"description":"bridge on eth0, mtu 1500",` +
		`"ipv4":{"address":[{"ip":"192.0.2.10","prefix-length":24}],"dhcp":false,"enabled":true},"mtu":1500,"name":"br1","type":"linux-bridge"}],` +
		`"routes":{"config":[{"destination":"0.0.0.0/0","metric":100,"next-hop-address":"192.0.2.1","next-hop-interface":"br1","table-id":254}]}}`
	if string(got) != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	plain := []byte("interfaces: []\n")
	if out, _ := RenderDocument(plain, nil); string(out) != string(plain) {
		t.Errorf("a document without references changed: %s", out)
	}
}

func TestRenderErrors(t *testing.T) {
	results := map[string]Tree{"eth": tree(t, `{"interfaces":[{"name":"eth0","ipv4":{"enabled":true}}]}`)}
	for _, tc := range []struct{ doc, want string }{
		{`{"interfaces":[{"name":"{{ capture.eth.interfaces.0.name"}]}`, `interfaces[0].name: "{{ capture.eth.interfaces.0.name": {{ without }}`},
		{`{"interfaces":[{"name":"capture.eth.interfaces.0.name }}"}]}`, `interfaces[0].name: "capture.eth.interfaces.0.name }}": }} without {{`},
		{`{"interfaces":[{"name":"{{ }}"}]}`, `interfaces[0].name: "{{ }}": nothing between {{ and }}`},
		{`{"interfaces":[{"name":"{{ interfaces.0.name }}"}]}`, `a reference reads a capture: {{ capture.NAME.PATH }}, not "interfaces.0.name"`},
		{`{"interfaces":[{"name":"{{ capture.eth }}"}]}`, `a reference is {{ capture.NAME.PATH }}`},
		{`{"interfaces":[{"name":"{{ capture.nic.interfaces.0.name }}"}]}`, `interfaces[0].name: references capture "nic", which spec.capture does not define`},
		{`{"interfaces":[{"name":"{{ capture.eth.interfaces.1.name }}"}]}`, `interfaces[0].name: capture.eth.interfaces.1.name: no index 1 in interfaces: it has 1 entries`},
		{`{"interfaces":[{"name":"x","description":"on {{ capture.eth.interfaces.0.ipv4 }}"}]}`, `interfaces[0].description: "on {{ capture.eth.interfaces.0.ipv4 }}" resolves to an object, which cannot be part of a string`},
	} {
		_, errs := RenderDocument([]byte(tc.doc), results)
		if errs == nil || !strings.Contains(errs.Error(), tc.want) {
			t.Errorf("%s:\n got %v\nwant …%s…", tc.doc, errs, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	desired, _ := decode([]byte(`{"interfaces":[{"name":"{{ capture.a.interfaces.0.name }}","ipv4":"{{ capture.b.interfaces.0.ipv4 }}"}]}`))
	refs, errs := Check(desired, map[string]string{"a": `interfaces.name=="eth0"`})
	if len(refs) != 2 || !refs[0].Whole || refs[0].Field != "interfaces[0].ipv4" || refs[1].Field != "interfaces[0].name" {
		t.Errorf("refs: %+v", refs)
	}
	if errs.Error() != `interfaces[0].ipv4: references capture "b", which spec.capture does not define` {
		t.Errorf("got %v", errs)
	}
}
