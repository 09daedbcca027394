package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const (
	validLocalnet = `apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata:
  name: localnet
spec:
  desiredState:
    interfaces:
    - {name: ovs-br1, type: ovs-bridge, bridge: {options: {stp: false}, port: [{name: eth1}]}}
    ovn:
      bridge-mappings: [{localnet: localnet1, bridge: ovs-br1}]
`
	// OpenShift's "bridge on the NIC of the default route, keeping its address".
	validCapture = `apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata:
  name: br1-on-default-nic
spec:
  capture:
    default-gw: routes.running.destination=="0.0.0.0/0"
    base-iface: interfaces.name==capture.default-gw.routes.running.0.next-hop-interface
    base-iface-routes: routes.running.next-hop-interface==capture.default-gw.routes.running.0.next-hop-interface
    bridge-routes: capture.base-iface-routes | routes.running.next-hop-interface:="br1"
  desiredState:
    interfaces:
    - name: br1
      type: linux-bridge
      state: up
      ipv4: "{{ capture.base-iface.interfaces.0.ipv4 }}"
      bridge:
        options: {stp: {enabled: false}}
        port:
        - name: "{{ capture.base-iface.interfaces.0.name }}"
    routes:
      config: "{{ capture.bridge-routes.routes.running }}"
`
	// Mistakes in captures and references, and one the references do not hide.
	brokenCapture = `apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata: {name: broken-capture}
spec:
  capture:
    gw: routes.running.destination=="0.0.0.0/0"
    loop-a: capture.loop-b | interfaces.name == "eth0"
    loop-b: capture.loop-a | interfaces.name == "eth0"
  desiredState:
    interfaces:
    - name: br1
      type: linux-bridge
      mtu: 70000
      ipv4: "{{ capture.nic.interfaces.0.ipv4 }}"
      bridge:
        port:
        - name: "{{ capture.gw.routes.running.0.next-hop-interface"
`
	// Two documents, the second with two mistakes; a ConfigMap between them.
	twoPolicies = `apiVersion: nmstate.io/v1beta1
kind: NodeNetworkConfigurationPolicy
metadata: {name: fine}
spec:
  desiredState:
    interfaces: [{name: eth1, type: ethernet, mtu: 9000}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: unrelated}
---
apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata: {name: broken}
spec:
  desiredState:
    interfaces:
    - {name: eth1, type: ethernet, mtu: 70000}
    - {name: eth2, type: ethernet, ipv4: {enabled: 'yes please'}}
`
)

// bondPriority needs a NetworkManager later than some nodes run.
const bondPriority = `apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata:
  name: bond-priority
spec:
  desiredState:
    interfaces:
    - name: bond0
      type: bond
      link-aggregation:
        mode: active-backup
        port: [eth1, eth2]
        ports-config: [{name: eth1, priority: 10, queue-id: 1}, {name: eth2, queue-id: 2}]
`

func TestValidate(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"good/localnet.yaml":   validLocalnet,
		"good/README.md":       "not a manifest",
		"good/capture.yaml":    validCapture,
		"bad/capture.yaml":     brokenCapture,
		"mixed/policies.yml":   twoPolicies,
		"later/bond.yaml":      bondPriority,
		"other/configmap.json": `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}`,
	})
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr []string
	}{
		{"a valid directory", []string{filepath.Join(dir, "good")}, exitOK, "2 policies in 2 file(s): valid", nil},
		{"captures and references checked without their values", []string{filepath.Join(dir, "bad")}, exitError, "", []string{
			"document 1 (policy broken-capture): spec.capture.loop-a: captures read each other in a cycle: loop-a → loop-b → loop-a",
			`spec.desiredState.interfaces[0].bridge.port[0].name: "{{ capture.gw.routes.running.0.next-hop-interface": {{ without }}`,
			`spec.desiredState.interfaces[0].ipv4: references capture "nic", which spec.capture does not define`,
			"spec.desiredState.interfaces[0].mtu: 70000 is out of range 68..65536",
			"4 problem(s) in 1 file(s), 1 policies read",
		}},
		{"the test policies", []string{"../../test/integration/testdata/policies"}, exitOK, "policies in 4 file(s): valid", nil},
		{"every error of every document, with file, document, policy and field", []string{filepath.Join(dir, "good"), filepath.Join(dir, "mixed", "policies.yml")}, exitError, "", []string{
			filepath.Join(dir, "mixed", "policies.yml") + ": document 3 (policy broken): spec.desiredState.interfaces[0].mtu: 70000 is out of range 68..65536",
			filepath.Join(dir, "mixed", "policies.yml") + ": document 3 (policy broken): spec.desiredState.interfaces[1].ipv4.enabled: must be true or false",
			"2 problem(s) in 3 file(s), 4 policies read",
		}},
		{"a field only later NetworkManagers apply is valid, and noted with them", []string{filepath.Join(dir, "later")}, exitOK,
			"document 1 (policy bond-priority): spec.desiredState.interfaces[0].link-aggregation.ports-config[0].priority: " +
				"needs bond-port-priority: NetworkManager 1.44 and later apply it\n1 policies in 1 file(s): valid", nil},
		{"no policy at all", []string{filepath.Join(dir, "other")}, exitError, "", []string{"no NodeNetworkConfigurationPolicy in 1 file(s)"}},
		{"a missing path", []string{filepath.Join(dir, "nosuch")}, exitError, "", []string{"no such file or directory"}},
		{"nothing named", nil, exitUsage, "", []string{"name at least one file or directory"}},
		{"help", []string{"-h"}, exitOK, "Usage: nmoverlay validate FILE|DIR...", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"validate"}, tc.args...), &stdout, &stderr)
			if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) {
				t.Errorf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
			}
			for _, want := range tc.stderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
			if tc.stderr == nil && stderr.Len() != 0 {
				t.Errorf("stderr %q, want empty", stderr.String())
			}
		})
	}
}

// nmstate's own files are desired states alone: validated as a policy's desiredState,
// numbered from 1; a document that is neither is named without being quoted, since it may
// hold a key.
func TestValidateDesiredStateFiles(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"macsec.yml": `interfaces:
- {name: macsec0, type: macsec, state: up, macsec: {base-iface: eth1, encrypt: true, mka-cak: 50b71a8ef0bd5751ea76de6d6c98c03a, mka-ckn: f2b4, port: 0}}
`,
		"broken.yml": "---\nname: not-a-state\nmka-cak: 50b71a8ef0bd5751ea76de6d6c98c03a\n",
	})
	var stdout, stderr bytes.Buffer
	code := runValidate([]string{dir}, &stdout, &stderr)
	if code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	if want := "macsec.yml: document 1 (desired state): interfaces[0].type: needs macsec: nodes with wpa_supplicant apply it"; !strings.Contains(stdout.String(), want) {
		t.Errorf("stdout %q lacks %q", stdout.String(), want)
	}
	if want := "broken.yml: document 1: no kind: not a Kubernetes object"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q lacks %q", stderr.String(), want)
	}
	if strings.Contains(stdout.String()+stderr.String(), "50b71a8ef0bd5751ea76de6d6c98c03a") {
		t.Errorf("a key printed:\n%s%s", stdout.String(), stderr.String())
	}
}
