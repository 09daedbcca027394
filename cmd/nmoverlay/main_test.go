package main

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/deploy"
	"github.com/nmoverlay/nmoverlay/internal/machineconfigs"
	"github.com/nmoverlay/nmoverlay/internal/version"
)

// parseDocs splits multi-document YAML and parses each document strictly.
func parseDocs(t *testing.T, b []byte) []machineconfigs.MachineConfig {
	t.Helper()
	var mcs []machineconfigs.MachineConfig
	for _, doc := range strings.Split(string(b), "---\n")[1:] {
		var mc machineconfigs.MachineConfig
		if err := yaml.UnmarshalStrict([]byte(doc), &mc); err != nil {
			t.Fatalf("%v in:\n%s", err, doc)
		}
		mcs = append(mcs, mc)
	}
	return mcs
}

func TestMachineConfigsToFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "mc.yaml")
	if err := os.WriteFile(out, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"machineconfigs", "--pool", "worker,infra", "--pool", "master", "--custom-pool", "infra",
		"--ignition-version", "3.4.0", "-o", out}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if stdout.Len() != 0 || stderr.Len() != 0 {
		t.Errorf("stdout %q stderr %q, want both empty with -o", stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	mcs := parseDocs(t, b)
	pools := []string{"worker", "infra", "master"}
	if len(mcs) != len(pools) {
		t.Fatalf("%d documents, want %d", len(mcs), len(pools))
	}
	for i, pool := range pools {
		mc := mcs[i]
		if mc.APIVersion != machineconfigs.APIVersion || mc.Kind != machineconfigs.Kind ||
			mc.Metadata.Name != machineconfigs.Name(pool) || mc.Metadata.Labels[machineconfigs.RoleLabel] != pool {
			t.Errorf("document %d: %+v", i, mc.Metadata)
		}
		if !strings.Contains(string(mc.Spec.Config), `"version":"3.4.0"`) {
			t.Errorf("document %d is not Ignition 3.4.0: %s", i, mc.Spec.Config)
		}
	}
	if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("output file: %v %v", st, err)
	}
}

func TestMachineConfigsDefaults(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"machineconfigs"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	mcs := parseDocs(t, stdout.Bytes())
	if len(mcs) != 1 || mcs[0].Metadata.Name != machineconfigs.Name("worker") {
		t.Fatalf("want one worker MachineConfig, got %+v", mcs)
	}
	want, err := machineconfigs.Render(machineconfigs.Options{Pools: []string{"worker"}})
	if err != nil {
		t.Fatal(err)
	}
	wantYAML, _ := machineconfigs.Marshal(want)
	if !bytes.Equal(stdout.Bytes(), wantYAML) {
		t.Errorf("flag defaults differ from the package defaults")
	}
	if !strings.Contains(stdout.String(), "index=off") || !strings.Contains(stdout.String(), "version: 3.2.0") {
		t.Errorf("defaults: want all safety options and Ignition 3.2.0:\n%s", stdout.String())
	}
}

func TestMachineConfigsSafetyOptionsNone(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"machineconfigs", "--safety-options", "none", "--run-dir", "/run/nmo", "--selinux-context",
		"system_u:object_r:NetworkManager_etc_rw_t:s0", "--lower", "/var/lib/keyfiles"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	s := stdout.String()
	for _, want := range []string{
		`Options=lowerdir=/var/lib/keyfiles,upperdir=/run/nmo/upper,workdir=/run/nmo/work,context="system_u:object_r:NetworkManager_etc_rw_t:s0"`,
		"name: run-nmo-merged.mount",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

// decodeStream parses a YAML stream into objects, as kubectl apply -f - reads it.
func decodeStream(t *testing.T, b []byte) []*unstructured.Unstructured {
	t.Helper()
	objs, err := deploy.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func TestRender(t *testing.T) {
	const image = "registry.example:5000/nmoverlay@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	mcFlags := []string{"--pool", "worker", "--pool", "master", "--ignition-version", "3.4.0", "--run-dir", "/run/nmo"}
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"render", "--image", image}, mcFlags...), &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr %q", stderr.String())
	}
	objs := decodeStream(t, stdout.Bytes())

	// The MachineConfigs first, exactly as nmoverlay machineconfigs renders them from the
	// same flags.
	var mcOut bytes.Buffer
	if code := run(append([]string{"machineconfigs"}, mcFlags...), &mcOut, &stderr); code != exitOK {
		t.Fatalf("machineconfigs: exit %d: %s", code, stderr.String())
	}
	if !bytes.HasPrefix(stdout.Bytes(), mcOut.Bytes()) {
		t.Errorf("render does not start with the MachineConfigs of nmoverlay machineconfigs %v", mcFlags)
	}
	mcs := parseDocs(t, mcOut.Bytes())
	if len(mcs) != 2 || len(objs) <= len(mcs) {
		t.Fatalf("%d MachineConfigs in %d objects", len(mcs), len(objs))
	}
	for i, pool := range []string{"worker", "master"} {
		if objs[i].GetKind() != machineconfigs.Kind || objs[i].GetName() != machineconfigs.Name(pool) {
			t.Errorf("object %d: %s %s, want the MachineConfig for %s", i, objs[i].GetKind(), objs[i].GetName(), pool)
		}
	}

	// Then the cluster side, every object, with the image given.
	rest := objs[len(mcs):]
	want, err := deploy.Objects(deploy.Options{Image: image})
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != len(want) {
		t.Fatalf("%d deploy objects, want %d", len(rest), len(want))
	}
	for i := range want {
		got, _ := json.Marshal(rest[i].Object)
		exp, _ := json.Marshal(want[i].Object)
		if !bytes.Equal(got, exp) {
			t.Errorf("deploy object %d:\n%s\nwant\n%s", i, got, exp)
		}
	}
	if n := strings.Count(stdout.String(), "image: "+image+"\n"); n != 1 {
		t.Errorf("the image is used %d times, want the operator's", n)
	}
	if strings.Contains(stdout.String(), "image: "+deploy.ImageName+"\n") {
		t.Errorf("an image was left unreplaced")
	}

	// -o writes the same stream.
	out := filepath.Join(t.TempDir(), "all.yaml")
	if code := run(append([]string{"render", "--image", image, "-o", out}, mcFlags...), io.Discard, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if b, _ := os.ReadFile(out); !bytes.Equal(b, stdout.Bytes()) {
		t.Errorf("-o wrote something else than stdout")
	}
}

func TestRenderDefaults(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"render"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	objs := decodeStream(t, stdout.Bytes())
	if objs[0].GetName() != machineconfigs.Name("worker") || objs[1].GetKind() == machineconfigs.Kind {
		t.Errorf("want one MachineConfig, for worker, first")
	}
	want, err := deploy.Render(deploy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(stdout.Bytes(), want) {
		t.Errorf("without --image, the deploy objects differ from deploy.Render's defaults")
	}
}

// badInput is a wrong command line and what its error must say.
type badInput struct {
	args []string
	want string
}

// badMachineConfigFlags are wrong machineconfigs flags, which every command that renders
// MachineConfigs must reject the same way.
var badMachineConfigFlags = []badInput{
	{[]string{"--pool", "worker,wroker"}, `--pool: pools[1]: "wroker" is not master or worker and not declared as a custom pool`},
	{[]string{"--pool", "Worker"}, `--pool: pools[0]: "Worker" is not a valid pool name`},
	{[]string{"--pool", "worker", "--pool", "worker"}, `--pool: pools[1]: "worker" is listed twice`},
	{[]string{"--pool", ""}, `--pool: pools[0]: "" is not a valid pool name`},
	{[]string{"--pool", "infra", "--custom-pool", "In_fra"}, `--custom-pool: customPools[0]`},
	{[]string{"--ignition-version", "3.6.0"}, `--ignition-version: ignitionVersion: "3.6.0" is not supported`},
	{[]string{"--ignition-version", "banana"}, `--ignition-version: ignitionVersion: "banana" is not supported`},
	{[]string{"--run-dir", "run/nmoverlay"}, `--run-dir: layout.runDir: "run/nmoverlay" is not an absolute path`},
	{[]string{"--run-dir", "/tmp/nmoverlay"}, `--run-dir: layout.runDir: "/tmp/nmoverlay" is under /tmp`},
	{[]string{"--run-dir", "/run/a,b"}, `--run-dir: layout.runDir: "/run/a,b" contains a character`},
	{[]string{"--lower", "/run/keyfiles"}, `--lower: layout.lower: "/run/keyfiles" is not persistent`},
	{[]string{"--selinux-context", "etc_t"}, `--selinux-context: layout.selinuxContext: "etc_t" is not an SELinux context`},
	{[]string{"--safety-options", "index=off,volatile"}, `--safety-options: safetyOptions[1]: "volatile" is not one of`},
	{[]string{"--safety-options", ""}, `--safety-options: safetyOptions[0]: "" is not one of`},
	{[]string{"--safety-options", "none,index=off"}, `--safety-options: safetyOptions[0]: "none" is not one of`},
	{[]string{"--bogus"}, `flag provided but not defined: -bogus`},
	{[]string{"--pool"}, `flag needs an argument: -pool`},
	{[]string{"extra"}, `unexpected argument "extra"`},
}

func TestMachineConfigsBadInput(t *testing.T) {
	testBadInput(t, "machineconfigs", append(slices.Clip(badMachineConfigFlags),
		badInput{[]string{"--image", "nmoverlay:v1"}, "flag provided but not defined: -image"}))
}

func TestRenderBadInput(t *testing.T) {
	testBadInput(t, "render", append(slices.Clip(badMachineConfigFlags),
		[]badInput{
			{[]string{"--image", ""}, `--image: image: must not be empty`},
			{[]string{"--image", "registry.example/nm overlay:v1"}, `--image: image: "registry.example/nm overlay:v1" is not an image reference`},
			{[]string{"--image", "registry.example/NMoverlay"}, `--image: image: "registry.example/NMoverlay" is not an image reference`},
			{[]string{"--image", "nmoverlay@sha256:0123"}, `--image: image: "nmoverlay@sha256:0123" is not an image reference`},
			{[]string{"--image"}, `flag needs an argument: -image`},
			{[]string{"--image", "nmoverlay:v1", "--pool", "wroker"}, `--pool: pools[0]: "wroker"`},
		}...))
}

// testBadInput checks that each wrong command line is one line on stderr, exit 2, and
// writes nothing: not to stdout, not to a new -o file, not over an existing one.
func testBadInput(t *testing.T, command string, cases []badInput) {
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "mc.yaml")
			existing := filepath.Join(dir, "existing.yaml")
			if err := os.WriteFile(existing, []byte("keep me\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, target := range []string{out, existing} {
				var stdout, stderr bytes.Buffer
				code := run(append([]string{command, "-o", target}, tc.args...), &stdout, &stderr)
				if code != exitUsage {
					t.Errorf("exit %d, want %d", code, exitUsage)
				}
				if !strings.Contains(stderr.String(), tc.want) {
					t.Errorf("stderr %q, want it to contain %q", stderr.String(), tc.want)
				}
				if s := stderr.String(); !strings.HasSuffix(s, "\n") || strings.Count(s, "\n") != 1 {
					t.Errorf("want a one-line error, got %q", s)
				}
				if stdout.Len() != 0 {
					t.Errorf("stdout not empty: %q", stdout.String())
				}
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s written despite the error", out)
			}
			if b, _ := os.ReadFile(existing); string(b) != "keep me\n" {
				t.Errorf("existing output file changed to %q", b)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("files left in the output dir: %v", entries)
			}
		})
	}
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"help"}, exitOK, "nmoverlay machineconfigs [flags]", ""},
		{[]string{"--help"}, exitOK, "nmoverlay machineconfigs [flags]", ""},
		{[]string{"help"}, exitOK, "nmoverlay render [flags]", ""},
		{[]string{"machineconfigs", "-h"}, exitOK, "-ignition-version", ""},
		{[]string{"render", "-h"}, exitOK, "-image", ""},
		{[]string{"render", "--help"}, exitOK, "-ignition-version", ""},
		{nil, exitUsage, "", "Usage:"},
		{[]string{"frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", tc.args, code, stdout.String(), stderr.String())
		}
		if tc.stdout == "" && stdout.Len() != 0 {
			t.Errorf("%v: stdout %q, want empty", tc.args, stdout.String())
		}
	}
}

// TestInstallManifests: render --install-manifests writes openshift-install's manifests/
// and openshift/ files, one object each, the policies checked by the engine first.
func TestInstallManifests(t *testing.T) {
	policies := "../../test/integration/testdata/policies/"
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"render", "--install-manifests", dir, "--pool", "worker,master", "--image", "registry.example/nmoverlay:v3",
		"--policy", policies + "bond-vlan.yaml", "--policy", policies + "v1beta1-vlan.yaml," + policies + "linux-bridge.yaml"}
	if code := run(args, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("wrote to stdout: %q", stdout.String())
	}
	read := func(sub string) map[string]*unstructured.Unstructured {
		t.Helper()
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			t.Fatal(err)
		}
		objs := map[string]*unstructured.Unstructured{}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(dir, sub, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			docs := decodeStream(t, b)
			if len(docs) != 1 {
				t.Fatalf("%s/%s: %d objects, want one", sub, e.Name(), len(docs))
			}
			objs[e.Name()] = docs[0]
		}
		return objs
	}
	manifests, openshift := read("manifests"), read("openshift")
	want, err := deploy.Objects(deploy.Options{Image: "registry.example/nmoverlay:v3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(manifests) != len(want) {
		t.Fatalf("%d files in manifests/, want the %d deploy objects", len(manifests), len(want))
	}
	names := slices.Sorted(maps.Keys(manifests))
	for i, w := range want {
		got, _ := json.Marshal(manifests[names[i]].Object)
		exp, _ := json.Marshal(w.Object)
		if !bytes.Equal(got, exp) {
			t.Errorf("manifests/%s is not deploy object %d (%s %s): files must sort in install order", names[i], i, w.GetKind(), w.GetName())
		}
	}
	var kinds []string
	for _, name := range slices.Sorted(maps.Keys(openshift)) {
		o := openshift[name]
		kinds = append(kinds, o.GetKind()+"/"+o.GetName())
	}
	wantKinds := []string{"MachineConfig/99-master-nmoverlay", "MachineConfig/99-worker-nmoverlay", "NMState/nmstate",
		"NodeNetworkConfigurationPolicy/bond0-eth1-eth2-vlan", "NodeNetworkConfigurationPolicy/br1-eth1-policy", "NodeNetworkConfigurationPolicy/vlan-eth1-v1beta1"}
	if !slices.Equal(kinds, wantKinds) {
		t.Errorf("openshift/ holds %v, want %v", kinds, wantKinds)
	}
}

func TestInstallManifestsRefusesBadInput(t *testing.T) {
	write := func(t *testing.T, content string) string {
		t.Helper()
		f := filepath.Join(t.TempDir(), "policy.yaml")
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	good := "apiVersion: nmstate.io/v1\nkind: NodeNetworkConfigurationPolicy\nmetadata:\n  name: ok\nspec:\n  desiredState:\n    interfaces: []\n"
	for _, tc := range []struct {
		name, content string
		extra         []string
		want          string
	}{
		{"a VLAN id out of range in the second document", good + "---\napiVersion: nmstate.io/v1\nkind: NodeNetworkConfigurationPolicy\nmetadata:\n  name: bad\nspec:\n  desiredState:\n    interfaces:\n    - {name: eth1.5000, type: vlan, state: up, vlan: {base-iface: eth1, id: 5000}}\n",
			nil, "document 2 (NodeNetworkConfigurationPolicy bad): spec.desiredState.interfaces[0].vlan.id:"},
		{"an unsupported key", "apiVersion: nmstate.io/v1\nkind: NodeNetworkConfigurationPolicy\nmetadata:\n  name: host\nspec:\n  desiredState:\n    hostname: {config: n1}\n",
			nil, "spec.desiredState.hostname.config: not supported by nmoverlay"},
		{"a capture that does not parse", "apiVersion: nmstate.io/v1\nkind: NodeNetworkConfigurationPolicy\nmetadata:\n  name: cap\nspec:\n  capture:\n    gw: routes.running.destination=\"0.0.0.0/0\"\n",
			nil, `spec.capture.gw: expected "==", not a lone "=" (at character 27 of: routes.running.destination="0.0.0.0/0")`},
		{"another kind", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", nil, "want nmstate.io/v1 (or v1beta1) NodeNetworkConfigurationPolicy, not v1 ConfigMap"},
		{"a name too long for its label", strings.Replace(good, "name: ok", "name: "+strings.Repeat("a", 64), 1), nil, "metadata.name: must be a label value"},
		{"the same policy twice", good, []string{"--policy", "SAME"}, `policy "ok" is also in`},
		{"not YAML", "{", nil, "--policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := write(t, tc.content)
			dir := t.TempDir()
			extra := slices.Clone(tc.extra)
			for i := range extra {
				if extra[i] == "SAME" {
					extra[i] = f
				}
			}
			var stderr bytes.Buffer
			code := run(append([]string{"render", "--install-manifests", dir, "--policy", f}, extra...), io.Discard, &stderr)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d: %s", code, exitUsage, stderr.String())
			}
			msg := stderr.String()
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "--policy "+f) || strings.Count(msg, "\n") != 1 {
				t.Errorf("got %q, want one line naming the file and %q", msg, tc.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("wrote %v despite the error", entries)
			}
		})
	}
	var stderr bytes.Buffer
	if code := run([]string{"render", "--policy", write(t, good)}, io.Discard, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "only with --install-manifests") {
		t.Errorf("--policy alone: exit %d: %s", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"render", "--install-manifests", t.TempDir(), "-o", "x.yaml"}, io.Discard, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "-o: not with --install-manifests") {
		t.Errorf("-o with --install-manifests: exit %d: %s", code, stderr.String())
	}
}

func TestVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"version"}, &stdout, &stderr); code != exitOK || !strings.HasPrefix(stdout.String(), "nmoverlay "+version.Version+" ") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}
