//go:build node

package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/networkmanager/nmdbus"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/nmhost"
)

var _ = Describe("the NetworkManager engine", Ordered, func() {
	var (
		n   *nmhost.Node
		nm  *networkmanager.Client
		ctx = context.Background()
	)
	ip := func(args ...string) string {
		out, err := n.Run(ctx, "ip", args...)
		Expect(err).NotTo(HaveOccurred())
		return out
	}
	applyCommit := func(doc string) {
		tx, err := nm.Apply(ctx, mustParse(doc), networkmanager.ApplyOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(tx.Commit(ctx)).To(Succeed())
		record(ctx, "engine", mustParse(doc), nm)
	}
	keyfiles := func() map[string]string {
		out := map[string]string{}
		entries, _ := os.ReadDir(n.Lower())
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(n.Lower(), e.Name()))
			out[e.Name()] = string(b)
		}
		return out
	}

	BeforeAll(func() {
		// A persistent profile the engine does not own, as MCO would have written it.
		n, nm = newVethNode("engine", map[string]string{"persistent-eth4.nmconnection": persistentEth4})
	})
	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Println(n.NMLog())
		}
	})

	It("applies static IPv4 and IPv6 and routes on an ethernet interface", func() {
		applyCommit(ethernetState)
		Expect(ip("-4", "addr", "show", "eth1")).To(ContainSubstring("192.0.2.1/24"))
		Expect(ip("-6", "addr", "show", "eth1")).To(ContainSubstring("2001:db8:1::1/64"))
		Expect(ip("link", "show", "eth1")).To(ContainSubstring("mtu 1400"))
		Expect(ip("-4", "route")).To(MatchRegexp(`198.51.100.0/24 via 192.0.2.254 dev eth1 .*metric 50`))
		Expect(ip("-6", "route")).To(ContainSubstring("2001:db8:2::/64 via 2001:db8:1::fe dev eth1"))
		Expect(ip("-4", "route", "show", "table", "100")).To(ContainSubstring("203.0.113.0/24 via 192.0.2.253 dev eth1"))
		files := keyfiles()
		Expect(files).To(HaveKey("eth1.nmconnection"))
		Expect(files["eth1.nmconnection"]).To(ContainSubstring(networkmanager.OwnerKey + "=" + networkmanager.OwnerValue))
		// wait-ip stays on the interface's profile for the states after this one that leave
		// it unsaid (nmstate's partial editing); they all give eth1 an IPv4 address.
		Expect(files["eth1.nmconnection"]).To(MatchRegexp(`(?s)\[ipv4\][^\[]*may-fail=false`), "wait-ip: ipv4 is ipv4.may-fail=false")
		Expect(files["eth1.nmconnection"]).NotTo(MatchRegexp(`(?s)\[ipv6\][^\[]*may-fail=false`))
	})

	It("reads the current state back, stable across reads", func() {
		a, err := nm.Show(ctx)
		Expect(err).NotTo(HaveOccurred())
		b, err := nm.Show(ctx)
		Expect(err).NotTo(HaveOccurred())
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		Expect(string(ja)).To(Equal(string(jb)))
		var eth1 state.Interface
		for _, it := range a.Interfaces {
			if it.Name == "eth1" {
				eth1 = it
			}
		}
		Expect(eth1.State).To(Equal(state.Up))
		Expect(*eth1.MTU).To(Equal(1400))
		Expect(eth1.IPv4.Address).To(ContainElement(state.Address{IP: "192.0.2.1", PrefixLength: 24}))
	})

	It("changes nothing when the same state is applied again", func() {
		before := keyfiles()
		activeBefore := strings.TrimSpace(mustRun(n, "nmcli", "-g", "GENERAL.CON-PATH", "device", "show", "eth1"))
		applyCommit(ethernetState)
		Expect(keyfiles()).To(Equal(before), "no profile rewritten")
		Expect(strings.TrimSpace(mustRun(n, "nmcli", "-g", "GENERAL.CON-PATH", "device", "show", "eth1"))).To(Equal(activeBefore), "not re-activated")
	})

	// VLAN filtering needs CONFIG_BRIDGE_VLAN_FILTERING, which this host kernel lacks
	// (no /sys/class/net/<bridge>/bridge/vlan_filtering): the VM tier covers it.
	It("builds a linux bridge with two ports", func() {
		applyCommit(`
interfaces:
- name: br0
  type: linux-bridge
  state: up
  ipv4: {enabled: true, address: [{ip: 192.0.2.129, prefix-length: 25}]}
  bridge:
    options: {stp: {enabled: false}}
    port:
    - name: eth2
    - name: eth3
`)
		Expect(ip("link", "show", "eth2")).To(ContainSubstring("master br0"))
		Expect(ip("link", "show", "eth3")).To(ContainSubstring("master br0"))
		Expect(ip("-4", "addr", "show", "br0")).To(ContainSubstring("192.0.2.129/25"))
		s, err := nm.Show(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Interfaces).To(ContainElement(SatisfyAll(
			HaveField("Name", "br0"),
			WithTransform(bridgePortNames, ConsistOf("eth2", "eth3")))))
	})

	// An apply's own reads of the node (before it, and its verification) read only the
	// interfaces its state names, by name: they must read them as a read of the whole node
	// does.
	It("reads interfaces by name as a read of the whole node has them, with the ports of a controller", func() {
		whole, err := nm.Show(ctx)
		Expect(err).NotTo(HaveOccurred())
		named, err := nm.ShowInterfaces(ctx, []string{"br0", "eth1", "no-such-interface"})
		Expect(err).NotTo(HaveOccurred())
		names := func(s state.State) []string {
			var out []string
			for _, it := range s.Interfaces {
				out = append(out, it.Name)
			}
			return out
		}
		Expect(names(named)).To(ConsistOf("br0", "eth1", "eth2", "eth3"), "the bridge's ports are read with it")
		for _, it := range named.Interfaces {
			Expect(whole.Interfaces).To(ContainElement(it))
		}
		Expect(named.Routes).NotTo(BeNil())
		for _, r := range named.Routes.Running {
			Expect(whole.Routes.Running).To(ContainElement(r))
		}
		Expect(named.Routes.Running).To(ContainElement(HaveField("Destination", "198.51.100.0/24")), "eth1's route")
		Expect(named.DNSResolver.Running).To(Equal(whole.DNSResolver.Running))
	})

	// Its ports' spanning tree settings are the VM tier's: NetworkManager writes them
	// through sysfs, read-only here.
	It("applies a Linux bridge's STP timers, MAC ageing, snooping and forward mask, read back from the kernel", func() {
		applyCommit(`
interfaces:
- name: br0
  type: linux-bridge
  state: up
  ipv4: {enabled: true, address: [{ip: 192.0.2.129, prefix-length: 25}]}
  bridge:
    options:
      group-forward-mask: 8
      mac-ageing-time: 600
      multicast-snooping: false
      stp: {enabled: true, forward-delay: 10, hello-time: 3, max-age: 25, priority: 4096}
    port:
    - name: eth2
    - name: eth3
`)
		// The kernel's own units: hundredths of a second.
		Expect(ip("-d", "link", "show", "br0")).To(SatisfyAll(
			MatchRegexp(`forward_delay 1000 hello_time 300 max_age 2500 ageing_time 60000 stp_state 1 priority 4096 `),
			MatchRegexp(`group_fwd_mask 0x8 `), MatchRegexp(`mcast_snooping 0 `)))
		s, err := nm.Show(ctx)
		Expect(err).NotTo(HaveOccurred())
		i := slices.IndexFunc(s.Interfaces, func(it state.Interface) bool { return it.Name == "br0" })
		Expect(i).To(BeNumerically(">=", 0))
		o := state.SectionOf[*state.BridgeConfig](s.Interfaces[i]).Options
		Expect(*o.STP.ForwardDelay).To(Equal(10))
		Expect(*o.MACAgeingTime).To(Equal(600))
		Expect(*o.GroupForwardMask).To(Equal(8))
	})

	It("gives a bridge the MAC address of one of its ports (copy-mac-from), read when applied", func() {
		mac := func(dev string) string {
			out, err := n.ReadFile(ctx, "/sys/class/net/"+dev+"/address")
			Expect(err).NotTo(HaveOccurred())
			return strings.TrimSpace(out)
		}
		// The port whose address the bridge does not have already (a bridge takes its lowest).
		port := "eth2"
		if mac("br0") == mac("eth2") {
			port = "eth3"
		}
		bridge := func(from string) string {
			return `
interfaces:
- name: br0
  type: linux-bridge
  state: up
  copy-mac-from: ` + from + `
  ipv4: {enabled: true, address: [{ip: 192.0.2.129, prefix-length: 25}]}
  bridge:
    options: {stp: {enabled: false}}
    port:
    - name: eth2
    - name: eth3
`
		}
		before := keyfiles()
		_, err := nm.Apply(ctx, mustParse(bridge("nosuch0")), networkmanager.ApplyOptions{})
		Expect(err).To(MatchError(ContainSubstring(`interfaces[name=br0].copy-mac-from: no interface "nosuch0" with a MAC address on this node`)))
		Expect(keyfiles()).To(Equal(before), "nothing applied")
		applyCommit(bridge(port))
		Expect(mac("br0")).To(Equal(mac(port)))
		Expect(ip("link", "show", port)).To(ContainSubstring("master br0"))
	})

	It("creates a mac-vlan, a mac-vtap, a vxlan and a veth pair", func() {
		applyCommit(`
interfaces:
- name: mv0
  type: mac-vlan
  state: up
  mac-vlan: {base-iface: eth4, mode: bridge}
  ipv4: {enabled: true, address: [{ip: 198.51.100.200, prefix-length: 24}]}
- name: mvt0
  type: mac-vtap
  state: up
  mac-vtap: {base-iface: eth4, mode: bridge}
- name: vx100
  type: vxlan
  state: up
  vxlan: {id: 100, base-iface: eth1, remote: 192.0.2.250, destination-port: 4789, learning: false}
- name: vpeer0
  type: veth
  state: up
  veth: {peer: vpeer1}
  accept-all-mac-addresses: true
`)
		Expect(ip("-d", "link", "show", "mv0")).To(ContainSubstring("macvlan mode bridge"))
		Expect(ip("-d", "link", "show", "mvt0")).To(ContainSubstring("macvtap mode bridge"))
		Expect(ip("-d", "link", "show", "vx100")).To(SatisfyAll(MatchRegexp(`vxlan id 100 remote 192.0.2.250 dev eth1`), ContainSubstring("nolearning")))
		Expect(ip("link", "show", "vpeer0")).To(SatisfyAll(ContainSubstring("vpeer1"), ContainSubstring("PROMISC")))
	})

	It("modifies an interface and removes one with state absent", func() {
		applyCommit(`
interfaces:
- name: mv0
  state: absent
- name: eth1
  type: ethernet
  state: up
  ipv4: {enabled: true, address: [{ip: 192.0.2.2, prefix-length: 24}]}
`)
		_, err := n.Run(ctx, "ip", "link", "show", "mv0")
		Expect(err).To(HaveOccurred(), "mv0 must be gone")
		Expect(keyfiles()).NotTo(HaveKey("mv0.nmconnection"))
		Expect(ip("-4", "addr", "show", "eth1")).To(ContainSubstring("192.0.2.2/24"))
		Expect(ip("link", "show", "eth1")).To(ContainSubstring("mtu 1400"), "what the state leaves out is kept")
	})

	It("rolls back explicitly: address and profile as before", func() {
		before := keyfiles()
		tx, err := nm.Apply(ctx, mustParse(`interfaces: [{name: eth1, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.3, prefix-length: 24}]}}]`), networkmanager.ApplyOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(ip("-4", "addr", "show", "eth1")).To(ContainSubstring("192.0.2.3/24"))
		Expect(tx.Rollback(ctx)).To(Succeed())
		Eventually(func() string { return ip("-4", "addr", "show", "eth1") }, "10s", "100ms").Should(
			SatisfyAll(ContainSubstring("192.0.2.2/24"), Not(ContainSubstring("192.0.2.3"))))
		Expect(keyfiles()).To(Equal(before))
	})

	It("rolls back by itself when nobody commits before the timeout", func() {
		_, err := nm.Apply(ctx, mustParse(`interfaces: [{name: eth1, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.4, prefix-length: 24}]}}, {name: dummy0x, type: veth, state: up, veth: {peer: dummy0y}}]`),
			networkmanager.ApplyOptions{RollbackTimeout: 3 * time.Second})
		Expect(err).NotTo(HaveOccurred())
		Expect(ip("-4", "addr", "show", "eth1")).To(ContainSubstring("192.0.2.4/24"))
		Eventually(func() string { return ip("-4", "addr", "show", "eth1") }, "15s", "200ms").Should(
			SatisfyAll(ContainSubstring("192.0.2.2/24"), Not(ContainSubstring("192.0.2.4"))))
		Eventually(func() map[string]string { return keyfiles() }, "5s").ShouldNot(HaveKey("dummy0x.nmconnection"))
	})

	It("rolls back completely and says why when the state cannot converge", func() {
		before := keyfiles()
		_, err := nm.Apply(ctx, mustParse(`
interfaces:
- name: br9
  type: linux-bridge
  state: up
  ipv4: {enabled: true, address: [{ip: 203.0.113.9, prefix-length: 24}]}
  bridge: {port: [{name: nope0}]}
- name: eth1
  type: ethernet
  state: up
  ipv4: {enabled: true, address: [{ip: 192.0.2.5, prefix-length: 24}]}
`), networkmanager.ApplyOptions{ActivationTimeout: 10 * time.Second})
		var ae *networkmanager.ApplyError
		Expect(errors.As(err, &ae)).To(BeTrue(), "%v", err)
		Expect(ae.RollbackErr).NotTo(HaveOccurred())
		Expect(ae.Reason).To(ContainSubstring("nope0"))
		Eventually(func() string { return ip("-4", "addr", "show", "eth1") }, "10s", "100ms").Should(
			SatisfyAll(ContainSubstring("192.0.2.2/24"), Not(ContainSubstring("192.0.2.5"))))
		_, err = n.Run(ctx, "ip", "link", "show", "br9")
		Expect(err).To(HaveOccurred(), "br9 must be gone")
		Expect(keyfiles()).To(Equal(before))
	})

	It("sets DNS servers and search domains", func() {
		applyCommit(`
dns-resolver:
  config:
    server: [192.0.2.53, "2001:db8:1::53"]
    search: [example.com]
    options: [rotate, ndots:9]
interfaces:
- name: eth1
  type: ethernet
  state: up
  ipv4: {enabled: true, address: [{ip: 192.0.2.2, prefix-length: 24}]}
  ipv6: {enabled: true, address: [{ip: "2001:db8:1::1", prefix-length: 64}]}
`)
		s, err := nm.Show(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(s.DNSResolver).NotTo(BeNil())
		Expect(s.DNSResolver.Running.Server).To(ContainElements("192.0.2.53", "2001:db8:1::53"))
		Expect(s.DNSResolver.Running.Search).To(ContainElement("example.com"))
		Expect(keyfiles()["eth1.nmconnection"]).To(SatisfyAll(ContainSubstring("dns=192.0.2.53;"), ContainSubstring("dns-options=rotate;ndots:9;")))
		Expect(s.DNSResolver.Config.Options).To(Equal([]string{"rotate", "ndots:9"}))
	})

	It("leaves a profile it does not own untouched, and the interface returns to it when removed", func() {
		Eventually(func() string { return ip("-4", "addr", "show", "eth4") }, "10s", "100ms").Should(ContainSubstring("10.4.0.1/24"))
		applyCommit(`interfaces: [{name: eth4, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 10.4.0.2, prefix-length: 24}]}}]`)
		Expect(ip("-4", "addr", "show", "eth4")).To(SatisfyAll(ContainSubstring("10.4.0.2/24"), Not(ContainSubstring("10.4.0.1/"))))
		Expect(keyfiles()).To(HaveKeyWithValue("persistent-eth4.nmconnection", persistentEth4))

		applyCommit(`interfaces: [{name: eth4, state: absent}]`)
		Expect(keyfiles()).To(HaveKeyWithValue("persistent-eth4.nmconnection", persistentEth4))
		Expect(keyfiles()).NotTo(HaveKey("eth4.nmconnection"))
		Eventually(func() string { return ip("-4", "addr", "show", "eth4") }, "10s", "100ms").Should(ContainSubstring("10.4.0.1/24"))
	})

	It("prunes what no desired state names any more: interfaces go back to their persistent profiles", func() {
		applyCommit(`
interfaces:
- {name: eth4, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 10.4.0.3, prefix-length: 24}]}}
- {name: mvp, type: mac-vlan, state: up, mac-vlan: {base-iface: eth1, mode: bridge}}
`)
		Expect(ip("-4", "addr", "show", "eth4")).To(ContainSubstring("10.4.0.3/24"))
		only := mustParse(`interfaces: [{name: eth1, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.2, prefix-length: 24}]}}]`)
		tx, err := nm.Apply(ctx, only, networkmanager.ApplyOptions{Prune: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(tx.Commit(ctx)).To(Succeed())
		files := keyfiles()
		Expect(files).NotTo(HaveKey("eth4.nmconnection"))
		Expect(files).NotTo(HaveKey("mvp.nmconnection"))
		Expect(files).To(HaveKey("eth1.nmconnection"))
		Expect(files).To(HaveKeyWithValue("persistent-eth4.nmconnection", persistentEth4))
		Eventually(func() error { _, err := n.Run(ctx, "ip", "link", "show", "mvp"); return err }, "10s").Should(HaveOccurred())
		Eventually(func() string { return ip("-4", "addr", "show", "eth4") }, "10s", "100ms").Should(ContainSubstring("10.4.0.1/24"))
	})

	It("signals changes of the host's network, debounced", func() {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		changes, err := nm.Changes(cctx)
		Expect(err).NotTo(HaveOccurred())
		Consistently(changes, "600ms").ShouldNot(Receive(), "a quiet host sends nothing")
		for i := 0; i < 20; i++ { // a burst of changes made outside the engine
			mustRun(n, "ip", "addr", "add", fmt.Sprintf("10.9.%d.1/24", i), "dev", "eth1")
		}
		Eventually(changes, "3s").Should(Receive())
		// NetworkManager follows up on external changes on its own; the burst of 20 must
		// still come out as a few signals, not 20 or more.
		extra := 0
		for deadline := time.After(2 * time.Second); ; {
			select {
			case <-changes:
				extra++
				continue
			case <-deadline:
			}
			break
		}
		Expect(extra).To(BeNumerically("<=", 2))
		cancel()
		Eventually(changes, "2s").Should(BeClosed())
	})

	It("signals an apply's change once the apply ended, and what changes after it", func() {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		changes, err := nm.Changes(cctx)
		Expect(err).NotTo(HaveOccurred())
		Consistently(changes, "600ms").ShouldNot(Receive(), "a quiet host sends nothing")
		// The watch is paused while the apply runs (the bus sends none of its signals) and
		// resumed when it returns: the change must still be signalled, and the watch must
		// see what happens next.
		tx, err := nm.Apply(ctx, mustParse(`interfaces: [{name: eth1, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.21, prefix-length: 24}]}}]`), networkmanager.ApplyOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(tx.Commit(ctx)).To(Succeed())
		Eventually(changes, "3s").Should(Receive(), "the apply's change")
		Eventually(func() bool {
			select {
			case <-changes:
				return false
			case <-time.After(time.Second):
				return true
			}
		}, "10s").Should(BeTrue(), "the host settles")
		mustRun(n, "ip", "addr", "add", "10.9.99.1/24", "dev", "eth1")
		Eventually(changes, "3s").Should(Receive(), "a change made after the apply")
	})

	It("activates an unchanged profile again when what it runs was changed outside nmoverlay", func() {
		desired := mustParse(`interfaces: [{name: eth1, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.31, prefix-length: 24}]}}]`)
		tx, err := nm.Apply(ctx, desired, networkmanager.ApplyOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(tx.Commit(ctx)).To(Succeed())
		mustRun(n, "ip", "addr", "del", "192.0.2.31/24", "dev", "eth1")
		Eventually(func() string { return ip("-4", "addr", "show", "eth1") }, "5s").ShouldNot(ContainSubstring("192.0.2.31/24"))
		// The same state again: the profile is unchanged and active, but no longer runs its
		// address; the apply's verification sees it, and the profile is activated again.
		tx, err = nm.Apply(ctx, desired, networkmanager.ApplyOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(tx.Commit(ctx)).To(Succeed())
		Expect(ip("-4", "addr", "show", "eth1")).To(ContainSubstring("192.0.2.31/24"))
	})

	It("clears a checkpoint left by a crashed apply of its own, at once", func() {
		opts := networkmanager.ApplyOptions{RollbackTimeout: 600 * time.Second, CheckpointRecord: filepath.Join(GinkgoT().TempDir(), "checkpoint.json")}
		_, err := nm.Apply(ctx, mustParse(`interfaces: [{name: eth1, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.6, prefix-length: 24}]}}]`), opts)
		Expect(err).NotTo(HaveOccurred())
		// the process "crashed" here: no commit, no rollback; a new apply must still work
		tx, err := nm.Apply(ctx, mustParse(`interfaces: [{name: eth1, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.7, prefix-length: 24}]}}]`), opts)
		Expect(err).NotTo(HaveOccurred())
		Expect(tx.Commit(ctx)).To(Succeed())
		out := ip("-4", "addr", "show", "eth1")
		Expect(out).To(ContainSubstring("192.0.2.7/24"))
		Expect(out).NotTo(ContainSubstring("192.0.2.6"))
		_, err = os.Stat(opts.CheckpointRecord)
		Expect(os.IsNotExist(err)).To(BeTrue(), "the note outlived its checkpoint")
	})

	It("never rolls back another tool's checkpoint: it waits and says whose", func() {
		conn, err := dbus.Connect(n.BusAddress())
		Expect(err).NotTo(HaveOccurred())
		defer conn.Close()
		nmObj := conn.Object(nmdbus.BusName, nmdbus.Path)
		var theirs dbus.ObjectPath
		Expect(nmObj.Call(nmdbus.Iface+".CheckpointCreate", 0, []dbus.ObjectPath{}, uint32(300), uint32(0)).Store(&theirs)).To(Succeed())
		mustRun(n, "nmcli", "con", "add", "type", "bridge", "con-name", "br-theirs", "ifname", "br-theirs", "ipv4.method", "disabled", "ipv6.method", "disabled")

		opts := networkmanager.ApplyOptions{CheckpointRecord: filepath.Join(GinkgoT().TempDir(), "checkpoint.json")}
		_, err = nm.Apply(ctx, mustParse(`interfaces: [{name: eth1, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.8, prefix-length: 24}]}}]`), opts)
		var busy *networkmanager.CheckpointBusyError
		Expect(errors.As(err, &busy)).To(BeTrue(), "%v", err)
		Expect(busy.Path).To(Equal(theirs))
		Expect(ip("-4", "addr", "show", "eth1")).NotTo(ContainSubstring("192.0.2.8"), "applied while another tool's transaction was open")

		Expect(nmObj.Call(nmdbus.Iface+".CheckpointDestroy", 0, theirs).Err).To(Succeed())
		tx, err := nm.Apply(ctx, mustParse(`interfaces: [{name: eth1, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.8, prefix-length: 24}]}}]`), opts)
		Expect(err).NotTo(HaveOccurred())
		Expect(tx.Commit(ctx)).To(Succeed())
		Expect(mustRun(n, "nmcli", "-g", "connection.id", "con", "show", "br-theirs")).To(ContainSubstring("br-theirs"), "their change is gone")
		mustRun(n, "nmcli", "con", "del", "br-theirs")
	})

	// With Prune (the handler's mode: the node's whole desired state each time).
	It("drops a route the desired state no longer names from an interface it keeps", func() {
		applyPrune := func(doc string) {
			tx, err := nm.Apply(ctx, mustParse(doc), networkmanager.ApplyOptions{Prune: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(tx.Commit(ctx)).To(Succeed())
		}
		two := `
interfaces: [{name: eth2, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.30, prefix-length: 24}]}}]
routes:
  config:
  - {destination: 198.51.100.0/24, next-hop-address: 192.0.2.254, next-hop-interface: eth2}
  - {destination: 203.0.113.0/24, next-hop-address: 192.0.2.254, next-hop-interface: eth2}
`
		applyPrune(two)
		Expect(ip("-4", "route", "show", "dev", "eth2")).To(SatisfyAll(ContainSubstring("198.51.100.0/24"), ContainSubstring("203.0.113.0/24")))
		// The policy with the second route was deleted: the merged state names one.
		applyPrune(`
interfaces: [{name: eth2, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.30, prefix-length: 24}]}}]
routes:
  config:
  - {destination: 198.51.100.0/24, next-hop-address: 192.0.2.254, next-hop-interface: eth2}
`)
		Eventually(func() string { return ip("-4", "route", "show", "dev", "eth2") }, "10s", "100ms").Should(SatisfyAll(
			ContainSubstring("198.51.100.0/24"), Not(ContainSubstring("203.0.113.0/24"))))
		out, err := n.Run(ctx, "nmcli", "-g", "ipv4.routes", "con", "show", "eth2")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).NotTo(ContainSubstring("203.0.113.0"), "the profile keeps the dropped route")
	})
})

const persistentEth4 = `[connection]
id=persistent-eth4
uuid=11111111-2222-4333-8444-555555555555
type=ethernet
interface-name=eth4

[ipv4]
method=manual
address1=10.4.0.1/24

[ipv6]
method=disabled
`

const ethernetState = `
interfaces:
- name: eth1
  type: ethernet
  state: up
  mtu: 1400
  wait-ip: ipv4
  ipv4: {enabled: true, address: [{ip: 192.0.2.1, prefix-length: 24}]}
  ipv6: {enabled: true, address: [{ip: "2001:db8:1::1", prefix-length: 64}]}
routes:
  config:
  - {destination: 198.51.100.0/24, next-hop-address: 192.0.2.254, next-hop-interface: eth1, metric: 50}
  - {destination: "2001:db8:2::/64", next-hop-address: "2001:db8:1::fe", next-hop-interface: eth1}
  - {destination: 203.0.113.0/24, next-hop-address: 192.0.2.253, next-hop-interface: eth1, table-id: 100}
`

func mustRun(n *nmhost.Node, name string, args ...string) string {
	out, err := n.Run(context.Background(), name, args...)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// newVethNode boots a node-tier node whose NICs eth1..eth4 are veths (their peers up),
// with the given persistent profiles in its lower dir, starts NetworkManager and connects
// the engine; run it in a BeforeAll (it registers the clean-up).
func newVethNode(name string, persistent map[string]string) (*nmhost.Node, *networkmanager.Client) {
	GinkgoHelper()
	ctx := context.Background()
	n, err := nmhost.New(name)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(n.Close)
	n.BootSetup = withNICs(ctx, "eth1", "eth2", "eth3", "eth4")
	for file, content := range persistent {
		Expect(os.WriteFile(filepath.Join(n.Lower(), file), []byte(content), 0o600)).To(Succeed())
	}
	Expect(n.Boot(ctx)).To(Succeed())
	Expect(n.StartNM(ctx, "")).To(Succeed(), n.NMLog())
	nm, err := n.ConnectNM(ctx)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(nm.Close)
	return n, nm
}

// bridgePorts are a bridge interface's ports, none for another kind.
func bridgePorts(it state.Interface) []state.BridgePort {
	if b := state.SectionOf[*state.BridgeConfig](it); b != nil {
		return b.Port
	}
	return nil
}

// bridgePortNames are the names of a bridge interface's ports.
func bridgePortNames(it state.Interface) []string {
	var names []string
	for _, p := range bridgePorts(it) {
		names = append(names, p.Name)
	}
	return names
}
