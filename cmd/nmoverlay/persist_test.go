package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

const bondPolicy = `apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata:
  name: bond0
spec:
  desiredState:
    interfaces:
    - {name: eth1, type: ethernet, state: up}
    - {name: eth2, type: ethernet, state: up}
    - name: bond0
      type: bond
      state: up
      link-aggregation: {mode: active-backup, port: [eth1, eth2]}
      ipv4: {enabled: true, dhcp: false, address: [{ip: 192.0.2.10, prefix-length: 24}]}
`

// The policies' profiles, one file each in the persistent dir, in a MachineConfig per
// pool of its own name; the same input renders the same bytes (no reboot of the pool).
func TestRenderPersist(t *testing.T) {
	dir := writeFiles(t, map[string]string{"bond.yaml": bondPolicy})
	var stdout, stderr bytes.Buffer
	if code := run([]string{"render", "--persist", filepath.Join(dir, "bond.yaml"), "--pool", "worker,master", "--lower", "/etc/NetworkManager/system-connections"},
		&stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	mcs := parseDocs(t, stdout.Bytes())
	if len(mcs) != 2 || mcs[0].Metadata.Name != "99-worker-nmoverlay-persistent" || mcs[1].Metadata.Name != "99-master-nmoverlay-persistent" {
		t.Fatalf("MachineConfigs %+v", mcs)
	}
	var cfg struct {
		Storage struct {
			Files []struct {
				Path     string
				Mode     int
				Contents struct{ Source string }
			}
		}
		Systemd map[string]any
	}
	if err := json.Unmarshal(mcs[0].Spec.Config, &cfg); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range cfg.Storage.Files {
		if f.Mode != 0o600 {
			t.Errorf("%s: mode %o, want 600", f.Path, f.Mode)
		}
		content, err := url.PathUnescape(strings.TrimPrefix(f.Contents.Source, "data:,"))
		if err != nil {
			t.Fatal(err)
		}
		got[f.Path] = content
	}
	if len(got) != 3 || len(cfg.Systemd) != 0 {
		t.Errorf("files %v and units %v: want the three profiles and nothing else", got, cfg.Systemd)
	}
	bond := got["/etc/NetworkManager/system-connections/bond0.nmconnection"]
	for _, want := range []string{"[bond]\nmode=active-backup\n", "address1=192.0.2.10/24\n", "method=manual\n"} {
		if !strings.Contains(bond, want) {
			t.Errorf("bond0's profile lacks %q:\n%s", want, bond)
		}
	}
	if !strings.Contains(got["/etc/NetworkManager/system-connections/eth1.nmconnection"], "master=bond0\n") {
		t.Errorf("eth1 is not bond0's port:\n%s", got["/etc/NetworkManager/system-connections/eth1.nmconnection"])
	}
	var again bytes.Buffer
	run([]string{"render", "--persist", filepath.Join(dir, "bond.yaml"), "--pool", "worker,master"}, &again, io.Discard)
	if again.String() != stdout.String() {
		t.Error("rendered twice, different: the pool would reboot for nothing")
	}
}

func TestRenderPersistRefuses(t *testing.T) {
	policy := func(name, spec string) string {
		return "apiVersion: nmstate.io/v1\nkind: NodeNetworkConfigurationPolicy\nmetadata:\n  name: " + name + "\nspec:\n" + spec
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		extra []string
		want  string
	}{
		{"a capture", map[string]string{"p.yaml": policy("cap", "  capture:\n    gw: routes.running.destination==\"0.0.0.0/0\"\n  desiredState:\n    interfaces: []\n")},
			nil, "policy cap: spec.capture: a captured value is each node's own"},
		{"an interface to remove", map[string]string{"p.yaml": policy("gone", "  desiredState:\n    interfaces:\n    - {name: br9, type: linux-bridge, state: absent}\n")},
			nil, "policy gone: spec.desiredState: interfaces[0].state: absent removes or stops what a node runs"},
		{"a port of no type", map[string]string{"p.yaml": policy("br", "  desiredState:\n    interfaces:\n    - {name: br9, type: linux-bridge, state: up, bridge: {port: [{name: eth5}]}}\n")},
			nil, "name it among the interfaces with its type"},
		{"one profile from two policies", map[string]string{"a.yaml": bondPolicy, "b.yaml": strings.Replace(bondPolicy, "name: bond0\nspec", "name: other\nspec", 1)},
			nil, "policy other: its profile bond0.nmconnection is also bond0's"},
		{"with the cluster side's flags", map[string]string{"p.yaml": bondPolicy}, []string{"--image", "registry.example/nmoverlay:v1"},
			"--persist: not with --install-manifests, --policy or --image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, tc.files)
			args := []string{"render"}
			for _, name := range []string{"a.yaml", "b.yaml", "p.yaml"} {
				if _, ok := tc.files[name]; ok {
					args = append(args, "--persist", filepath.Join(dir, name))
				}
			}
			var stdout, stderr bytes.Buffer
			if code := run(append(args, tc.extra...), &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), tc.want) || stdout.Len() > 0 {
				t.Errorf("exit %d, stdout %d bytes, stderr %q: want exit 2, nothing written, and %q", code, stdout.Len(), stderr.String(), tc.want)
			}
		})
	}
}
