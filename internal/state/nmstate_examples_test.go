package state

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/nmoverlay/nmoverlay/api/field"
)

// nmstateExamplesAccepted is how many of nmstate's own example states
// (test/published/nmstate) Parse accepts. It only goes up: issue 32 takes it toward every
// example the node's NetworkManager can apply.
const nmstateExamplesAccepted = 42

// TestNmstateExamples parses each of nmstate's example states as written upstream, and
// reports the refusals by reason. An example accepted before and refused now fails the
// floor; one accepted beyond it says to raise the floor.
func TestNmstateExamples(t *testing.T) {
	files, err := filepath.Glob("../../test/published/nmstate/*.yaml")
	if err != nil || len(files) < 47 {
		t.Fatalf("nmstate's examples: %d files, %v", len(files), err)
	}
	accepted, states := 0, 0
	byReason := map[string][]string{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		if strings.HasPrefix(name, "policy-") {
			continue // capture policies: their captures are each node's (internal/nmpolicy)
		}
		states++
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Parse(doc)
		var errs field.Errors
		switch {
		case err == nil:
			accepted++
		case errors.As(err, &errs):
			byReason[errs[0].Error()] = append(byReason[errs[0].Error()], name)
		default:
			t.Errorf("%s: %v", name, err)
		}
	}
	reasons := make([]string, 0, len(byReason))
	for r := range byReason {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		t.Logf("refused: %s: %s", strings.Join(byReason[r], ", "), r)
	}
	t.Logf("%d of %d of nmstate's example states accepted", accepted, states)
	switch {
	case accepted < nmstateExamplesAccepted:
		t.Errorf("%d accepted, fewer than the %d before", accepted, nmstateExamplesAccepted)
	case accepted > nmstateExamplesAccepted:
		t.Errorf("%d accepted, more than the %d pinned: raise nmstateExamplesAccepted", accepted, nmstateExamplesAccepted)
	}
}
