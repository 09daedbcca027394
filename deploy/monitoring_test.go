package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/test/ci"
)

// TestPrometheusRule runs Prometheus' own rule tests (testdata/monitoring/rules_test.yaml)
// on the PrometheusRule the operator applies: promtool of the release hack/prometheus.sh
// builds, given its directory in NMOVERLAY_PROMETHEUS.
func TestPrometheusRule(t *testing.T) {
	dir := os.Getenv("NMOVERLAY_PROMETHEUS")
	if dir == "" {
		ci.Require(t, "NMOVERLAY_PROMETHEUS is not set: make test-unit sets it (hack/prometheus.sh)")
	}
	objs, err := Operand(Options{})
	if err != nil {
		t.Fatal(err)
	}
	var groups any
	for _, o := range objs {
		if o.GetKind() == "PrometheusRule" {
			groups = o.Object["spec"]
		}
	}
	if groups == nil {
		t.Fatal("the operand has no PrometheusRule")
	}
	rules, err := yaml.Marshal(groups)
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile("testdata/monitoring/rules_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	for name, b := range map[string][]byte{"rules.yaml": rules, "rules_test.yaml": tests} {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "rules_test.yaml"}} {
		cmd := exec.Command(filepath.Join(dir, "promtool"), args...)
		cmd.Dir = tmp
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %v: %v\n%s", args, err, out)
		}
		t.Logf("promtool %v:\n%s", args, out)
	}
}
