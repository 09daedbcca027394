package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlanBadInput: what plan refuses before it reads the cluster, one clear line each
// (every problem of an invalid policy, with its path, as validate lists them), exit 1.
func TestPlanBadInput(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
		"mixed.yml":      twoPolicies,
		"good.yaml":      validLocalnet,
		"notyaml.yaml":   "a: [b\n",
	})
	// No cluster: the kubeconfig named does not exist.
	noCluster := filepath.Join(dir, "missing.kubeconfig")
	for _, tc := range []struct {
		name   string
		args   []string
		stderr []string
	}{
		{"not a policy", []string{"--kubeconfig", noCluster, filepath.Join(dir, "configmap.yaml")},
			[]string{"configmap.yaml: not a NodeNetworkConfigurationPolicy"}},
		{"not YAML", []string{"--kubeconfig", noCluster, filepath.Join(dir, "notyaml.yaml")},
			[]string{"notyaml.yaml: not YAML"}},
		{"several policies", []string{"--kubeconfig", noCluster, filepath.Join(dir, "mixed.yml")},
			[]string{"mixed.yml: 2 policies; plan one at a time"}},
		{"no kubeconfig", []string{"--kubeconfig", noCluster, filepath.Join(dir, "good.yaml")},
			[]string{"nmoverlay plan: no kubeconfig: "}},
		{"no policy named", []string{"--kubeconfig", noCluster},
			[]string{"nmoverlay plan: one POLICY.yaml or policy name"}},
		{"an unknown output", []string{"-o", "xml", filepath.Join(dir, "good.yaml")},
			[]string{"nmoverlay plan: one POLICY.yaml or policy name, and -o text, yaml or json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"plan"}, tc.args...), &stdout, &stderr); code != planFailed {
				t.Errorf("exit %d, want %d (stderr %s)", code, planFailed, stderr.String())
			}
			got := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if len(got) != len(tc.stderr) {
				t.Fatalf("stderr %q, want %d line(s)", got, len(tc.stderr))
			}
			for i := range got {
				if !strings.Contains(got[i], tc.stderr[i]) {
					t.Errorf("stderr line %d %q, want it to say %q", i, got[i], tc.stderr[i])
				}
			}
		})
	}
}

// TestPlanInvalidPolicy: an invalid policy's every problem, with its path, as validate
// lists them.
func TestPlanInvalidPolicy(t *testing.T) {
	dir := writeFiles(t, map[string]string{"broken.yaml": brokenCapture})
	var stdout, stderr bytes.Buffer
	if code := run([]string{"plan", filepath.Join(dir, "broken.yaml")}, &stdout, &stderr); code != planFailed {
		t.Fatalf("exit %d, want %d", code, planFailed)
	}
	for _, want := range []string{
		"policy broken-capture: spec.capture.loop-a: captures read each other in a cycle",
		`policy broken-capture: spec.desiredState.interfaces[0].ipv4: references capture "nic", which spec.capture does not define`,
		"policy broken-capture: spec.desiredState.interfaces[0].mtu: 70000 is out of range 68..65536",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %s\nwant it to say %q", stderr.String(), want)
		}
	}
}
