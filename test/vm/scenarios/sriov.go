package scenarios

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// netdevsimID is the simulated device's id on the netdevsim bus.
const netdevsimID = "10"

// newNetdevsimPF makes a simulated SR-IOV physical function (4 VFs at most) and returns
// its interface name.
func newNetdevsimPF() (string, error) {
	if out, err := sh("modprobe", "netdevsim"); err != nil {
		return "", fmt.Errorf("modprobe netdevsim: %v: %s", err, out)
	}
	if err := os.WriteFile("/sys/bus/netdevsim/new_device", []byte(netdevsimID+" 1"), 0o200); err != nil {
		return "", err
	}
	_, _ = sh("udevadm", "settle")
	dir := filepath.Join("/sys/bus/netdevsim/devices", "netdevsim"+netdevsimID, "net")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if entries, err := os.ReadDir(dir); err == nil && len(entries) == 1 {
			return entries[0].Name(), nil
		}
	}
	return "", fmt.Errorf("no netdev under %s", dir)
}

func deleteNetdevsim() error {
	return os.WriteFile("/sys/bus/netdevsim/del_device", []byte(netdevsimID), 0o200)
}

// sriovScenarios: OpenShift Virtualization's VF settings on a netdevsim port, through
// NetworkManager's sriov setting: the VF count and each VF's attributes as `ip link`
// shows them, the same read back by Show (from the kernel), and a rollback that restores
// the committed VFs.
var sriovScenarios = []Scenario{
	{"SR-IOV VF count and VF settings on a netdevsim physical function, shown and rolled back", func(ctx context.Context, e *Env) error {
		pf, err := newNetdevsimPF()
		if err != nil {
			return err
		}
		defer func() { _ = deleteNetdevsim() }()
		doc := `
interfaces:
- name: ` + pf + `
  type: ethernet
  state: up
  ipv4: {enabled: false}
  ipv6: {enabled: false}
  ethernet:
    sr-iov:
      total-vfs: 2
      vfs:
      - {id: 0, mac-address: "02:00:00:00:10:00", spoof-check: false, trust: true, min-tx-rate: 10, max-tx-rate: 100}
      - {id: 1, vlan-id: 100, qos: 3, vlan-proto: 802.1ad}
`
		if err := e.Apply(ctx, doc); err != nil {
			return err
		}
		out, _ := sh("ip", "link", "show", pf)
		for vf, want := range map[int][]string{
			0: {"link/ether 02:00:00:00:10:00", "max_tx_rate 100Mbps", "min_tx_rate 10Mbps", "spoof checking off", "trust on"},
			1: {"vlan 100, qos 3, vlan protocol 802.1ad"},
		} {
			line := vfLine(out, vf)
			for _, w := range want {
				if !strings.Contains(line, w) {
					return fmt.Errorf("VF %d: want %q in %q:\n%s", vf, w, line, out)
				}
			}
		}
		if vfLine(out, 2) != "" {
			return fmt.Errorf("more than 2 VFs:\n%s", out)
		}
		s, err := e.NM.Show(ctx)
		if err != nil {
			return err
		}
		var shown *state.SRIOVConfig
		for _, it := range s.Interfaces {
			if it.Name == pf && it.Ethernet != nil {
				shown = it.Ethernet.SRIOV
			}
		}
		if shown == nil || shown.TotalVFs == nil || *shown.TotalVFs != 2 || len(shown.VFs) != 2 ||
			shown.VFs[0].Trust == nil || !*shown.VFs[0].Trust || shown.VFs[1].VLANProto != state.VLANProto8021AD {
			return fmt.Errorf("Show: %s sr-iov %+v", pf, shown)
		}
		// A change to 4 VFs, rolled back: the committed 2 and their settings come back.
		parsed, err := state.Parse([]byte(strings.Replace(doc, "total-vfs: 2", "total-vfs: 4", 1)))
		if err != nil {
			return err
		}
		tx, err := e.NM.Apply(ctx, parsed, networkmanager.ApplyOptions{ActivationTimeout: 60 * time.Second})
		if err != nil {
			return err
		}
		if out, _ := sh("ip", "link", "show", pf); vfLine(out, 3) == "" {
			return fmt.Errorf("want 4 VFs before the rollback:\n%s", out)
		}
		if err := tx.Rollback(ctx); err != nil {
			return err
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			out, _ := sh("ip", "link", "show", pf)
			if vfLine(out, 1) != "" && vfLine(out, 2) == "" && strings.Contains(vfLine(out, 0), "trust on") {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("after the rollback, want the 2 committed VFs:\n%s", out)
			}
		}
	}},
}

// netdevsimEthtoolScenarios: ring sizes, interrupt coalescing and pause frames on a
// netdevsim port (the virtio NIC has none of them to change), through NetworkManager's
// ethtool setting, checked with ethtool -g, -c and -a, read back by Show (SIOCETHTOOL),
// and a change rolled back. netdevsim refuses pause autonegotiation: a policy asking it
// does not converge and is rolled back.
var netdevsimEthtoolScenarios = []Scenario{
	{"ethtool ring, coalesce and pause on a netdevsim port, shown, rolled back, and one it refuses", func(ctx context.Context, e *Env) error {
		port, err := newNetdevsimPF()
		if err != nil {
			return err
		}
		defer func() { _ = deleteNetdevsim() }()
		doc := func(ring, pause string) string {
			return `
interfaces:
- name: ` + port + `
  type: ethernet
  state: up
  ipv4: {enabled: false}
  ipv6: {enabled: false}
  ethtool:
    ring: ` + ring + `
    coalesce: {rx-usecs: 30, tx-frames: 8, adaptive-rx: true}
    pause: ` + pause + `
`
		}
		committed := doc("{rx: 1024, tx: 2048}", "{autoneg: false, rx: true, tx: true}")
		if err := e.Apply(ctx, committed); err != nil {
			return err
		}
		for args, want := range map[string][]string{
			"-g": {"Current hardware settings: RX: 1024", "TX: 2048"},
			"-c": {"Adaptive RX: on", "rx-usecs: 30", "tx-frames: 8"},
			"-a": {"Autonegotiate: off RX: on TX: on"},
		} {
			if err := expectWords([]string{"ethtool", args, port}, want...); err != nil {
				return err
			}
		}
		s, err := e.NM.Show(ctx)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(s.Interfaces, func(it state.Interface) bool { return it.Name == port })
		if i < 0 || s.Interfaces[i].Ethtool == nil {
			return fmt.Errorf("Show: no ethtool section for %s", port)
		}
		shown := s.Interfaces[i].Ethtool
		if shown.Ring["rx"] != 1024 || shown.Ring["tx"] != 2048 || shown.Coalesce["adaptive-rx"] != 1 || shown.Coalesce["rx-usecs"] != 30 ||
			shown.Pause == nil || !*shown.Pause.RX || *shown.Pause.Autoneg {
			return fmt.Errorf("Show: %s ethtool %+v %+v", port, shown, shown.Pause)
		}
		// Smaller rings, rolled back: the committed sizes come back.
		parsed, err := state.Parse([]byte(doc("{rx: 256, tx: 2048}", "{autoneg: false, rx: true, tx: true}")))
		if err != nil {
			return err
		}
		tx, err := e.NM.Apply(ctx, parsed, networkmanager.ApplyOptions{ActivationTimeout: 60 * time.Second})
		if err != nil {
			return err
		}
		if err := expectWords([]string{"ethtool", "-g", port}, "Current hardware settings: RX: 256"); err != nil {
			return err
		}
		if err := tx.Rollback(ctx); err != nil {
			return err
		}
		if err := eventually(10*time.Second, func() error {
			return expectWords([]string{"ethtool", "-g", port}, "Current hardware settings: RX: 1024")
		}); err != nil {
			return fmt.Errorf("after the rollback: %w", err)
		}
		// Pause autonegotiation, which netdevsim refuses: not converged, rolled back.
		err = e.Apply(ctx, doc("{rx: 1024, tx: 2048}", "{autoneg: true}"))
		if err == nil || !strings.Contains(err.Error(), "rolled back") {
			return fmt.Errorf("want pause autonegotiation rolled back, got %v", err)
		}
		return eventually(10*time.Second, func() error {
			return expectWords([]string{"ethtool", "-a", port}, "Autonegotiate: off RX: on TX: on")
		})
	}},
}

// expectWords is expect on the command's output with every run of blanks one space
// (ethtool aligns its columns with tabs).
func expectWords(args []string, contains ...string) error {
	out, err := sh(args...)
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	words := strings.Join(strings.Fields(out), " ")
	for _, c := range contains {
		if !strings.Contains(words, c) {
			return fmt.Errorf("%s: want %q in:\n%s", strings.Join(args, " "), c, out)
		}
	}
	return nil
}

// vfLine is the line of `ip link show` about VF n ("" when there is none).
func vfLine(out string, n int) string {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "vf" && f[1] == fmt.Sprint(n) {
			return l
		}
	}
	return ""
}
