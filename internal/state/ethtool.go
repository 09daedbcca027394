package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
)

// EthtoolConfig is an interface's ethtool section: the offload features by their kernel
// names (ethtool -k), the ring sizes (-g), the interrupt coalescing (-c), the pause
// frames (-a) and the forward error correction (--show-fec), each by nmstate's names.
type EthtoolConfig struct {
	_ struct{} `key:"channels" refused:"not applied yet"`
	_ struct{} `key:"msglvl" refused:"not applied yet"`

	Feature  FeatureSwitches `json:"feature,omitempty"`
	Ring     EthtoolValues   `json:"ring,omitempty"`
	Coalesce EthtoolValues   `json:"coalesce,omitempty"`
	Pause    *EthtoolPause   `json:"pause,omitempty"`
	FEC      *EthtoolFEC     `json:"fec,omitempty" nmstate:"needs=ethtool-fec"`
}

// EthtoolFEC is a port's forward error correction: the driver's automatic choice, a
// mode, or both (the driver picks among them). A node reports the mode the port runs.
type EthtoolFEC struct {
	Auto *bool  `json:"auto,omitempty"`
	Mode string `json:"mode,omitempty" nmstate:"one-of=off|rs|baser|llrs"`
}

// checkDecoded refuses a section that chooses nothing: without auto the port needs a
// mode.
func (f *EthtoolFEC) checkDecoded(d *decoder, path string, m map[string]any) {
	if _, given := m["mode"]; !given && (f.Auto == nil || !*f.Auto) {
		d.fail(path, "needs a mode unless auto is true")
	}
}

// FeatureSwitches are offload features by their kernel names, each on or off.
type FeatureSwitches map[string]bool

// EthtoolValues are ring or coalesce parameters by nmstate's name: 32-bit counts, except
// coalesce's adaptive-rx and adaptive-tx, switches (1 on), written as booleans as nmstate
// writes them.
type EthtoolValues map[string]uint32

// MarshalJSON writes the switches as booleans, the counts as numbers.
func (v EthtoolValues) MarshalJSON() ([]byte, error) {
	out := map[string]any{}
	for k, n := range v {
		if EthtoolCoalesceSwitches[k] {
			out[k] = n != 0
		} else {
			out[k] = n
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes: counts, and switches as booleans.
func (v *EthtoolValues) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	out := EthtoolValues{}
	for k, x := range raw {
		switch t := x.(type) {
		case bool:
			out[k] = 0
			if t {
				out[k] = 1
			}
		case json.Number:
			n, err := strconv.ParseUint(t.String(), 10, 32)
			if err != nil {
				return fmt.Errorf("ethtool %s: %w", k, err)
			}
			out[k] = uint32(n)
		default:
			return fmt.Errorf("ethtool %s: %v is not a number or a boolean", k, x)
		}
	}
	*v = out
	return nil
}

// EthtoolPause is the pause frame settings.
type EthtoolPause struct {
	Autoneg *bool `json:"autoneg,omitempty"`
	RX      *bool `json:"rx,omitempty"`
	TX      *bool `json:"tx,omitempty"`
}

// EthtoolRing are nmstate's ring parameters; NetworkManager's option is "ring-" and the
// name.
var EthtoolRing = []string{"rx", "rx-jumbo", "rx-mini", "tx"}

// EthtoolCoalesce are nmstate's coalesce parameters; NetworkManager's option is
// "coalesce-" and the name.
var EthtoolCoalesce = []string{"adaptive-rx", "adaptive-tx", "pkt-rate-high", "pkt-rate-low", "rx-frames",
	"rx-frames-high", "rx-frames-irq", "rx-frames-low", "rx-usecs", "rx-usecs-high", "rx-usecs-irq", "rx-usecs-low",
	"sample-interval", "stats-block-usecs", "tx-frames", "tx-frames-high", "tx-frames-irq", "tx-frames-low",
	"tx-usecs", "tx-usecs-high", "tx-usecs-irq", "tx-usecs-low"}

// EthtoolCoalesceSwitches are the coalesce parameters that are on or off.
var EthtoolCoalesceSwitches = map[string]bool{"adaptive-rx": true, "adaptive-tx": true}

// EthtoolFeatures maps the kernel's feature names nmstate takes to NetworkManager's
// ethtool option names: most are "feature-" and the kernel's name, a few have legacy
// short names in NetworkManager (rx-checksum is "feature-rx").
var EthtoolFeatures = func() map[string]string {
	m := map[string]string{
		"rx-checksum": "feature-rx", "tx-generic-segmentation": "feature-gso", "rx-gro": "feature-gro",
		"rx-lro": "feature-lro", "rx-vlan-hw-parse": "feature-rxvlan", "tx-vlan-hw-insert": "feature-txvlan",
		"rx-ntuple-filter": "feature-ntuple", "rx-hashing": "feature-rxhash", "highdma": "feature-highdma",
	}
	for _, k := range []string{"esp-hw-offload", "esp-tx-csum-hw-offload", "fcoe-mtu", "hw-tc-offload", "l2-fwd-offload",
		"loopback", "macsec-hw-offload", "rx-all", "rx-fcs", "rx-gro-hw", "rx-gro-list", "rx-udp-gro-forwarding",
		"rx-udp_tunnel-port-offload", "rx-vlan-filter", "rx-vlan-stag-filter", "rx-vlan-stag-hw-parse", "tls-hw-record",
		"tls-hw-rx-offload", "tls-hw-tx-offload", "tx-checksum-fcoe-crc", "tx-checksum-ipv4", "tx-checksum-ipv6",
		"tx-checksum-ip-generic", "tx-checksum-sctp", "tx-esp-segmentation", "tx-fcoe-segmentation",
		"tx-gre-csum-segmentation", "tx-gre-segmentation", "tx-gso-list", "tx-gso-partial", "tx-gso-robust",
		"tx-ipxip4-segmentation", "tx-ipxip6-segmentation", "tx-nocache-copy", "tx-scatter-gather",
		"tx-scatter-gather-fraglist", "tx-sctp-segmentation", "tx-tcp6-segmentation", "tx-tcp-ecn-segmentation",
		"tx-tcp-mangleid-segmentation", "tx-tcp-segmentation", "tx-tunnel-remcsum-segmentation", "tx-udp-segmentation",
		"tx-udp_tnl-csum-segmentation", "tx-udp_tnl-segmentation", "tx-vlan-stag-hw-insert"} {
		m[k] = "feature-" + k
	}
	return m
}()

// decodeValue reads the features by their kernel names, each on or off.
func (f *FeatureSwitches) decodeValue(d *decoder, path string, v any) bool {
	m, ok := d.object(path, v, slices.Sorted(maps.Keys(EthtoolFeatures)), nil)
	if !ok {
		return false
	}
	*f = FeatureSwitches{}
	for k, fv := range m {
		if b := d.boolean(join(path, k), fv); b != nil {
			(*f)[k] = *b
		}
	}
	return true
}

// decodeValue reads ring or coalesce parameters, as the key they are under says. A
// ring's maximums are what nmstate shows and ignores when applying, accepted so that a
// shown state applies back.
func (ev *EthtoolValues) decodeValue(d *decoder, path string, v any) bool {
	known, readOnly := EthtoolCoalesce, []string(nil)
	if d.keys[len(d.keys)-1] == "ring" {
		known, readOnly = EthtoolRing, []string{"rx-max", "rx-jumbo-max", "rx-mini-max", "tx-max"}
	}
	m, ok := d.object(path, v, append(slices.Clone(known), readOnly...), nil)
	if !ok {
		return false
	}
	out := EthtoolValues{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if slices.Contains(readOnly, k) {
			continue
		}
		if EthtoolCoalesceSwitches[k] {
			if b := d.boolean(join(path, k), m[k]); b != nil {
				out[k] = 0
				if *b {
					out[k] = 1
				}
			}
			continue
		}
		if n := d.integer(join(path, k), m[k], 0, math.MaxUint32); n != nil {
			out[k] = uint32(*n)
		}
	}
	*ev = out
	return true
}

// verifyEthtool compares each stated feature, ring size, coalescing parameter and pause
// setting with what the kernel runs.
func verifyEthtool(add func(string, ...any), path string, want, got *EthtoolConfig) {
	if got == nil {
		got = &EthtoolConfig{}
	}
	for _, sec := range []struct {
		name      string
		want, got EthtoolValues
	}{{"ring", want.Ring, got.Ring}, {"coalesce", want.Coalesce, got.Coalesce}} {
		for _, k := range slices.Sorted(maps.Keys(sec.want)) {
			if g, ok := sec.got[k]; !ok {
				add("%s.%s.%s: not reported by the device, want %d", path, sec.name, k, sec.want[k])
			} else if g != sec.want[k] {
				add("%s.%s.%s: %d, want %d", path, sec.name, k, g, sec.want[k])
			}
		}
	}
	if w := want.Pause; w != nil {
		g := got.Pause
		if g == nil {
			g = &EthtoolPause{}
		}
		verifyField(add, path+".pause.autoneg", w.Autoneg, g.Autoneg)
		verifyField(add, path+".pause.rx", w.RX, g.RX)
		verifyField(add, path+".pause.tx", w.TX, g.TX)
	}
	if w := want.FEC; w != nil {
		g := got.FEC
		if g == nil {
			add("%s.fec: not reported by the device", path)
		} else {
			verifyField(add, path+".fec.auto", w.Auto, g.Auto)
			if w.Mode != "" && g.Mode != w.Mode {
				add("%s.fec.mode: %q, want %q", path, g.Mode, w.Mode)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(want.Feature)) {
		g, ok := false, false
		if got != nil {
			g, ok = got.Feature[k]
		}
		if !ok {
			add("%s.feature.%s: not reported by the device, want %t", path, k, want.Feature[k])
		} else if g != want.Feature[k] {
			add("%s.feature.%s: %t, want %t", path, k, g, want.Feature[k])
		}
	}
}
