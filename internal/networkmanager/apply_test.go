package networkmanager

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

func TestApplyOptionsTimeouts(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		in                   ApplyOptions
		activation, rollback time.Duration
		fails                bool
	}{
		{"defaults", ApplyOptions{}, DefaultActivationTimeout, DefaultActivationTimeout + 60*time.Second, false},
		{"a short rollback timeout halves the activation wait", ApplyOptions{RollbackTimeout: 6 * time.Second}, 3 * time.Second, 6 * time.Second, false},
		{"activation as long as the rollback", ApplyOptions{RollbackTimeout: 30 * time.Second, ActivationTimeout: 30 * time.Second}, 0, 0, true},
		{"activation longer than the rollback", ApplyOptions{RollbackTimeout: 30 * time.Second, ActivationTimeout: 60 * time.Second}, 0, 0, true},
		{"both given, in order", ApplyOptions{RollbackTimeout: 90 * time.Second, ActivationTimeout: 60 * time.Second}, 60 * time.Second, 90 * time.Second, false},
	} {
		got, err := tc.in.withDefaults()
		if (err != nil) != tc.fails {
			t.Errorf("%s: error %v, want failure %v", tc.name, err, tc.fails)
			continue
		}
		if !tc.fails && (got.ActivationTimeout != tc.activation || got.RollbackTimeout != tc.rollback) {
			t.Errorf("%s: activation %s rollback %s, want %s and %s", tc.name, got.ActivationTimeout, got.RollbackTimeout, tc.activation, tc.rollback)
		}
	}
}

func TestStages(t *testing.T) {
	s, _ := state.Parse([]byte(`
interfaces:
- {name: bond0, type: bond, link-aggregation: {mode: balance-rr, port: [eth1, eth2]}}
- {name: bond0.102, type: vlan, vlan: {id: 102, base-iface: bond0}}
- {name: mv0, type: mac-vlan, mac-vlan: {base-iface: bond0.102, mode: bridge}}
- {name: eth3.7, type: vlan, vlan: {id: 7, base-iface: eth3}}
- {name: eth4, type: ethernet}
`))
	acts := func(names ...string) []activation {
		var out []activation
		for _, n := range names {
			out = append(out, activation{name: n, key: n})
		}
		return out
	}
	names := func(st [][]activation) [][]string {
		var out [][]string
		for _, stage := range st {
			var n []string
			for _, a := range stage {
				n = append(n, a.name)
			}
			out = append(out, n)
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		activating []activation
		want       [][]string
	}{
		{"a VLAN waits for its new bond, a MAC-VLAN for that VLAN; a VLAN on an interface not activated does not wait",
			acts("eth1", "eth2", "bond0", "bond0.102", "mv0", "eth3.7", "eth4"),
			[][]string{{"eth1", "eth2", "bond0", "eth3.7", "eth4"}, {"bond0.102"}, {"mv0"}}},
		{"the bond unchanged: the VLAN starts at once", acts("bond0.102", "eth4"), [][]string{{"bond0.102", "eth4"}}},
		{"nothing to activate", nil, nil},
	} {
		if got := names(stages(tc.activating, &applySteps{interfaces: s.Interfaces})); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: stages %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNotActive(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("call: %w", dbus.Error{Name: "org.freedesktop.NetworkManager.ConnectionNotActive"}), true},
		{dbus.Error{Name: "org.freedesktop.NetworkManager.UnknownConnection"}, false},
		{errors.New("org.freedesktop.NetworkManager.ConnectionNotActive"), false},
	} {
		if got := notActive(tc.err); got != tc.want {
			t.Errorf("notActive(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestEvery: the checkpoint keeper's clock: a call each interval while the apply runs, one
// more at stop, none after.
func TestEvery(t *testing.T) {
	var calls atomic.Int32
	stop := every(context.Background(), 20*time.Millisecond, func() { calls.Add(1) })
	for deadline := time.Now().Add(5 * time.Second); calls.Load() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls in 5 s at a 20 ms interval", calls.Load())
		}
	}
	// Stop's own call is the one after the last tick's: ticks may still land in between,
	// so what is checked is that stop returns having called, and nothing after.
	during := calls.Load()
	stop()
	after := calls.Load()
	if after < during+1 {
		t.Fatalf("stop returned without calling (%d calls before it, %d after)", during, after)
	}
	time.Sleep(50 * time.Millisecond)
	if calls.Load() != after {
		t.Fatal("called after stop")
	}
}

func TestWaves(t *testing.T) {
	act := func(name string) activation { return activation{name: name, key: name} }
	ovsIface := activation{name: "ovs1", key: "ovs1"}
	pl := &applySteps{perIface: map[string]profileExtras{
		"eth1":  {port: &portOf{controller: "br0", kind: "bridge"}},
		"eth2":  {port: &portOf{controller: "br0", kind: "bridge"}},
		"bond0": {port: &portOf{controller: "br1", kind: "bridge"}},
		"eth4":  {port: &portOf{controller: "bond0", kind: "bond"}},
		"eth5":  {port: &portOf{controller: "bond9", kind: "bond"}}, // its controller is not in this stage
		"ovs1":  {port: &portOf{controller: "some-uuid", kind: "ovs-port", ovsPort: "ovs1"}},
	}}
	for _, tc := range []struct {
		name  string
		stage []activation
		want  [][]string
	}{
		{"unrelated interfaces: one wave", []activation{act("eth3"), act("eth6")}, [][]string{{"eth3", "eth6"}}},
		{"a bridge, then its ports", []activation{act("eth1"), act("br0"), act("eth2"), act("eth3")}, [][]string{{"br0", "eth3"}, {"eth1", "eth2"}}},
		{"a bridge, its bond, the bond's port", []activation{act("eth4"), act("bond0"), act("br1")}, [][]string{{"br1"}, {"bond0"}, {"eth4"}}},
		{"a port whose controller is not activated here", []activation{act("eth5")}, [][]string{{"eth5"}}},
		{"an OVS interface: its controllers have stages of their own", []activation{ovsIface}, [][]string{{"ovs1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [][]string
			for _, wave := range waves(tc.stage, pl) {
				var names []string
				for _, i := range wave {
					names = append(names, tc.stage[i].name)
				}
				got = append(got, names)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestInWindow(t *testing.T) {
	t.Run("each once, never more than the window at once", func(t *testing.T) {
		var running, most atomic.Int32
		called := make([]atomic.Int32, 50)
		err := inWindow(50, 4, func(i int) error {
			now := running.Add(1)
			for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
			}
			called[i].Add(1)
			time.Sleep(time.Millisecond)
			running.Add(-1)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := range called {
			if called[i].Load() != 1 {
				t.Errorf("%d called %d times", i, called[i].Load())
			}
		}
		if most.Load() > 4 {
			t.Errorf("%d at once, window 4", most.Load())
		}
	})
	t.Run("after a refusal nothing starts, and the first in order is returned", func(t *testing.T) {
		var calls atomic.Int32
		err := inWindow(100, 1, func(i int) error {
			calls.Add(1)
			if i >= 3 {
				return fmt.Errorf("refused %d", i)
			}
			return nil
		})
		if err == nil || err.Error() != "refused 3" {
			t.Errorf("got %v, want refused 3", err)
		}
		if calls.Load() != 4 {
			t.Errorf("%d calls, want 4: none after the refusal", calls.Load())
		}
	})
}
