package state

import (
	"errors"
	"strings"
	"testing"

	"github.com/nmoverlay/nmoverlay/api/field"
)

// FuzzParse: no input panics, and every rejection names a path and a reason.
func FuzzParse(f *testing.F) {
	for _, doc := range validDocs {
		f.Add(doc)
	}
	for _, tc := range invalidDocs {
		f.Add(tc.doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		s, err := Parse([]byte(doc))
		if err == nil {
			if _, err := Order(s); err != nil && !strings.Contains(err.Error(), "cycle") {
				t.Fatalf("accepted state cannot be ordered: %v", err)
			}
			return
		}
		var errs field.Errors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Fatalf("rejection without field errors: %v", err)
		}
		for _, e := range errs {
			if e.Path == "" || e.Reason == "" {
				t.Fatalf("rejection without path or reason: %#v", e)
			}
		}
		if len(s.Interfaces) != 0 || s.Routes != nil || s.DNSResolver != nil {
			t.Fatalf("rejected input yielded state %+v", s)
		}
	})
}
