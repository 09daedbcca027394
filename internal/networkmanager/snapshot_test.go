package networkmanager_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/snapshots"
)

var update = flag.Bool("update", false, "rewrite the translations recorded beside the snapshots")

// TestTranslateRecorded translates snapshots recorded on real nodes (the node and VM
// tiers, NMOVERLAY_RECORD_SNAPSHOTS): each reads back what had just been applied there,
// as the engine's own verification did then, and translates as it did when recorded
// (the .state file beside it, rewritten with -update). Together they cover every kind
// the issue names; a recording that no longer shows one fails here.
func TestTranslateRecorded(t *testing.T) {
	files, err := filepath.Glob("testdata/snapshots/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded snapshots: %v", err)
	}
	covered := map[string]bool{}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var rec snapshots.Recorded
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatal(err)
			}
			got := rec.Snapshot.State()
			desired := rec.Desired
			desired.OVN = nil // Open vSwitch's database, not NetworkManager's: not in the snapshot
			if diffs := state.Verify(desired, got); len(diffs) > 0 {
				t.Errorf("%s: the translation does not read back what was applied:\n%s", rec.Where, strings.Join(diffs, "\n"))
			}
			for _, k := range coverage(desired, got) {
				covered[k] = true
			}
			out, err := json.MarshalIndent(got, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(f, ".json") + ".state"
			if *update {
				if err := os.WriteFile(golden, append(out, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if string(want) != string(out)+"\n" {
				t.Errorf("%s: the translation changed (go test -run TestTranslateRecorded -update, then read the diff)", rec.Where)
			}
		})
	}
	for _, k := range []string{"bond", "linux-bridge with port VLANs", "vlan", "vrf", "ovs-bridge", "sr-iov", "dhcp", "static routes", "dns"} {
		if !covered[k] {
			t.Errorf("no recorded snapshot has %s", k)
		}
	}
}

// coverage names what a recording shows of the kinds the read-back must be tested on.
func coverage(desired, got state.State) []string {
	var out []string
	for _, it := range desired.Interfaces {
		if it.State == state.Absent {
			continue
		}
		switch it.Type {
		case state.Bond, state.VLAN, state.VRF, state.OVSBridge:
			out = append(out, string(it.Type))
		case state.LinuxBridge:
			if b := state.SectionOf[*state.BridgeConfig](it); b != nil {
				for _, p := range b.Port {
					if p.VLAN != nil {
						out = append(out, "linux-bridge with port VLANs")
					}
				}
			}
		}
		if it.Ethernet != nil && it.Ethernet.SRIOV != nil {
			out = append(out, "sr-iov")
		}
		if it.IPv4 != nil && it.IPv4.DHCP != nil && *it.IPv4.DHCP {
			out = append(out, "dhcp")
		}
	}
	if desired.Routes != nil && len(desired.Routes.Config) > 0 && got.Routes != nil && len(got.Routes.Config) > 0 {
		out = append(out, "static routes")
	}
	if desired.DNSResolver != nil && desired.DNSResolver.Config != nil && len(desired.DNSResolver.Config.Server) > 0 {
		out = append(out, "dns")
	}
	return out
}
