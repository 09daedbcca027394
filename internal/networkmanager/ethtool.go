package networkmanager

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// setEthtool writes the features, ring sizes, coalescing, pause and FEC settings a
// desired state names into NetworkManager's ethtool setting (what it does not name keeps
// what the base profile says).
func setEthtool(s settings, c *state.EthtoolConfig) {
	for _, k := range slices.Sorted(maps.Keys(c.Feature)) {
		s.set("ethtool", state.EthtoolFeatures[k], c.Feature[k])
	}
	for _, k := range slices.Sorted(maps.Keys(c.Ring)) {
		s.set("ethtool", "ring-"+k, c.Ring[k])
	}
	for _, k := range slices.Sorted(maps.Keys(c.Coalesce)) {
		s.set("ethtool", "coalesce-"+k, c.Coalesce[k])
	}
	if p := c.Pause; p != nil {
		for _, f := range []struct {
			option string
			v      *bool
		}{{"pause-autoneg", p.Autoneg}, {"pause-rx", p.RX}, {"pause-tx", p.TX}} {
			if f.v != nil {
				s.set("ethtool", f.option, *f.v)
			}
		}
	}
	if c.FEC != nil {
		s.set("ethtool", "fec-mode", fecBits(c.FEC))
	}
}

// The FEC mode bits of ETHTOOL_GFECPARAM and ETHTOOL_SFECPARAM (enum
// ethtool_fec_config_bits), which NetworkManager's fec-mode takes as they are.
const (
	fecNone = 1 << iota
	fecAuto
	fecOff
	fecRS
	fecBaseR
	fecLLRS
)

// fecModes are nmstate's FEC modes by their bit.
var fecModes = map[uint32]string{fecOff: "off", fecRS: "rs", fecBaseR: "baser", fecLLRS: "llrs"}

// fecBits is a FEC section as the bits the driver is configured with: auto's, and the
// mode's.
func fecBits(f *state.EthtoolFEC) uint32 {
	var bits uint32
	if f.Auto != nil && *f.Auto {
		bits |= fecAuto
	}
	for bit, name := range fecModes {
		if name == f.Mode {
			bits |= bit
		}
	}
	return bits
}

// fecState reports a port's FEC from ETHTOOL_GFECPARAM: auto as configured, and the mode
// configured, or, when the configuration names none (auto alone), the one the port runs.
// A port without FEC (configuration NONE) reports none.
func fecState(v state.EthtoolValues) *state.EthtoolFEC {
	configured, active := v["configured"], v["active"]
	if configured == 0 || configured == fecNone {
		return nil
	}
	auto := configured&fecAuto != 0
	f := &state.EthtoolFEC{Auto: &auto}
	if mode, ok := fecModes[configured&^(fecAuto|fecNone)]; ok {
		f.Mode = mode
	} else if mode, ok := fecModes[active]; ok {
		f.Mode = mode
	}
	return f
}

// kernelEthtool is what the kernel runs of a device's ethtool settings: every feature,
// and the ring, coalesce, pause and FEC parameters its profile names (nil when it names
// none, or the device has none).
type kernelEthtool struct {
	Features map[string]bool     `json:"features,omitempty"`
	Ring     state.EthtoolValues `json:"ring,omitempty"`
	Coalesce state.EthtoolValues `json:"coalesce,omitempty"`
	Pause    state.EthtoolValues `json:"pause,omitempty"`
	FEC      state.EthtoolValues `json:"fec,omitempty"`
}

// readKernelEthtool reads what the kernel runs of what the applied profile a sets; nil
// when it sets no ethtool option.
func readKernelEthtool(name string, a settings) (*kernelEthtool, error) {
	if len(a["ethtool"]) == 0 {
		return nil, nil
	}
	has := func(prefix string) bool {
		return slices.ContainsFunc(slices.Collect(maps.Keys(a["ethtool"])), func(k string) bool { return strings.HasPrefix(k, prefix) })
	}
	k := &kernelEthtool{}
	if has("feature-") {
		var err error
		if k.Features, err = kernelFeatures(name); err != nil {
			return nil, err
		}
	}
	// A device without ring, coalesce, pause or FEC parameters (the ioctl is not supported)
	// reports none: verification then names what it lacks.
	if has("ring-") {
		k.Ring, _ = kernelValues(name, ethtoolGRingParam, 9, ringFields)
	}
	if has("coalesce-") {
		k.Coalesce, _ = kernelValues(name, ethtoolGCoalesce, 23, coalesceFields)
	}
	if has("pause-") {
		k.Pause, _ = kernelValues(name, ethtoolGPauseParam, 4, map[string]int{"autoneg": 1, "rx": 2, "tx": 3})
	}
	if has("fec-") {
		// struct ethtool_fecparam { u32 cmd, active_fec, fec, reserved; }
		k.FEC, _ = kernelValues(name, ethtoolGFECParam, 4, map[string]int{"active": 1, "configured": 2})
	}
	return k, nil
}

// ethtoolState reports, for an interface whose applied profile a sets ethtool options,
// what the kernel runs of each (as nmstate reports them: features by their kernel
// names). Only those: every device's whole feature list would bloat the state.
func ethtoolState(k *kernelEthtool, a settings) *state.EthtoolConfig {
	if k == nil {
		return nil
	}
	c := &state.EthtoolConfig{Ring: k.Ring, Coalesce: k.Coalesce}
	for kernel, option := range state.EthtoolFeatures {
		if _, ok := a["ethtool"][option]; !ok {
			continue
		}
		if c.Feature == nil {
			c.Feature = map[string]bool{}
		}
		if on, ok := k.Features[kernel]; ok {
			c.Feature[kernel] = on
		}
	}
	if v := k.Pause; v != nil {
		on := func(k string) *bool { b := v[k] != 0; return &b }
		c.Pause = &state.EthtoolPause{Autoneg: on("autoneg"), RX: on("rx"), TX: on("tx")}
	}
	if k.FEC != nil {
		c.FEC = fecState(k.FEC)
	}
	if c.Feature == nil && c.Ring == nil && c.Coalesce == nil && c.Pause == nil && c.FEC == nil {
		return nil
	}
	return c
}

// ringFields and coalesceFields are nmstate's names at their u32 index in struct
// ethtool_ringparam and struct ethtool_coalesce (linux/ethtool.h; 0 is the command).
var (
	ringFields     = map[string]int{"rx": 5, "rx-mini": 6, "rx-jumbo": 7, "tx": 8}
	coalesceFields = map[string]int{"rx-usecs": 1, "rx-frames": 2, "rx-usecs-irq": 3, "rx-frames-irq": 4,
		"tx-usecs": 5, "tx-frames": 6, "tx-usecs-irq": 7, "tx-frames-irq": 8, "stats-block-usecs": 9,
		"adaptive-rx": 10, "adaptive-tx": 11, "pkt-rate-low": 12, "rx-usecs-low": 13, "rx-frames-low": 14,
		"tx-usecs-low": 15, "tx-frames-low": 16, "pkt-rate-high": 17, "rx-usecs-high": 18, "rx-frames-high": 19,
		"tx-usecs-high": 20, "tx-frames-high": 21, "sample-interval": 22}
)

// kernelValues runs an ethtool get command whose answer is words u32s (the command
// first) and returns the named ones.
func kernelValues(name string, cmd uint32, words int, fields map[string]int) (state.EthtoolValues, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	buf := make([]byte, 4*words)
	binary.NativeEndian.PutUint32(buf, cmd)
	if err := ethtoolIoctl(fd, name, buf); err != nil {
		return nil, fmt.Errorf("%s: ethtool command %#x: %w", name, cmd, err)
	}
	out := state.EthtoolValues{}
	for k, i := range fields {
		out[k] = binary.NativeEndian.Uint32(buf[4*i:])
	}
	return out, nil
}

// SIOCETHTOOL commands and string set (linux/ethtool.h).
const (
	ethtoolGSSetInfo = 0x37
	ethtoolGStrings  = 0x1b
	ethtoolGFeatures = 0x3a
	// ETHTOOL_GCOALESCE, ETHTOOL_GRINGPARAM, ETHTOOL_GPAUSEPARAM, ETHTOOL_GFECPARAM
	ethtoolGCoalesce   = 0x0e
	ethtoolGRingParam  = 0x10
	ethtoolGPauseParam = 0x12
	ethtoolGFECParam   = 0x50
	ethSSFeatures      = 4
	ethGStringLen      = 32
)

// kernelFeatures reads a device's offload features, active or not, by name: the names
// (ETHTOOL_GSTRINGS of ETH_SS_FEATURES) and their state (ETHTOOL_GFEATURES).
func kernelFeatures(name string) (map[string]bool, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	// struct ethtool_sset_info { u32 cmd, reserved; u64 sset_mask; u32 data[1]; }
	info := make([]byte, 20)
	binary.NativeEndian.PutUint32(info[0:], ethtoolGSSetInfo)
	binary.NativeEndian.PutUint64(info[8:], 1<<ethSSFeatures)
	if err := ethtoolIoctl(fd, name, info); err != nil {
		return nil, fmt.Errorf("%s: ETHTOOL_GSSET_INFO: %w", name, err)
	}
	count := int(binary.NativeEndian.Uint32(info[16:]))
	// struct ethtool_gstrings { u32 cmd, string_set, len; u8 data[len * ETH_GSTRING_LEN]; }
	strs := make([]byte, 12+count*ethGStringLen)
	binary.NativeEndian.PutUint32(strs[0:], ethtoolGStrings)
	binary.NativeEndian.PutUint32(strs[4:], ethSSFeatures)
	binary.NativeEndian.PutUint32(strs[8:], uint32(count))
	if err := ethtoolIoctl(fd, name, strs); err != nil {
		return nil, fmt.Errorf("%s: ETHTOOL_GSTRINGS: %w", name, err)
	}
	// struct ethtool_gfeatures { u32 cmd, size; struct { u32 available, requested, active, never_changed; } features[size]; }
	blocks := (count + 31) / 32
	feats := make([]byte, 8+blocks*16)
	binary.NativeEndian.PutUint32(feats[0:], ethtoolGFeatures)
	binary.NativeEndian.PutUint32(feats[4:], uint32(blocks))
	if err := ethtoolIoctl(fd, name, feats); err != nil {
		return nil, fmt.Errorf("%s: ETHTOOL_GFEATURES: %w", name, err)
	}
	out := map[string]bool{}
	for i := 0; i < count; i++ {
		raw := strs[12+i*ethGStringLen : 12+(i+1)*ethGStringLen]
		fname := string(raw[:max(0, bytes.IndexByte(raw, 0))])
		if fname == "" {
			continue
		}
		block := feats[8+(i/32)*16:]
		active := binary.NativeEndian.Uint32(block[8:])
		out[fname] = active&(1<<(i%32)) != 0
	}
	return out, nil
}

// ethtoolIoctl runs SIOCETHTOOL on the named device with data as the command buffer.
func ethtoolIoctl(fd int, name string, data []byte) error {
	var ifr [unix.IFNAMSIZ + 24]byte
	copy(ifr[:unix.IFNAMSIZ-1], name)
	*(*uintptr)(unsafe.Pointer(&ifr[unix.IFNAMSIZ])) = uintptr(unsafe.Pointer(&data[0]))
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr[0])))
	if errno != 0 {
		return errno
	}
	return nil
}
