package node

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// synthetic is a node with n interfaces (every third down, every second up one with an
// address) and routes per interface routes each, plus a default route.
func synthetic(n, routes int) state.State {
	s := state.State{Routes: &state.Routes{}}
	s.Routes.Running = append(s.Routes.Running, state.Route{Destination: "0.0.0.0/0", NextHopAddress: "192.0.2.254", NextHopInterface: "eth0"})
	for i := range n {
		it := state.Interface{Name: fmt.Sprintf("veth%04d", i), Type: state.Veth, State: state.Up}
		if i%3 == 2 {
			it.State = state.Down
		} else if i%2 == 0 {
			on := true
			it.IPv4 = &state.IPConfig{Enabled: &on, Address: []state.Address{{IP: fmt.Sprintf("10.%d.%d.1", i/256, i%256), PrefixLength: 24}}}
		}
		s.Interfaces = append(s.Interfaces, it)
		for r := range routes {
			s.Routes.Running = append(s.Routes.Running, state.Route{Destination: fmt.Sprintf("10.%d.%d.0/24", r, i%256), NextHopInterface: it.Name})
		}
	}
	return s
}

func TestFitState(t *testing.T) {
	for _, tc := range []struct {
		name              string
		s                 state.State
		max               int
		wantSummary       []string // substrings; none: everything fits
		wantAllInterfaces bool
	}{
		{name: "a small node fits whole", s: synthetic(10, 2), max: MaxStateBytes, wantAllInterfaces: true},
		{name: "routes left out first", s: synthetic(200, 20), max: 64 << 10,
			wantSummary: []string{"running routes (all but default routes)"}, wantAllInterfaces: true},
		{name: "then interfaces, least useful first", s: synthetic(5000, 5), max: 256 << 10,
			wantSummary: []string{"running routes", "of 5000 interfaces (down ones first"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, summary, err := fitState(tc.s, tc.max)
			if err != nil {
				t.Fatal(err)
			}
			if len(raw) > tc.max {
				t.Fatalf("%d bytes, over %d", len(raw), tc.max)
			}
			if len(tc.wantSummary) == 0 && summary != "" {
				t.Fatalf("summarized a state that fits: %s", summary)
			}
			for _, want := range tc.wantSummary {
				if !strings.Contains(summary, want) {
					t.Errorf("summary %q lacks %q", summary, want)
				}
			}
			var got state.State
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			if tc.wantAllInterfaces != (len(got.Interfaces) == len(tc.s.Interfaces)) {
				t.Errorf("kept %d of %d interfaces", len(got.Interfaces), len(tc.s.Interfaces))
			}
			if got.Routes == nil || len(got.Routes.Running) == 0 || got.Routes.Running[0].Destination != "0.0.0.0/0" {
				t.Errorf("the default route was left out")
			}
			if len(got.Interfaces) < len(tc.s.Interfaces) {
				// Every kept interface ranks at least as useful as every one left out.
				kept := map[string]bool{}
				worst := 0
				for _, it := range got.Interfaces {
					kept[it.Name] = true
					worst = max(worst, usefulness(it))
				}
				for _, it := range tc.s.Interfaces {
					if !kept[it.Name] && usefulness(it) < worst {
						t.Fatalf("left out %s (rank %d) but kept one of rank %d", it.Name, usefulness(it), worst)
					}
				}
				// The summary names each interface left out, and none kept.
				for _, it := range tc.s.Interfaces {
					if named := strings.Contains(summary, " "+it.Name+",") || strings.HasSuffix(summary, " "+it.Name); named == kept[it.Name] {
						t.Fatalf("%s: kept %v, named in the summary %v", it.Name, kept[it.Name], named)
					}
				}
				t.Logf("%.300s...; kept %d interfaces in %d bytes", summary, len(got.Interfaces), len(raw))
			}
		})
	}
}

func TestNameListBounded(t *testing.T) {
	var ifaces []state.Interface
	for i := range 5 {
		ifaces = append(ifaces, state.Interface{Name: fmt.Sprintf("eth%d", 4-i)})
	}
	for _, tc := range []struct {
		max  int
		want string
	}{
		{100, "eth0, eth1, eth2, eth3, eth4"},
		{12, "eth0, eth1 and 3 more"},
		{0, " and 5 more"},
	} {
		if got := nameList(ifaces, tc.max); got != tc.want {
			t.Errorf("names in %d bytes: %q, want %q", tc.max, got, tc.want)
		}
	}
}
