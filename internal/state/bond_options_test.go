package state

import (
	"encoding/json"
	"testing"
)

// nmstate types bond options in what it shows (nmstatectl show): numbers, booleans and
// names, whatever NetworkManager's strings say.
func TestBondOptionsJSON(t *testing.T) {
	for _, tc := range []struct {
		option, value string
		want          string // the JSON value
	}{
		{"miimon", "100", `100`},
		{"miimon", "0x64", `100`},
		{"updelay", "0", `0`},
		{"ad_actor_sys_prio", "65535", `65535`},
		{"num_grat_arp", "1", `1`},
		{"arp_missed_max", "2", `2`},
		{"miimon", "often", `"often"`}, // not a number: as it is, never lost
		{"use_carrier", "1", `true`},
		{"use_carrier", "0", `false`},
		{"tlb_dynamic_lb", "yes", `true`},
		{"balance_slb", "false", `false`},
		{"lacp_rate", "1", `"fast"`},
		{"lacp_rate", "slow", `"slow"`},
		{"all_slaves_active", "0", `"dropped"`},
		{"xmit_hash_policy", "2", `"layer2+3"`},
		{"xmit_hash_policy", "layer3+4", `"layer3+4"`},
		{"arp_validate", "5", `"filter_active"`},
		{"ad_select", "9", `"9"`}, // out of range: as it is
		{"primary", "eth1", `"eth1"`},
		{"arp_ip_target", "192.0.2.1,192.0.2.2", `"192.0.2.1,192.0.2.2"`},
		{"ad_actor_system", "02:00:00:00:00:01", `"02:00:00:00:00:01"`},
	} {
		b, err := json.Marshal(BondOptions{tc.option: tc.value})
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"` + tc.option + `":` + tc.want + `}`; string(b) != want {
			t.Errorf("%s=%s: %s, want %s", tc.option, tc.value, b, want)
		}
		var back BondOptions
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !SameBondOption(tc.option, back[tc.option], tc.value) {
			t.Errorf("%s=%s read back as %q", tc.option, tc.value, back[tc.option])
		}
	}
}

func TestSameBondOption(t *testing.T) {
	for _, tc := range []struct {
		option, a, b string
		same         bool
	}{
		{"lacp_rate", "fast", "1", true},
		{"lacp_rate", "slow", "1", false},
		{"use_carrier", "true", "1", true},
		{"use_carrier", "true", "0", false},
		{"miimon", "100", "0x64", true},
		{"miimon", "100", "101", false},
		{"primary", "eth1", "eth2", false},
		{"xmit_hash_policy", "layer2", "0", true},
	} {
		if got := SameBondOption(tc.option, tc.a, tc.b); got != tc.same {
			t.Errorf("SameBondOption(%s, %s, %s) = %v", tc.option, tc.a, tc.b, got)
		}
	}
	var o BondOptions
	if err := json.Unmarshal([]byte(`{"miimon":[1]}`), &o); err == nil {
		t.Error("a list as an option's value was read")
	}
}

// NetworkManager takes a boolean option as the kernel does, 1 or 0: nmstate's true and
// false are translated; any other value goes as written.
func TestKernelBondOption(t *testing.T) {
	for _, tc := range []struct{ option, value, want string }{
		{"use_carrier", "true", "1"},
		{"use_carrier", "false", "0"},
		{"tlb_dynamic_lb", "yes", "1"},
		{"lacp_active", "off", "0"},
		{"use_carrier", "1", "1"},
		{"use_carrier", "maybe", "maybe"}, // not a boolean: NetworkManager says why
		{"miimon", "true", "true"},        // not a boolean option
		{"lacp_rate", "fast", "fast"},
		{"primary", "eth1", "eth1"},
	} {
		if got := KernelBondOption(tc.option, tc.value); got != tc.want {
			t.Errorf("%s %q: %q, want %q", tc.option, tc.value, got, tc.want)
		}
	}
}
