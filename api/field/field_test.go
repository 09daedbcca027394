package field

import (
	"errors"
	"testing"
)

func TestMessages(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&Error{Path: "interfaces[2].vlan.id", Reason: "5000 is out of range 1..4094"}, "interfaces[2].vlan.id: 5000 is out of range 1..4094"},
		{Invalid("runDir", "/tmp/x", "is under /tmp"), `runDir: "/tmp/x" is under /tmp`},
		{Errors{{Path: "a", Reason: "x"}, {Path: "b[1]", Reason: "y"}}, "a: x; b[1]: y"},
		{Errors{{Path: "mtu", Reason: "x"}}.Within("spec.desiredState.interfaces[0]."), "spec.desiredState.interfaces[0].mtu: x"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%#v: %q, want %q", tc.err, got, tc.want)
		}
	}
	var fe *Error
	if !errors.As(Errors{{Path: "a", Reason: "x"}}[0], &fe) || fe.Path != "a" {
		t.Error("an Errors element is not an *Error")
	}
}

func TestWithinLeavesTheOriginal(t *testing.T) {
	errs := Errors{{Path: "mtu", Reason: "x"}}
	_ = errs.Within("spec.")
	if errs[0].Path != "mtu" {
		t.Errorf("Within changed its receiver: %s", errs[0].Path)
	}
}
