package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/machineconfigs"
)

func TestMachineConfigsToFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "mc.yaml")
	var stdout, stderr bytes.Buffer
	code := run([]string{"machineconfigs", "--pool", "worker,infra", "--custom-pool", "infra", "--ignition-version", "3.4.0", "-o", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(b), "---\n")[1:]
	if len(docs) != 2 {
		t.Fatalf("%d documents", len(docs))
	}
	for i, pool := range []string{"worker", "infra"} {
		var mc machineconfigs.MachineConfig
		if err := yaml.UnmarshalStrict([]byte(docs[i]), &mc); err != nil {
			t.Fatal(err)
		}
		if mc.Metadata.Name != machineconfigs.Name(pool) || mc.Metadata.Labels[machineconfigs.RoleLabel] != pool {
			t.Errorf("document %d: %+v", i, mc.Metadata)
		}
		if !strings.Contains(string(mc.Spec.Config), `"version":"3.4.0"`) {
			t.Errorf("document %d is not Ignition 3.4.0", i)
		}
	}
}

func TestMachineConfigsDefaultsToWorker(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"machineconfigs", "--safety-options", "none"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "name: 99-worker-nmoverlay") || strings.Contains(stdout.String(), "index=off") {
		t.Errorf("unexpected output:\n%s", stdout.String())
	}
}

func TestMachineConfigsBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--pool", "wroker"}, `--pool: pools[0]: "wroker" is not master or worker`},
		{[]string{"--ignition-version", "3.6.0"}, `--ignition-version: ignitionVersion: "3.6.0" is not supported`},
		{[]string{"--run-dir", "run/nmoverlay"}, `--run-dir: layout.runDir: "run/nmoverlay" is not an absolute path`},
		{[]string{"--run-dir", "/tmp/nmoverlay"}, `--run-dir: layout.runDir: "/tmp/nmoverlay" is under /tmp`},
		{[]string{"--lower", "/run/keyfiles"}, `--lower: layout.lower: "/run/keyfiles" is not persistent`},
		{[]string{"--selinux-context", "etc_t"}, `--selinux-context: layout.selinuxContext`},
		{[]string{"--safety-options", "volatile"}, `--safety-options: safetyOptions[0]`},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "mc.yaml")
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"machineconfigs", "-o", out}, tc.args...), &stdout, &stderr)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), tc.want)
			}
			if strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 {
				t.Errorf("want a one-line error, got %q", stderr.String())
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s written despite the error", out)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout not empty: %q", stdout.String())
			}
		})
	}
}

func TestUnknownCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"frobnicate"}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "unknown command") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}
