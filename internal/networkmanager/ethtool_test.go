package networkmanager

import (
	"fmt"
	"strings"
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

// TestFEC: a FEC section as the bits NetworkManager's fec-mode and the driver take, and
// what a port's ETHTOOL_GFECPARAM answer reports: the mode configured, or the one running
// when auto alone is.
func TestFEC(t *testing.T) {
	on, off := true, false
	for _, tc := range []struct {
		fec  state.EthtoolFEC
		bits uint32
	}{
		{state.EthtoolFEC{Auto: &on}, 1 << 1},
		{state.EthtoolFEC{Auto: &off, Mode: "rs"}, 1 << 3},
		{state.EthtoolFEC{Mode: "off"}, 1 << 2},
		{state.EthtoolFEC{Auto: &on, Mode: "baser"}, 1<<1 | 1<<4},
		{state.EthtoolFEC{Mode: "llrs"}, 1 << 5},
	} {
		if got := fecBits(&tc.fec); got != tc.bits {
			t.Errorf("%+v: bits %#x, want %#x", tc.fec, got, tc.bits)
		}
		s := settings{}
		setEthtool(s, &state.EthtoolConfig{FEC: &tc.fec})
		if v, ok := s["ethtool"]["fec-mode"].Value().(uint32); !ok || v != tc.bits {
			t.Errorf("%+v: fec-mode %v", tc.fec, s["ethtool"]["fec-mode"])
		}
	}
	for _, tc := range []struct {
		configured, active uint32
		want               string // auto and mode; "" for none
	}{
		{1 << 3, 1 << 3, "false rs"},
		{1 << 1, 1 << 2, "true off"},        // netdevsim runs off under auto
		{1<<1 | 1<<4, 1 << 4, "true baser"}, // auto and a mode: the mode configured
		{1 << 3, 1 << 0, "false rs"},        // link down: nothing runs, the mode is still the one configured
		{1 << 0, 1 << 0, ""},                // no FEC on this port
		{0, 0, ""},
	} {
		got := ""
		if f := fecState(state.EthtoolValues{"configured": tc.configured, "active": tc.active}); f != nil {
			got = fmt.Sprint(*f.Auto, " ", f.Mode)
		}
		if strings.TrimSpace(got) != tc.want {
			t.Errorf("configured %#x, active %#x: %q, want %q", tc.configured, tc.active, got, tc.want)
		}
	}
	// lo has no FEC: the ioctl fails, and nothing is reported.
	k, err := readKernelEthtool("lo", settings{"ethtool": {"fec-mode": dbus.MakeVariant(uint32(1 << 3))}})
	if err != nil || k == nil || k.FEC != nil {
		t.Fatalf("readKernelEthtool: %+v, %v", k, err)
	}
	if c := ethtoolState(k, settings{"ethtool": {"fec-mode": dbus.MakeVariant(uint32(1 << 3))}}); c != nil {
		t.Errorf("lo: %+v", c)
	}
}
