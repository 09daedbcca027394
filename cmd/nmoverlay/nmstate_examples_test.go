package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/api/field"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/vm/scenarios"
)

// nmstate's own example states (test/published/nmstate): each accepted one is applied in
// the VM tier (scenarios.NmstateApplied) or listed here with what it needs that no tier
// here has; each refused one says why. The table in docs/published-examples.md is made
// from the same data.

const nmstateDir = "../../test/published/nmstate"

// nmstateNotApplied are the accepted examples no tier applies, and why.
var nmstateNotApplied = map[string]string{
	"eth1_with_sriov.yaml":              "hardware: an SR-IOV NIC (SR-IOV is applied on netdevsim in the VM tier's Debian 12 guest)",
	"infiniband_pkey_ipoib_create.yaml": "hardware: an InfiniBand NIC",
	"infiniband_pkey_ipoib_delete.yaml": "hardware: an InfiniBand NIC",
	"ipsec_psk.yaml":                    ipsecNotApplied,
	"ipsec_x509.yaml":                   ipsecNotApplied,
}

// ipsecNotApplied: IPsec is applied through NetworkManager-libreswan, which Debian does
// not package; NetworkManager's VPN machinery is tested with a stand-in plugin.
const ipsecNotApplied = "NetworkManager-libreswan, which Debian does not package (ipsec_psk is activated in the node tier through " +
	"NetworkManager's VPN machinery with a stand-in plugin, test/fakevpn, which builds no tunnel)"

type nmstateExample struct {
	file, result, where string
}

func readNmstateExamples(t *testing.T) []nmstateExample {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(nmstateDir, "*.yaml"))
	if err != nil || len(files) < 47 {
		t.Fatalf("nmstate's examples: %d files, %v", len(files), err)
	}
	var out []nmstateExample
	for _, f := range files {
		name := filepath.Base(f)
		if strings.HasPrefix(name, "policy-") {
			continue // capture policies (internal/nmpolicy)
		}
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		e := nmstateExample{file: name}
		_, err = state.Parse(doc)
		var errs field.Errors
		switch {
		case errors.As(err, &errs):
			e.result = "refused: `" + errs[0].Path + "`: " + strings.TrimPrefix(errs[0].Reason, "not supported by nmoverlay: ")
		case err != nil:
			t.Fatalf("%s: %v", name, err)
		case slices.Contains(scenarios.NmstateApplied, name):
			e.result, e.where = "applied", "vm: Debian 13, NetworkManager 1.52.1"
		case nmstateNotApplied[name] != "":
			e.result, e.where = "accepted", nmstateNotApplied[name]
		default:
			t.Errorf("%s is accepted: apply it in the VM tier (scenarios.NmstateApplied) or say in nmstateNotApplied what it needs", name)
		}
		out = append(out, e)
	}
	return out
}

// TestNmstateExamplesApplied: an example the VM tier applies is one nmoverlay accepts.
func TestNmstateExamplesApplied(t *testing.T) {
	examples := readNmstateExamples(t)
	for _, name := range scenarios.NmstateApplied {
		i := slices.IndexFunc(examples, func(e nmstateExample) bool { return e.file == name })
		if i < 0 || examples[i].result != "applied" {
			t.Errorf("the VM tier applies %s, which is not an accepted example", name)
		}
	}
	for name := range nmstateNotApplied {
		if slices.Contains(scenarios.NmstateApplied, name) {
			t.Errorf("%s is applied: take it off nmstateNotApplied", name)
		}
	}
}

// TestNmstateTableInDocs: the table in docs/published-examples.md is this data's.
func TestNmstateTableInDocs(t *testing.T) {
	checkDocTable(t, "nmstate-examples", "TestNmstateTableInDocs", nmstateTable(readNmstateExamples(t)))
}

func nmstateTable(examples []nmstateExample) string {
	applied, accepted := 0, 0
	for _, e := range examples {
		if e.result == "applied" {
			applied++
		}
		if !strings.HasPrefix(e.result, "refused") {
			accepted++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of nmstate's %d example states accepted, %d of them applied (`cmd/nmoverlay/nmstate_examples_test.go`).\n\n",
		accepted, len(examples), applied)
	b.WriteString("| example | result | where, or what it needs |\n|---|---|---|\n")
	for _, e := range examples {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", e.file, strings.ReplaceAll(e.result, "|", "\\|"), e.where)
	}
	return b.String()
}

// nmstatePolicyRefused are nmstate's capture policies (examples/policy) nmoverlay refuses,
// with what it says.
var nmstatePolicyRefused = map[string]string{
	// Its capture is a placeholder nmstate's own test replaces from a cache of captures.
	"policy-capture_all.yaml": `spec.capture.default-gw: expected a path`,
}

// TestNmstatePolicyExamples checks nmstate's capture policies as a policy's spec, as the
// handler reads one: captures and desired state.
func TestNmstatePolicyExamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(nmstateDir, "policy-*.yaml"))
	if err != nil || len(files) != 13 {
		t.Fatalf("nmstate's policy examples: %d files, %v", len(files), err)
	}
	accepted := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			Capture      map[string]string `json:"capture"`
			DesiredState json.RawMessage   `json:"desiredState"`
		}
		if err := yaml.Unmarshal(b, &p); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		_, err = checkDesired(p.Capture, p.DesiredState)
		want, refused := nmstatePolicyRefused[filepath.Base(f)]
		switch {
		case err == nil && refused:
			t.Errorf("%s is accepted now: take it off nmstatePolicyRefused", f)
		case err != nil && !refused:
			t.Errorf("%s: %v", f, err)
		case err != nil && !strings.Contains(err.Error(), want):
			t.Errorf("%s: refused, but not for %q: %v", f, want, err)
		case err == nil:
			accepted++
		}
	}
	t.Logf("%d of nmstate's %d capture policies accepted", accepted, len(files))
}
