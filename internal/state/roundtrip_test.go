package state

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestRoundTripPublished: every field of a published policy that Parse accepts is in the
// parsed state, with its value. Parse→Marshal→Parse→Marshal only shows idempotence: a
// field the decoder drops would pass it. This compares the document itself, leaf by leaf,
// with what the state marshals back.
func TestRoundTripPublished(t *testing.T) {
	files, err := filepath.Glob("../../test/published/testdata/*/*.yaml")
	if err != nil || len(files) < 60 {
		t.Fatalf("published examples: %d files, %v", len(files), err)
	}
	checked := 0
	for _, f := range files {
		name := strings.TrimPrefix(f, "../../test/published/testdata/")
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var policy struct {
			Spec struct {
				DesiredState json.RawMessage `json:"desiredState"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(b, &policy); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s, err := Parse(policy.Spec.DesiredState)
		if err != nil {
			continue // refused: the published-examples test says why
		}
		checked++
		back, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var want, got any
		if err := json.Unmarshal(policy.Spec.DesiredState, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(back, &got); err != nil {
			t.Fatal(err)
		}
		for _, d := range missing("", want, got) {
			t.Errorf("%s: %s", name, d)
		}
	}
	if checked < 45 {
		t.Errorf("only %d published policies parsed", checked)
	}
}

// missing lists the leaves of want that got lacks or holds with another value. Lists are
// matched by index; a mapping in got may hold more (defaults the state fills in).
func missing(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: a mapping, read back as %v", orRoot(path), got)}
		}
		var out []string
		for _, k := range slices.Sorted(maps.Keys(w)) {
			gv, ok := g[k]
			if !ok {
				if leafless(w[k]) {
					continue // an empty list or mapping says nothing the state must keep
				}
				out = append(out, fmt.Sprintf("%s: dropped (was %v)", key(path, k), w[k]))
				continue
			}
			out = append(out, missing(key(path, k), w[k], gv)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: %d entries, read back as %v", orRoot(path), len(w), got)}
		}
		var out []string
		for i := range w {
			out = append(out, missing(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return out
	}
	if !reflect.DeepEqual(want, got) && fmt.Sprint(want) != fmt.Sprint(got) && !sameWritten(path, want, got) {
		return []string{fmt.Sprintf("%s: %v, read back as %v", orRoot(path), want, got)}
	}
	return nil
}

// sameWritten: two ways nmstate accepts of writing one value, the state keeping one.
func sameWritten(path string, want, got any) bool {
	switch {
	case strings.HasSuffix(path, ".bridge.options.stp"):
		// An OVS bridge's stp is written as a boolean; the state keeps {enabled: ...}.
		g, ok := got.(map[string]any)
		return ok && len(g) == 1 && reflect.DeepEqual(g["enabled"], want)
	case strings.HasSuffix(path, ".infiniband.pkey"):
		// A partition key is written as a number or a hex string; the state keeps the number.
		w, ok := want.(string)
		var n int64
		_, err := fmt.Sscanf(w, "0x%x", &n)
		return ok && err == nil && fmt.Sprint(got) == fmt.Sprint(n)
	}
	return false
}

func leafless(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	case nil:
		return true
	}
	return false
}

func key(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func orRoot(path string) string {
	if path == "" {
		return "desiredState"
	}
	return path
}
