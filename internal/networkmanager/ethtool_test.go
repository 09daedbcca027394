package networkmanager

import (
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// The kernel's feature list of the loopback device, read as ethtool -k reads it: every
// feature name nmoverlay maps is one the kernel knows, and lo's fixed ones are on.
func TestKernelFeatures(t *testing.T) {
	got, err := kernelFeatures("lo")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 40 {
		t.Fatalf("%d features: %v", len(got), got)
	}
	for _, on := range []string{"loopback", "rx-checksum", "tx-checksum-ip-generic"} {
		if !got[on] {
			t.Errorf("lo: %s off or missing (ethtool -k lo has it on, fixed)", on)
		}
	}
	for name := range state.EthtoolFeatures {
		if _, ok := got[name]; !ok && name != "fcoe-mtu" && name != "tx-checksum-fcoe-crc" && name != "tx-fcoe-segmentation" {
			t.Logf("the kernel here does not know %s", name)
		}
	}
	if _, err := kernelFeatures("no-such-dev0"); err == nil {
		t.Error("a device that does not exist: want an error")
	}
}

func TestSetAndReadEthtool(t *testing.T) {
	s := settings{}
	setEthtool(s, &state.EthtoolConfig{Feature: map[string]bool{"rx-gro": false, "rx-checksum": true, "tx-tcp-segmentation": false}})
	for option, want := range map[string]bool{"feature-gro": false, "feature-rx": true, "feature-tx-tcp-segmentation": false} {
		if v, ok := s["ethtool"][option].Value().(bool); !ok || v != want {
			t.Errorf("%s = %v, want %v", option, s["ethtool"][option], want)
		}
	}
	// Show reads back only what a profile sets: lo's rx-checksum, set on a profile.
	a := settings{"ethtool": {"feature-rx": dbus.MakeVariant(true)}}
	k, err := readKernelEthtool("lo", a)
	if err != nil || k == nil || len(k.Features) < 2 {
		t.Fatalf("readKernelEthtool: %+v, %v", k, err)
	}
	if c := ethtoolState(k, a); c == nil || len(c.Feature) != 1 || !c.Feature["rx-checksum"] {
		t.Errorf("ethtoolState: %+v", c)
	}
	if k, err := readKernelEthtool("lo", settings{}); k != nil || err != nil {
		t.Errorf("no features set: %+v, %v", k, err)
	}
}
