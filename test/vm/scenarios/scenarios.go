// Package scenarios are the VM tier's checks: what needs a real kernel (bond, VLAN,
// dummy, VRF, bridge VLAN filtering). They run inside the qemu guest against its real
// NetworkManager (test/vm/guest); the host test reports them one by one.
package scenarios

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/snapshots"
)

// NICs are the guest's test NICs, found by the MAC addresses the host gives them. A is
// alone on its link; B, C and D share one (D serves DHCP on it, from its own netns).
type NICs struct{ A, B, C, D string }

// MACs the host assigns to the guest's NICs, in order A, B, C, D.
var MACs = []string{"52:54:00:00:00:01", "52:54:00:00:00:02", "52:54:00:00:00:03", "52:54:00:00:00:04"}

// Scenario is one check, run in order in one boot.
type Scenario struct {
	Name string
	Run  func(ctx context.Context, e *Env) error
}

// Env is what a scenario works with.
type Env struct {
	NM      *networkmanager.Client
	NICs    NICs
	stopLAN func()
	// Record is where each apply's snapshot is recorded ("": none), named after Scenario.
	Record   string
	Scenario string
	applies  int
}

// Apply parses, applies and commits a desired state written with {A} {B} {C} for the NICs.
func (e *Env) Apply(ctx context.Context, policies ...string) error {
	desired, err := e.Desired(policies...)
	if err != nil {
		return err
	}
	return e.applyCommit(ctx, desired, networkmanager.ApplyOptions{ActivationTimeout: 60 * time.Second})
}

// Desired is the merged desired state of policies written with {A} {B} {C} for the NICs.
func (e *Env) Desired(policies ...string) (state.State, error) {
	var sources []state.Source
	for i, doc := range policies {
		doc = e.named(doc)
		s, err := state.Parse([]byte(doc))
		if err != nil {
			return state.State{}, err
		}
		// Policy names against the dependency order: the merge must not care.
		sources = append(sources, state.Source{Policy: fmt.Sprintf("%c-policy", 'z'-i), State: s})
	}
	merged, err := state.Merge(sources)
	if err != nil {
		return state.State{}, err
	}
	return merged.State, nil
}

// named is doc with the NICs' names for {A} {B} {C}.
func (e *Env) named(doc string) string {
	return strings.NewReplacer("{A}", e.NICs.A, "{B}", e.NICs.B, "{C}", e.NICs.C).Replace(doc)
}

// applyCommit applies and commits desired, and records the snapshot when asked to.
func (e *Env) applyCommit(ctx context.Context, desired state.State, opts networkmanager.ApplyOptions) error {
	tx, err := e.NM.Apply(ctx, desired, opts)
	if err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	e.applies++
	return snapshots.Record(ctx, e.Record, fmt.Sprintf("vm %02d %s", e.applies, e.Scenario), desired, e.NM)
}

// sh runs a command; one that takes more than 2 minutes is killed (a scenario must fail,
// not hang the guest until the host's timeout).
func sh(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (killed after 2 minutes)", err)
	}
	return string(out), err
}

func expect(args []string, contains ...string) error {
	out, err := sh(args...)
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	for _, c := range contains {
		if !strings.Contains(out, c) {
			return fmt.Errorf("%s: want %q in:\n%s", strings.Join(args, " "), c, out)
		}
	}
	return nil
}

// eventually runs check until it passes or timeout ends, and returns its last error.
func eventually(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func gone(dev string) error {
	if _, err := os.Stat(filepath.Join("/sys/class/net", dev)); err == nil {
		return fmt.Errorf("%s still exists", dev)
	}
	return nil
}

// The guests' suites.
const (
	Bookworm = "bookworm" // Debian 12: NetworkManager 1.42
	Trixie   = "trixie"   // Debian 13: NetworkManager 1.52 with Open vSwitch
)

// Suites are each guest's scenarios, in the order they run.
var Suites = map[string][]Scenario{Bookworm: All, Trixie: slices.Concat(trixieScenarios, nmstateScenarios())}

// All are the first guest's scenarios, in the order they run.
var All = func() []Scenario {
	published := publishedScenarios()
	// The captures run while the LAN's DHCP server still serves the interfaces the
	// published examples left up (the last published scenario stops it).
	last := len(published) - 1
	return slices.Concat(engineScenarios, ethtoolScenarios, published[:last], captureScenarios, published[last:], netplanScenarios, sriovScenarios, netdevsimEthtoolScenarios)
}()

var engineScenarios = []Scenario{
	{"bond active-backup over two NICs with a static address", func(ctx context.Context, e *Env) error {
		if err := e.Apply(ctx, `
interfaces:
- name: bond0
  type: bond
  state: up
  ipv4: {enabled: true, address: [{ip: 192.0.2.10, prefix-length: 24}]}
  link-aggregation:
    mode: active-backup
    options: {miimon: "100", use_carrier: true}
    port: [{B}, {C}]
    ports-config: [{name: {C}, queue-id: 3}]
`); err != nil {
			return err
		}
		// use_carrier as nmstate writes it, a boolean: NetworkManager takes it as 1.
		if err := expect([]string{"cat", "/sys/class/net/bond0/bonding/use_carrier"}, "1"); err != nil {
			return err
		}
		// The port's transmit queue, which NetworkManager writes through the bond's sysfs.
		if err := expect([]string{"cat", "/sys/class/net/" + e.NICs.C + "/bonding_slave/queue_id"}, "3"); err != nil {
			return err
		}
		return expect([]string{"cat", "/proc/net/bonding/bond0"}, "fault-tolerance (active-backup)", "Slave Interface: "+e.NICs.B, "Slave Interface: "+e.NICs.C, "MII Polling Interval (ms): 100")
	}},
	{"VLAN 100 on the bond", func(ctx context.Context, e *Env) error {
		if err := e.Apply(ctx, `
interfaces:
- name: bond0.100
  type: vlan
  state: up
  vlan: {id: 100, base-iface: bond0, protocol: 802.1q}
  ipv4: {enabled: true, address: [{ip: 198.51.100.10, prefix-length: 24}]}
`); err != nil {
			return err
		}
		return expect([]string{"ip", "-d", "addr", "show", "bond0.100"}, "vlan protocol 802.1Q id 100", "198.51.100.10/24")
	}},
	{"bond reconfigured to 802.3ad, the VLAN stays", func(ctx context.Context, e *Env) error {
		if err := e.Apply(ctx, `
interfaces:
- name: bond0
  type: bond
  state: up
  ipv4: {enabled: true, address: [{ip: 192.0.2.10, prefix-length: 24}]}
  link-aggregation:
    mode: 802.3ad
    options: {miimon: "100", lacp_rate: fast}
    port: [{B}, {C}]
- name: bond0.100
  type: vlan
  state: up
  vlan: {id: 100, base-iface: bond0, protocol: 802.1q}
  ipv4: {enabled: true, address: [{ip: 198.51.100.10, prefix-length: 24}]}
`); err != nil {
			return err
		}
		if err := expect([]string{"cat", "/proc/net/bonding/bond0"}, "IEEE 802.3ad Dynamic link aggregation", "LACP rate: fast"); err != nil {
			return err
		}
		return expect([]string{"ip", "addr", "show", "bond0.100"}, "198.51.100.10/24")
	}},
	{"dummy interface with an address", func(ctx context.Context, e *Env) error {
		if err := e.Apply(ctx, `interfaces: [{name: dummy0, type: dummy, state: up, ipv4: {enabled: true, address: [{ip: 203.0.113.10, prefix-length: 24}]}}]`); err != nil {
			return err
		}
		return expect([]string{"ip", "-d", "addr", "show", "dummy0"}, "dummy", "203.0.113.10/24")
	}},
	{"VRF with a port and a route in its table", func(ctx context.Context, e *Env) error {
		if err := e.Apply(ctx, `
interfaces:
- name: vrf10
  type: vrf
  state: up
  vrf: {port: [dummy1], route-table-id: 10}
- name: dummy1
  type: dummy
  state: up
  ipv4: {enabled: true, address: [{ip: 10.10.0.1, prefix-length: 24}]}
routes:
  config:
  - {destination: 10.20.0.0/16, next-hop-address: 10.10.0.254, next-hop-interface: dummy1, table-id: 10}
`); err != nil {
			return err
		}
		if err := expect([]string{"ip", "-d", "link", "show", "vrf10"}, "vrf table 10"); err != nil {
			return err
		}
		if err := expect([]string{"ip", "link", "show", "dummy1"}, "master vrf10"); err != nil {
			return err
		}
		return expect([]string{"ip", "route", "show", "table", "10"}, "10.20.0.0/16 via 10.10.0.254 dev dummy1")
	}},
	// nmstate's linuxbrige_eth1_up example, its values changed from the kernel's defaults:
	// the bridge's STP timers, priority, MAC ageing, snooping and forward mask, and a
	// port's spanning tree, which NetworkManager writes through sysfs. Read back from the
	// kernel in its units (hundredths of a second).
	{"linux bridge STP timers, MAC ageing, snooping, forward mask and a port's spanning tree", func(ctx context.Context, e *Env) error {
		if err := e.Apply(ctx, `
interfaces:
- {name: dstp, type: dummy, state: up}
- name: brstp
  type: linux-bridge
  state: up
  bridge:
    options:
      group-forward-mask: 8
      mac-ageing-time: 600
      multicast-snooping: false
      stp: {enabled: true, forward-delay: 10, hello-time: 3, max-age: 25, priority: 4096}
    port:
    - {name: dstp, stp-hairpin-mode: true, stp-path-cost: 50, stp-priority: 16}
`); err != nil {
			return err
		}
		if err := expect([]string{"ip", "-d", "link", "show", "brstp"}, "forward_delay 1000 hello_time 300 max_age 2500 ageing_time 60000 stp_state 1 priority 4096 ",
			"group_fwd_mask 0x8 ", "mcast_snooping 0 "); err != nil {
			return err
		}
		if err := expect([]string{"ip", "-d", "link", "show", "dstp"}, "priority 16 cost 50 hairpin on "); err != nil {
			return err
		}
		return e.Apply(ctx, `interfaces: [{name: brstp, type: linux-bridge, state: absent}, {name: dstp, type: dummy, state: absent}]`)
	}},
	// nmstate's port VLANs: a trunk carries its tags tagged, and its native VLAN (tag with
	// enable-native) as PVID untagged; an access port its tag as PVID untagged. The
	// bridge's default PVID (VLAN 1) stays on every port, as under nmstate with
	// NetworkManager, which both leave to the kernel and leave out when reading back.
	{"linux bridge with VLAN filtering, a trunk, a trunk with a native VLAN, an access port", func(ctx context.Context, e *Env) error {
		if err := e.Apply(ctx, `
interfaces:
- {name: dnat, type: dummy, state: up}
- {name: dacc, type: dummy, state: up}
- name: br0
  type: linux-bridge
  state: up
  bridge:
    options: {stp: {enabled: false}}
    port:
    - name: {A}
      vlan: {mode: trunk, trunk-tags: [{id: 100}, {id-range: {min: 200, max: 210}}]}
    - name: dnat
      vlan: {mode: trunk, enable-native: true, tag: 50, trunk-tags: [{id: 60}]}
    - name: dacc
      vlan: {mode: access, tag: 20}
`); err != nil {
			return err
		}
		if err := vlans(e.NICs.A, map[int]string{100: "tagged", 200: "tagged", 210: "tagged", 1: "PVID Egress Untagged"}); err != nil {
			return err
		}
		if err := vlans("dnat", map[int]string{50: "PVID Egress Untagged", 60: "tagged"}); err != nil {
			return err
		}
		return vlans("dacc", map[int]string{20: "PVID Egress Untagged"})
	}},
	{"policies named against their dependencies converge in one pass", func(ctx context.Context, e *Env) error {
		// "z-policy" holds the VLAN, "y-policy" the bond it sits on.
		if err := e.Apply(ctx,
			`interfaces: [{name: bond1.7, type: vlan, state: up, vlan: {id: 7, base-iface: bond1}, ipv4: {enabled: true, address: [{ip: 192.0.2.70, prefix-length: 24}]}}]`,
			`interfaces: [{name: bond1, type: bond, state: up, link-aggregation: {mode: balance-rr, port: [dummy7]}}, {name: dummy7, type: dummy, state: up}]`,
		); err != nil {
			return err
		}
		return expect([]string{"ip", "-d", "addr", "show", "bond1.7"}, "id 7", "192.0.2.70/24")
	}},
	{"bonds and their VLANs removed in one pass", func(ctx context.Context, e *Env) error {
		if err := e.Apply(ctx, `
interfaces:
- {name: bond0.100, state: absent}
- {name: bond0, state: absent}
- {name: bond1.7, state: absent}
- {name: bond1, state: absent}
`); err != nil {
			return err
		}
		for _, d := range []string{"bond0.100", "bond0", "bond1.7", "bond1"} {
			if err := gone(d); err != nil {
				return err
			}
		}
		// Without prune too: the bonds' ports' profiles go with them.
		if left := ownedKeyfiles(func(text string) bool {
			return strings.Contains(text, "master=bond") || strings.Contains(text, "controller=bond")
		}); len(left) > 0 {
			return fmt.Errorf("profiles of the removed bonds' ports left: %v", left)
		}
		return nil
	}},
}

// vlans checks `bridge vlan show` for a port: each VLAN listed, as "tagged" (no flags)
// or with the flags given; a VLAN whose flags say tagged must carry no PVID/Untagged flag.
func vlans(dev string, want map[int]string) error {
	out, err := sh("bridge", "vlan", "show", "dev", dev)
	if err != nil {
		return fmt.Errorf("bridge vlan show dev %s: %v: %s", dev, err, out)
	}
	flags := map[int]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), dev))
		if len(f) == 0 {
			continue
		}
		var id int
		if _, err := fmt.Sscanf(f[0], "%d", &id); err == nil {
			flags[id] = strings.Join(f[1:], " ")
		}
	}
	for id, w := range want {
		got, ok := flags[id]
		switch {
		case !ok:
			return fmt.Errorf("%s: VLAN %d missing:\n%s", dev, id, out)
		case w == "tagged" && got != "":
			return fmt.Errorf("%s: VLAN %d is %q, want tagged:\n%s", dev, id, got, out)
		case w != "tagged" && got != w:
			return fmt.Errorf("%s: VLAN %d is %q, want %q:\n%s", dev, id, got, w, out)
		}
	}
	return nil
}

// FindNICs names the guest's NICs by MAC address.
func FindNICs() (NICs, error) {
	byMAC := map[string]string{}
	entries, err := os.ReadDir("/sys/class/net")
	if err != nil {
		return NICs{}, err
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/sys/class/net", e.Name(), "address"))
		if err == nil {
			byMAC[strings.TrimSpace(string(b))] = e.Name()
		}
	}
	n := NICs{byMAC[MACs[0]], byMAC[MACs[1]], byMAC[MACs[2]], byMAC[MACs[3]]}
	if n.A == "" || n.B == "" || n.C == "" || n.D == "" {
		return n, fmt.Errorf("test NICs not found by MAC: %v", byMAC)
	}
	return n, nil
}
