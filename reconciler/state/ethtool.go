package state

import (
	"maps"
	"slices"
)

// EthtoolConfig is an interface's ethtool section; of it nmoverlay applies the offload
// features, by their kernel names (ethtool -k).
type EthtoolConfig struct {
	Feature map[string]bool `json:"feature,omitempty"`
}

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

func (d *decoder) ethtool(path string, v any) *EthtoolConfig {
	m, ok := d.object(path, v, []string{"feature"}, map[string]string{
		"ring": "not applied yet", "coalesce": "not applied yet", "pause": "not applied yet", "fec": "not applied yet",
		"channels": "not applied yet", "msglvl": "not applied yet"})
	if !ok {
		return nil
	}
	c := &EthtoolConfig{}
	if v, ok := m["feature"]; ok {
		fm, ok := d.object(join(path, "feature"), v, slices.Sorted(maps.Keys(EthtoolFeatures)), nil)
		if ok {
			c.Feature = map[string]bool{}
			for k, fv := range fm {
				if b := d.boolean(join(path, "feature."+k), fv); b != nil {
					c.Feature[k] = *b
				}
			}
		}
	}
	return c
}

// verifyEthtool compares each stated feature with what the kernel runs.
func verifyEthtool(add func(string, ...any), path string, want, got *EthtoolConfig) {
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
