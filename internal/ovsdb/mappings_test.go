package ovsdb

import (
	"errors"
	"testing"
)

func TestParseMappings(t *testing.T) {
	for in, want := range map[string]string{
		"":                      "",
		"physnet:br-ex":         "physnet:br-ex",
		"b:br1, a:br-ex":        "a:br-ex,b:br1",
		"localnet1:ovs-br1,a:b": "a:b,localnet1:ovs-br1",
	} {
		m, err := ParseMappings(in)
		if err != nil || m.String() != want {
			t.Errorf("ParseMappings(%q) = %q, %v; want %q", in, m.String(), err, want)
		}
	}
	for _, bad := range []string{"physnet", ":br", "a:", "a:b,a:c"} {
		if _, err := ParseMappings(bad); err == nil {
			t.Errorf("ParseMappings(%q): no error", bad)
		}
	}
}

func TestReconcile(t *testing.T) {
	mp := func(s string) Mappings { m, _ := ParseMappings(s); return m }
	for _, tc := range []struct {
		name               string
		all, owned, want   string
		absent             []string
		wantAll, wantOwned string
		foreign            bool
	}{
		{name: "first mapping", want: "localnet1:ovs-br1", wantAll: "localnet1:ovs-br1", wantOwned: "localnet1:ovs-br1"},
		{name: "next to another's mapping, which is kept", all: "physnet:br-ex", want: "localnet1:ovs-br1",
			wantAll: "localnet1:ovs-br1,physnet:br-ex", wantOwned: "localnet1:ovs-br1"},
		{name: "a policy deleted: its mapping goes, another's stays", all: "localnet1:ovs-br1,physnet:br-ex", owned: "localnet1:ovs-br1",
			wantAll: "physnet:br-ex"},
		{name: "absent on our own", all: "localnet1:ovs-br1", owned: "localnet1:ovs-br1", absent: []string{"localnet1"}},
		{name: "absent on another's: refused", all: "physnet:br-ex", absent: []string{"physnet"}, foreign: true},
		{name: "absent on one that does not exist", all: "physnet:br-ex", absent: []string{"gone"}, wantAll: "physnet:br-ex"},
		{name: "another's localnet on another bridge: refused", all: "physnet:br-ex", want: "physnet:ovs-br1", foreign: true},
		{name: "another's mapping wanted as it is: stays theirs", all: "physnet:br-ex", want: "physnet:br-ex", wantAll: "physnet:br-ex"},
		{name: "ours moved to another bridge", all: "localnet1:ovs-br1", owned: "localnet1:ovs-br1", want: "localnet1:ovs-br2",
			wantAll: "localnet1:ovs-br2", wantOwned: "localnet1:ovs-br2"},
		{name: "ours changed by someone since: theirs now, kept", all: "localnet1:other", owned: "localnet1:ovs-br1",
			wantAll: "localnet1:other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := HostMappings{All: mp(tc.all), Owned: mp(tc.owned)}
			next, err := Reconcile(cur, mp(tc.want), tc.absent)
			var fe *ForeignError
			if tc.foreign {
				if !errors.As(err, &fe) {
					t.Fatalf("err = %v, want a ForeignError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if next.All.String() != tc.wantAll || next.Owned.String() != tc.wantOwned {
				t.Errorf("all %q owned %q; want %q, %q", next.All, next.Owned, tc.wantAll, tc.wantOwned)
			}
		})
	}
}
