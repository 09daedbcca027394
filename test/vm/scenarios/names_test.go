package scenarios

import (
	"strings"
	"testing"
)

// The host reads a scenario's name from "PASS name (time)" and "FAIL name: reason": a name
// holding ": " or " (" would be cut there and never found.
func TestScenarioNamesParse(t *testing.T) {
	for suite, scenarios := range Suites {
		seen := map[string]bool{}
		for _, s := range scenarios {
			if strings.Contains(s.Name, ": ") || strings.Contains(s.Name, " (") {
				t.Errorf("%s: %q holds \": \" or \" (\"", suite, s.Name)
			}
			if seen[s.Name] {
				t.Errorf("%s: %q twice", suite, s.Name)
			}
			seen[s.Name] = true
		}
	}
}

// Every boot of the SELinux guest has its suite.
func TestSELinuxBootsHaveSuites(t *testing.T) {
	for _, suite := range SELinuxBoots {
		if len(Suites[suite]) == 0 {
			t.Errorf("no scenarios for %s", suite)
		}
	}
}
