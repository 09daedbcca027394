package networkmanager

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nmoverlay/nmoverlay/reconciler/state"
)

// setEthtool writes the offload features a desired state names into NetworkManager's
// ethtool setting (features it does not name keep what the base profile says).
func setEthtool(s settings, c *state.EthtoolConfig) {
	for _, k := range slices.Sorted(maps.Keys(c.Feature)) {
		s.set("ethtool", state.EthtoolFeatures[k], c.Feature[k])
	}
}

// readEthtool reports, for an interface whose applied profile sets offload features,
// whether the kernel runs each of them (as nmstate reports features: by their kernel
// names). Only those: every device's whole feature list would bloat the state.
func readEthtool(name string, a settings) (*state.EthtoolConfig, error) {
	var wanted []string
	for kernel, option := range state.EthtoolFeatures {
		if _, ok := a["ethtool"][option]; ok {
			wanted = append(wanted, kernel)
		}
	}
	if len(wanted) == 0 {
		return nil, nil
	}
	active, err := kernelFeatures(name)
	if err != nil {
		return nil, err
	}
	c := &state.EthtoolConfig{Feature: map[string]bool{}}
	for _, k := range wanted {
		if on, ok := active[k]; ok {
			c.Feature[k] = on
		}
	}
	return c, nil
}

// SIOCETHTOOL commands and string set (linux/ethtool.h).
const (
	ethtoolGSSetInfo = 0x37
	ethtoolGStrings  = 0x1b
	ethtoolGFeatures = 0x3a
	ethSSFeatures    = 4
	ethGStringLen    = 32
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
