package main

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    pkg
		want string // a substring of the one problem; "" for none
	}{
		{name: "down a floor", p: pkg{ImportPath: module + "/internal/node", Imports: []string{module + "/internal/backend", "fmt"}}},
		{name: "the handler importing a backend", p: pkg{ImportPath: module + "/internal/node", Imports: []string{module + "/internal/networkmanager"}},
			want: "knows backends only through internal/backend"},
		{name: "up a floor", p: pkg{ImportPath: module + "/internal/state", Imports: []string{module + "/internal/backend"}},
			want: "internal/state (floor 1) imports internal/backend (floor 5)"},
		{name: "across a floor", p: pkg{ImportPath: module + "/internal/cluster", Imports: []string{module + "/internal/node"}},
			want: "(floor 8) imports internal/node (floor 8)"},
		{name: "a package with no floor", p: pkg{ImportPath: module + "/internal/newthing"}, want: "has no floor"},
		{name: "nm-overlay linking client-go", p: pkg{ImportPath: module + "/cmd/nm-overlay", Deps: []string{"k8s.io/client-go/rest"}},
			want: "must link no Kubernetes client"},
		{name: "tests are above the floors", p: pkg{ImportPath: module + "/test/kit", Imports: []string{module + "/cmd/handler"}}},
		{name: "another module", p: pkg{ImportPath: "example.com/x", Imports: []string{module + "/internal/node"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := check(tc.p)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("problems %v, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("problems %v, want one with %q", got, tc.want)
			}
		})
	}
}
