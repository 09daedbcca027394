package state

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

// TestMarshalStable pins the JSON of parsed states: the engine's input digests are taken
// over it, so a change of it would start every owned profile again after an upgrade.
func TestMarshalStable(t *testing.T) {
	var out strings.Builder
	names := make([]string, 0, len(validDocs))
	for n := range validDocs {
		names = append(names, n)
	}
	sort.Strings(names)
	docs := []string{}
	for _, n := range names {
		docs = append(docs, validDocs[n])
	}
	docs = append(docs, publishedOVS...)
	docs = append(docs, localnetDoc, brExDoc)
	for i, doc := range docs {
		s, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("doc %d: %v", i, err)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "%s\n", b)
	}
	const golden = "testdata/marshal.golden"
	if os.Getenv("WRITE_MARSHAL_GOLDEN") != "" {
		os.WriteFile(golden, []byte(out.String()), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		gl, wl := strings.Split(out.String(), "\n"), strings.Split(string(want), "\n")
		for i := range gl {
			if i < len(wl) && gl[i] != wl[i] {
				t.Errorf("state %d:\n got %s\nwant %s", i, gl[i], wl[i])
			}
		}
	}
}
