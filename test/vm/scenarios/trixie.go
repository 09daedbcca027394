package scenarios

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/published"
)

// ovsdbSocket is Debian's Open vSwitch database socket.
const ovsdbSocket = "/run/openvswitch/db.sock"

// trixieScenarios run in the Debian 13 guest: NetworkManager 1.52 with its Open vSwitch
// plugin, and Open vSwitch on the kernel datapath, as on a RHEL CoreOS node.
var trixieScenarios = []Scenario{
	{"NetworkManager 1.52 has what 1.42 lacks, and its Open vSwitch plugin", func(ctx context.Context, e *Env) error {
		caps, err := e.NM.Capabilities()
		if err != nil {
			return err
		}
		if !strings.HasPrefix(caps.Version, "1.52.") {
			return fmt.Errorf("NetworkManager %s, want 1.52", caps.Version)
		}
		for _, want := range []string{string(state.CapabilityBondPortPriority), "ovs"} {
			if !slices.Contains(caps.Names(), want) {
				return fmt.Errorf("capabilities %v lack %s", caps.Names(), want)
			}
		}
		// What 1.54 adds, and Debian's 1.52.1 does not announce: refused, naming it.
		policy, err := published.OpenShift("nw-nmstate-enable-per-interface-ip-forwarding.yaml")
		if err != nil {
			return err
		}
		raw, _, err := policyDesired(policy)
		if err != nil {
			return err
		}
		const want = "interfaces[0].ipv4.forwarding: NetworkManager 1.52.1 on this node has no ipv4.forwarding " +
			"(NetworkManager 1.54 and later apply it, and builds that announce it)"
		if err := (networkmanager.Backend{Client: e.NM}).Check(ctx, "", raw); err == nil || !strings.Contains(err.Error(), want) {
			return fmt.Errorf("the per-interface forwarding policy: %v, want %q", err, want)
		}
		return nil
	}},
	{"a bond's port priorities and queue, which NetworkManager 1.44 and later apply", func(ctx context.Context, e *Env) error {
		doc := `
interfaces:
- name: bond1
  type: bond
  state: up
  link-aggregation:
    mode: active-backup
    options: {miimon: "100"}
    port: [{B}, {C}]
    ports-config: [{name: {B}, priority: 10}, {name: {C}, priority: -1, queue-id: 2}]
`
		if err := e.check(ctx, doc); err != nil {
			return err
		}
		if err := e.Apply(ctx, doc); err != nil {
			return err
		}
		// The kernel's bond port attributes (IFLA_BOND_SLAVE_PRIO, queue_id).
		if err := expect([]string{"ip", "-d", "link", "show", e.NICs.B}, "prio 10"); err != nil {
			return err
		}
		if err := expect([]string{"ip", "-d", "link", "show", e.NICs.C}, "prio -1", "queue_id 2"); err != nil {
			return err
		}
		return e.Apply(ctx, "interfaces: [{name: bond1, type: bond, state: absent}]")
	}},
	{"a route with a source address and a locked congestion window, verified from the kernel's routes", func(ctx context.Context, e *Env) error {
		// The first route of nmstate's eth1_add_route.yml, on NIC B.
		if err := e.Apply(ctx, `
interfaces:
- {name: {B}, type: ethernet, state: up, ipv4: {enabled: true, dhcp: false, address: [{ip: 192.0.2.251, prefix-length: 24}]}}
routes:
  config:
  - {destination: 198.51.100.0/24, next-hop-address: 192.0.2.1, next-hop-interface: {B}, metric: 150, table-id: 254, source: 192.0.2.251, cwnd: 20}
`); err != nil {
			return err
		}
		if err := expect([]string{"ip", "route", "show", "198.51.100.0/24"}, "src 192.0.2.251", "metric 150", "cwnd lock 20"); err != nil {
			return err
		}
		s, err := e.NM.Show(ctx)
		if err != nil {
			return err
		}
		if i := slices.IndexFunc(s.Routes.Running, func(r state.Route) bool { return r.Destination == "198.51.100.0/24" }); i < 0 ||
			s.Routes.Running[i].Source != "192.0.2.251" || s.Routes.Running[i].Cwnd == nil || *s.Routes.Running[i].Cwnd != 20 {
			return fmt.Errorf("the running routes read back lack the source or the window: %+v", s.Routes.Running)
		}
		// Every owned profile goes: NIC B is back on its own.
		return e.applyCommit(ctx, state.State{}, networkmanager.ApplyOptions{Prune: true})
	}},
	{"a NIC found by its PCI address with identifier pci-address, its profile named by the policy", func(ctx context.Context, e *Env) error {
		// A virtio NIC's device is on the virtio bus (virtio2), under its PCI device.
		dev, err := filepath.EvalSymlinks("/sys/class/net/" + e.NICs.B + "/device")
		if err != nil {
			return err
		}
		if strings.HasPrefix(filepath.Base(dev), "virtio") {
			dev = filepath.Dir(dev)
		}
		pci := filepath.Base(dev) // /sys/devices/pci0000:00/0000:00:04.0
		if err := e.Apply(ctx, fmt.Sprintf(`
interfaces:
- {name: lan-b, type: ethernet, state: up, identifier: pci-address, pci-address: "%s", ipv4: {enabled: true, dhcp: false, address: [{ip: 192.0.2.252, prefix-length: 24}]}}
`, pci)); err != nil {
			return err
		}
		if err := expect([]string{"ip", "addr", "show", e.NICs.B}, "192.0.2.252/24"); err != nil {
			return err
		}
		if err := expect([]string{"nmcli", "-g", "match.path,connection.interface-name", "connection", "show", "lan-b"}, strings.ReplaceAll("pci-"+pci, ":", `\:`), e.NICs.B); err != nil { // nmcli -g escapes colons
			return err
		}
		return e.applyCommit(ctx, state.State{}, networkmanager.ApplyOptions{Prune: true})
	}},
	{"OpenShift Virtualization's VRF with a blackhole route in its table by vrf-name, as published", func(ctx context.Context, e *Env) error {
		policy, err := published.OpenShift("virt-example-predictable-route-table-id.yaml")
		if err != nil {
			return err
		}
		raw, _, err := policyDesired(strings.NewReplacer("eth1", e.NICs.B, "eth2", e.NICs.C).Replace(policy))
		if err != nil {
			return err
		}
		// As for nmstate's VRF example: the ports without the DHCP their Debian profiles
		// ask for (a VRF's port keeps its IP configuration, and no DHCP server is on
		// their link).
		ports := "interfaces: [{name: {B}, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: false}}, " +
			"{name: {C}, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: false}}]"
		if err := e.Apply(ctx, ports, string(raw)); err != nil {
			return err
		}
		if err := expect([]string{"ip", "route", "show", "table", "100"}, "blackhole 198.51.200.0/24"); err != nil {
			return err
		}
		if err := expect([]string{"ip", "-d", "link", "show", e.NICs.B}, "master vrf0"); err != nil {
			return err
		}
		s, err := e.NM.Show(ctx)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(s.Routes.Running, func(r state.Route) bool {
			return r.Destination == "198.51.200.0/24" && r.RouteType == "blackhole" && *r.TableID == 100
		}) {
			return fmt.Errorf("the blackhole route is not among the running routes read back: %+v", s.Routes.Running)
		}
		if err := e.applyCommit(ctx, state.State{}, networkmanager.ApplyOptions{Prune: true}); err != nil {
			return err
		}
		// The kernel deletes the link once NetworkManager has let it go: not at once.
		return eventually(5*time.Second, func() error { return gone("vrf0") })
	}},
	{"an OVS bridge's, bond's and interface's ovs-db columns, read from OVSDB", func(ctx context.Context, e *Env) error {
		if err := waitForOVSDB(ctx); err != nil {
			return err
		}
		if err := e.Apply(ctx, `
interfaces:
- {name: br-db, type: ovs-bridge, state: up, ovs-db: {external_ids: {owner: team-a}}, bridge: {port: [{name: br-db-if},
   {name: bond-db, link-aggregation: {mode: active-backup, ovs-db: {external_ids: {team: b}}, port: [{name: {B}}, {name: {C}}]}}]}}
- {name: br-db-if, type: ovs-interface, state: up, ovs-db: {other_config: {note: "42"}}, ipv4: {enabled: false}, ipv6: {enabled: false}}
`); err != nil {
			return err
		}
		if err := expect([]string{"ovs-vsctl", "get", "Bridge", "br-db", "external_ids:owner"}, "team-a"); err != nil {
			return err
		}
		if err := expect([]string{"ovs-vsctl", "get", "Interface", "br-db-if", "other_config:note"}, "42"); err != nil {
			return err
		}
		if err := expect([]string{"ovs-vsctl", "get", "Port", "bond-db", "external_ids:team"}, "b"); err != nil {
			return err
		}
		return e.Apply(ctx, "interfaces: [{name: br-db, type: ovs-bridge, state: absent}]")
	}},
	{"an IPVLAN, which NetworkManager 1.52 and later apply", func(ctx context.Context, e *Env) error {
		doc := "interfaces: [{name: ipvlan0, type: ipvlan, state: up, ipvlan: {base-iface: {A}, mode: l2, private: true}}]"
		if err := e.check(ctx, doc); err != nil {
			return err
		}
		if err := e.Apply(ctx, doc); err != nil {
			return err
		}
		if err := expect([]string{"ip", "-d", "link", "show", "ipvlan0"}, "ipvlan  mode l2 private"); err != nil {
			return err
		}
		if err := e.Apply(ctx, "interfaces: [{name: ipvlan0, type: ipvlan, state: absent}]"); err != nil {
			return err
		}
		// The kernel deletes the link once NetworkManager has let it go: not at once.
		return eventually(5*time.Second, func() error { return gone("ipvlan0") })
	}},
	{"a port's forward error correction, which NetworkManager 1.52 and later apply, on netdevsim; rolled back on a NIC without FEC", func(ctx context.Context, e *Env) error {
		port, err := newNetdevsimPF()
		if err != nil {
			return err
		}
		defer func() { _ = deleteNetdevsim() }()
		doc := func(fec string) string {
			return "interfaces: [{name: " + port + ", type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: false}, ethtool: {fec: " + fec + "}}]"
		}
		if err := e.check(ctx, doc("{auto: false, mode: rs}")); err != nil {
			return err
		}
		if err := e.Apply(ctx, doc("{auto: false, mode: rs}")); err != nil {
			return err
		}
		if err := expectWords([]string{"ethtool", "--show-fec", port}, "FEC encodings: RS", "Active FEC encoding: RS"); err != nil {
			return err
		}
		s, err := e.NM.Show(ctx)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(s.Interfaces, func(it state.Interface) bool { return it.Name == port })
		if i < 0 || s.Interfaces[i].Ethtool == nil || s.Interfaces[i].Ethtool.FEC == nil {
			return fmt.Errorf("Show: no ethtool fec for %s", port)
		}
		if f := s.Interfaces[i].Ethtool.FEC; f.Auto == nil || *f.Auto || f.Mode != "rs" {
			return fmt.Errorf("Show: %s fec auto %v mode %q, want false rs", port, f.Auto, f.Mode)
		}
		// Auto with BaseR, applied and rolled back: RS comes back.
		parsed, err := state.Parse([]byte(doc("{auto: true, mode: baser}")))
		if err != nil {
			return err
		}
		tx, err := e.NM.Apply(ctx, parsed, networkmanager.ApplyOptions{ActivationTimeout: 60 * time.Second})
		if err != nil {
			return err
		}
		if err := expectWords([]string{"ethtool", "--show-fec", port}, "Auto", "Active FEC encoding: BaseR"); err != nil {
			return err
		}
		if err := tx.Rollback(ctx); err != nil {
			return err
		}
		if err := eventually(10*time.Second, func() error {
			return expectWords([]string{"ethtool", "--show-fec", port}, "Active FEC encoding: RS")
		}); err != nil {
			return fmt.Errorf("after the rollback: %w", err)
		}
		// The virtio NIC has no FEC: NetworkManager only warns, verification finds it, and
		// the apply is rolled back.
		err = e.Apply(ctx, "interfaces: [{name: {C}, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: false}, ethtool: {fec: {auto: false, mode: rs}}}]")
		if err == nil || !strings.Contains(err.Error(), "ethtool.fec: not reported by the device") || !strings.Contains(err.Error(), "rolled back") {
			return fmt.Errorf("FEC on the virtio NIC: want it not reported and rolled back, got %v", err)
		}
		return nil
	}},
	{"nmstate's PRP example, an HSR interface, which NetworkManager 1.46 and later apply", func(ctx context.Context, e *Env) error {
		doc := "interfaces: [{name: hsr0, type: hsr, state: up, hsr: {port1: {B}, port2: {C}, multicast-spec: 40, protocol: prp}}]"
		if err := e.check(ctx, doc); err != nil {
			return err
		}
		if err := e.Apply(ctx, doc); err != nil {
			return err
		}
		// The supervision frames' address ends in the multicast spec (40 is 0x28); proto 1 is PRP.
		if err := expect([]string{"ip", "-d", "link", "show", "hsr0"}, "slave1 "+e.NICs.B, "slave2 "+e.NICs.C, ":28 ", "proto 1"); err != nil {
			return err
		}
		if err := e.Apply(ctx, "interfaces: [{name: hsr0, type: hsr, state: absent}]"); err != nil {
			return err
		}
		// The kernel deletes the link once NetworkManager has let it go: not at once.
		return eventually(5*time.Second, func() error { return gone("hsr0") })
	}},
	{"OpenShift Virtualization's localnet bridge over an OVS bond, as published, on the kernel datapath", func(ctx context.Context, e *Env) error {
		doc, err := published.OpenShift("virt-creating-ovs-bridge-mapping-localnet-1.yaml")
		if err != nil {
			return err
		}
		doc = strings.NewReplacer("eno1np0", e.NICs.B, "eno2np1", e.NICs.C).Replace(doc)
		if err := e.applyPolicy(ctx, doc); err != nil {
			return err
		}
		if err := expect([]string{"ovs-vsctl", "get", "Open_vSwitch", ".", "external_ids:ovn-bridge-mappings"}, `"provider-network:br1"`); err != nil {
			return err
		}
		if err := expect([]string{"ovs-appctl", "bond/show", "bond1"}, "bond_mode: balance-slb", e.NICs.B, e.NICs.C); err != nil {
			return err
		}
		// No datapath: netdev added: the bridge and its ports are in the kernel's datapath.
		if err := expect([]string{"ovs-dpctl", "show"}, "system@ovs-system", "br1 (internal)", e.NICs.B, e.NICs.C); err != nil {
			return err
		}
		return e.applyPolicy(ctx, `{"spec": {"desiredState": {"interfaces": [{"name": "br1", "type": "ovs-bridge", "state": "absent"}],
  "ovn": {"bridge-mappings": [{"localnet": "provider-network", "state": "absent"}]}}}}`)
	}},
	{"IPsec through NetworkManager 1.52's VPN machinery, with a stand-in for NetworkManager-libreswan", func(ctx context.Context, e *Env) error {
		if err := installFakeLibreswan(ctx); err != nil {
			return err
		}
		policy, err := published.OpenShift("nw-ovn-ipsec-north-south-enable-2.yaml")
		if err != nil {
			return err
		}
		// The stand-in reports the gateway it connects to, and resolves no names.
		raw, ipsec, err := policyDesired(strings.Replace(policy, "right: host.example.com", "right: 192.0.2.252", 1))
		if err != nil {
			return err
		}
		b := networkmanager.Backend{Client: e.NM, Options: networkmanager.ApplyOptions{ActivationTimeout: 60 * time.Second}}
		if err := b.Check(ctx, "", raw); err != nil {
			return err
		}
		// NetworkManager runs a VPN over the device of its primary connection, the one with
		// the best default route of its own: the guest's NIC A is not NetworkManager's, so
		// another policy gives NIC B one, as a node's uplink has.
		uplink, err := state.Parse([]byte(e.named(`
interfaces:
- {name: {B}, type: ethernet, state: up, ipv4: {enabled: true, dhcp: false, address: [{ip: 192.0.2.251, prefix-length: 24}]}}
routes:
  config:
  - {destination: 0.0.0.0/0, next-hop-address: 192.0.2.1, next-hop-interface: {B}, metric: 5000}
`)))
		if err != nil {
			return err
		}
		merged, err := state.Merge([]state.Source{{Policy: "uplink", State: uplink}, {Policy: "ipsec-config", State: ipsec}})
		if err != nil {
			return err
		}
		if err := e.applyCommit(ctx, merged.State, b.Options); err != nil {
			return err
		}
		if err := expect([]string{"nmcli", "-g", "GENERAL.STATE,GENERAL.VPN", "connection", "show", "hosta_conn"}, "activated"); err != nil {
			return err
		}
		if err := expect([]string{"cat", fakeLibreswanLog}, "connect right=192.0.2.252 psk=unset"); err != nil {
			return err
		}
		return e.applyCommit(ctx, state.State{}, networkmanager.ApplyOptions{Prune: true})
	}},
}

// fakeLibreswanLog is where the stand-in plugin notes each call NetworkManager makes.
const fakeLibreswanLog = "/run/fakevpn.log"

// installFakeLibreswan installs test/fakevpn (built into the share by the host) as
// NetworkManager-libreswan's service: its plugin file where the package puts it, a
// wrapper that gives it its log, and the bus policy that lets it own the plugin's names
// (one per connection) and NetworkManager call it. NetworkManager watches the plugin
// directory; the bus reloads its policy when asked.
func installFakeLibreswan(ctx context.Context) error {
	const wrapper = "/usr/local/libexec/nm-libreswan-service"
	files := map[string]string{
		wrapper: "#!/bin/sh\nFAKEVPN_LOG=" + fakeLibreswanLog + " exec /mnt/share/fakevpn \"$@\"\n",
		"/usr/share/dbus-1/system.d/nm-libreswan-service.conf": `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <policy user="root">
    <allow own_prefix="org.freedesktop.NetworkManager.libreswan"/>
    <allow send_destination_prefix="org.freedesktop.NetworkManager.libreswan"/>
  </policy>
</busconfig>
`,
		"/usr/lib/NetworkManager/VPN/nm-libreswan-service.name": "[VPN Connection]\nname=libreswan\nservice=org.freedesktop.NetworkManager.libreswan\n" +
			"program=" + wrapper + "\nsupports-multiple-connections=true\n",
	}
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
			return err
		}
	}
	if out, err := sh("busctl", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "ReloadConfig"); err != nil {
		return fmt.Errorf("reloading the bus's policy: %v: %s", err, out)
	}
	time.Sleep(time.Second) // NetworkManager's watch on the plugin directory
	return nil
}

// check is what the handler checks of a policy on this node before it applies it.
func (e *Env) check(ctx context.Context, doc string) error {
	return networkmanager.Backend{Client: e.NM}.Check(ctx, "", []byte(e.named(doc)))
}

// applyPolicy applies and commits a policy's desired state as the handler does, Open
// vSwitch's bridge mappings with it, after checking it against the node's NetworkManager.
func (e *Env) applyPolicy(ctx context.Context, policy string) error {
	raw, desired, err := policyDesired(policy)
	if err != nil {
		return err
	}
	if err := waitForOVSDB(ctx); err != nil {
		return err
	}
	b := networkmanager.Backend{Client: e.NM, OVSDBSocket: ovsdbSocket, Options: networkmanager.ApplyOptions{ActivationTimeout: 60 * time.Second}}
	if err := b.Check(ctx, "", raw); err != nil {
		return err
	}
	tx, err := b.Apply(ctx, desired)
	if err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// waitForOVSDB waits for Open vSwitch, which starts beside NetworkManager.
func waitForOVSDB(ctx context.Context) error {
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		_, err := os.Stat(ovsdbSocket)
		return err == nil, nil
	})
}
