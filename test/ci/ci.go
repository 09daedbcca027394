// Package ci is what CI demands of a test that needs something a developer's machine may
// lack: there every tier must run.
package ci

import (
	"os"
	"testing"
)

// Require skips where what the test needs is missing on a developer's machine, and fails
// in CI (CI=true).
func Require(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}
