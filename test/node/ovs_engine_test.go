//go:build node

package node_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/nmoverlay/nmoverlay/api/field"
	"github.com/nmoverlay/nmoverlay/internal/backend"
	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/ovsdb"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/nmhost"
)

// OVS policies as OpenShift documents them, applied by the handler's engine on a node
// with the overlay and a real Open vSwitch (userspace datapath: this kernel has no
// openvswitch module, so the test policies add datapath: netdev to what the
// documentation writes). The bridges are NetworkManager profiles in the tmpfs layer; the
// bridge mappings are written to ovsdb-server in the same transaction and marked as
// nmoverlay's. What someone else made in OVSDB (a bridge, a mapping) is never touched.
var _ = Describe("Open vSwitch policies through the engine", Ordered, func() {
	var (
		ctx    = context.Background()
		n      *overlayNode
		nm     *networkmanager.Client
		engine networkmanager.Backend
		show   func(context.Context) (state.State, error)
	)
	run := func(name string, args ...string) string {
		out, err := n.Run(ctx, name, args...)
		Expect(err).NotTo(HaveOccurred(), "%s %v: %s", name, args, out)
		return strings.TrimSpace(out)
	}
	bridges := func() []string { return strings.Fields(run("ovs-vsctl", "list-br")) }
	externalID := func(key string) string {
		return strings.Trim(run("ovs-vsctl", "--if-exists", "get", "Open_vSwitch", ".", "external_ids:"+key), `"`)
	}
	connect := func() {
		var err error
		nm, err = n.ConnectNM(ctx)
		Expect(err).NotTo(HaveOccurred())
		engine = networkmanager.Backend{Client: nm, Options: networkmanager.ApplyOptions{RollbackTimeout: 40 * time.Second},
			OVSDBSocket: n.PathInNode(nmhost.OVSDBSocket)}
		show = networkmanager.ShowWithMappings(nm.Show, engine.OVSDBSocket)
	}
	desired := mergePolicies
	apply := func(docs ...string) backend.Transaction {
		tx, err := engine.Apply(ctx, desired(docs...))
		Expect(err).NotTo(HaveOccurred(), n.NMLog())
		record(ctx, "ovs", desired(docs...), nm)
		return tx
	}
	current := func() state.State {
		s, err := show(ctx)
		Expect(err).NotTo(HaveOccurred())
		return s
	}
	find := func(s state.State, name string, typ state.InterfaceType) *state.Interface {
		i := slices.IndexFunc(s.Interfaces, func(it state.Interface) bool { return it.Name == name && it.Type == typ })
		if i < 0 {
			return nil
		}
		return &s.Interfaces[i]
	}
	upper := func() []string {
		entries, _ := os.ReadDir(n.PathInNode(n.layout.Upper()))
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}

	// The localnet policy of the OpenShift documentation, its port a NIC of the node.
	const localnet = `
interfaces:
- name: ovs-br1
  description: A dedicated OVS bridge with eth2 as a port
  type: ovs-bridge
  state: up
  bridge:
    allow-extra-patch-ports: true
    options:
      stp: false
      mcast-snooping-enable: true
      datapath: netdev
    port:
    - name: eth2
ovn:
  bridge-mappings:
  - localnet: localnet2
    bridge: ovs-br1
    state: present
`
	// A mapping onto a bridge made outside nmoverlay.
	const ontoManual = `
ovn:
  bridge-mappings:
  - localnet: tenant
    bridge: br-manual
`
	// The br-ex customization of the OpenShift documentation: the uplink's address and MAC
	// move to the bridge's internal interface (static here: the node tier has no DHCP).
	const brEx = `
interfaces:
- name: eth3
  type: ethernet
  state: up
  ipv4: {enabled: false}
  ipv6: {enabled: false}
- name: br-ex
  type: ovs-bridge
  state: up
  ipv4: {enabled: false, dhcp: false}
  ipv6: {enabled: false, dhcp: false}
  bridge:
    options: {mcast-snooping-enable: true, datapath: netdev}
    port:
    - name: eth3
    - name: br-ex
- name: br-ex
  type: ovs-interface
  state: up
  copy-mac-from: eth3
  ipv4:
    enabled: true
    address: [{ip: 198.51.100.10, prefix-length: 24}]
  ipv6: {enabled: false}
`

	// OpenShift Virtualization's localnet bridge over an OVS bond of two NICs
	// (virt-creating-ovs-bridge-mapping-localnet), its NICs eth4 and eth5 here.
	const bond = `
interfaces:
- {name: eth4, type: ethernet, state: up, mtu: 9000}
- {name: eth5, type: ethernet, state: up, mtu: 9000}
- name: br1
  type: ovs-bridge
  state: up
  bridge:
    allow-extra-patch-ports: true
    options: {stp: false, mcast-snooping-enable: true, datapath: netdev}
    port:
    - name: bond1
      link-aggregation:
        mode: balance-slb
        bond-updelay: 100
        port: [{name: eth4}, {name: eth5}]
    - name: br1
- name: br1
  type: ovs-interface
  state: up
  ipv4: {enabled: false}
  ipv6: {enabled: false}
ovn:
  bridge-mappings:
  - {localnet: provider-network, bridge: br1, state: present}
`

	BeforeAll(func() {
		nmDir := os.Getenv("NMOVERLAY_NM_OVS")
		Expect(filepath.Join(nmDir, "NetworkManager")).To(BeAnExistingFile(), "NMOVERLAY_NM_OVS is unset: run make test-node (hack/nm-ovs.sh builds it)")
		var err error
		n, err = newOverlayNode("ovseng", helper, withNICs(ctx, "eth2", "eth3", "eth4", "eth5"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(n.close)
		n.OVS = &nmhost.OVS{NetworkManagerDir: nmDir}
		Expect(n.start(ctx)).To(Succeed())
		connect()
		DeferCleanup(func() { nm.Close() })
		// Made by someone else: a bridge and a mapping onto it.
		run("ovs-vsctl", "add-br", "br-manual", "--", "set", "Bridge", "br-manual", "datapath_type=netdev")
		run("ovs-vsctl", "set", "Open_vSwitch", ".", "external_ids:ovn-bridge-mappings=physnet:br-manual")
	})
	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Println(n.NMLog())
			for _, args := range [][]string{{"ovs-vsctl", "show"}, {"ip", "link"}, {"nmcli", "-f", "GENERAL.DEVICE,GENERAL.TYPE,GENERAL.HWADDR,GENERAL.STATE,GENERAL.CONNECTION", "device", "show"}} {
				out, _ := n.Run(ctx, args[0], args[1:]...)
				GinkgoWriter.Println(strings.Join(args, " ") + ":\n" + out)
			}
		}
	})

	It("applies the localnet policy: an OVS bridge with its port, and its mapping beside one it did not make", func() {
		Expect(apply(localnet, ontoManual).Commit(ctx)).To(Succeed())
		Expect(bridges()).To(ConsistOf("br-manual", "ovs-br1"))
		Expect(strings.Fields(run("ovs-vsctl", "list-ports", "ovs-br1"))).To(ConsistOf("eth2"))
		Expect(run("ovs-vsctl", "get", "Bridge", "ovs-br1", "mcast_snooping_enable")).To(Equal("true"))
		Expect(externalID(ovsdb.BridgeMappingsKey)).To(Equal("localnet2:ovs-br1,physnet:br-manual,tenant:br-manual"))
		Expect(externalID(ovsdb.OwnedMappingsKey)).To(Equal("localnet2:ovs-br1,tenant:br-manual"))
		// The profiles are in the tmpfs layer only.
		Expect(upper()).To(ContainElements(ContainSubstring("ovs-br1"), ContainSubstring("eth2")))
		Expect(os.ReadDir(n.Lower())).To(HaveLen(1)) // eth1's persistent profile alone

		s := current()
		br := find(s, "ovs-br1", state.OVSBridge)
		Expect(br).NotTo(BeNil(), "%+v", s.Interfaces)
		Expect(br.State).To(Equal(state.Up))
		Expect(state.SectionOf[*state.BridgeConfig](*br).Port).To(ContainElement(state.BridgePort{Name: "eth2"}))
		Expect(*state.SectionOf[*state.BridgeConfig](*br).Options.MCastSnoopingEnable).To(BeTrue())
		Expect(s.OVN.BridgeMappings).To(ConsistOf(
			state.BridgeMapping{Localnet: "localnet2", Bridge: "ovs-br1"},
			state.BridgeMapping{Localnet: "physnet", Bridge: "br-manual"},
			state.BridgeMapping{Localnet: "tenant", Bridge: "br-manual"}))
		Expect(state.Verify(desired(localnet, ontoManual), s)).To(BeEmpty())
	})

	It("refuses to change a mapping it did not make, with nothing changed", func() {
		_, err := engine.Apply(ctx, desired(localnet, ontoManual, brEx, `ovn: {bridge-mappings: [{localnet: physnet, bridge: ovs-br1}]}`))
		var fe *field.Error
		Expect(errors.As(err, &fe)).To(BeTrue(), "%v", err)
		Expect(fe.Path).To(Equal("ovn.bridge-mappings[localnet=physnet]"))
		Expect(fe.Reason).To(ContainSubstring(`mapped to bridge "br-manual" outside nmoverlay`))
		Expect(bridges()).To(ConsistOf("br-manual", "ovs-br1"))
		Expect(externalID(ovsdb.BridgeMappingsKey)).To(Equal("localnet2:ovs-br1,physnet:br-manual,tenant:br-manual"))
	})

	It("builds br-ex: the uplink a port, its MAC and address on the bridge's internal interface", func() {
		Expect(apply(localnet, ontoManual, brEx).Commit(ctx)).To(Succeed())
		Expect(bridges()).To(ConsistOf("br-manual", "br-ex", "ovs-br1"))
		Expect(strings.Fields(run("ovs-vsctl", "list-ports", "br-ex"))).To(ConsistOf("eth3"))
		Expect(run("ovs-vsctl", "get", "Interface", "br-ex", "type")).To(Equal("internal"))
		uplinkMAC := run("cat", "/sys/class/net/eth3/address")
		Expect(run("cat", "/sys/class/net/br-ex/address")).To(Equal(uplinkMAC))
		Expect(run("ip", "-4", "-o", "addr", "show", "br-ex")).To(ContainSubstring("198.51.100.10/24"))
		s := current()
		Expect(find(s, "br-ex", state.OVSBridge)).NotTo(BeNil())
		iface := find(s, "br-ex", state.OVSInterface)
		Expect(iface).NotTo(BeNil())
		Expect(strings.EqualFold(*iface.MACAddress, uplinkMAC)).To(BeTrue())
		Expect(state.Verify(desired(localnet, ontoManual, brEx), s)).To(BeEmpty())

		// The same policies again: no profile rewritten, nothing activated again.
		active := func() string {
			return run("nmcli", "-t", "-f", "UUID,DEVICE,ACTIVE-PATH", "connection", "show", "--active")
		}
		activeBefore, filesBefore := active(), upper()
		Expect(apply(localnet, ontoManual, brEx).Commit(ctx)).To(Succeed())
		Expect(active()).To(Equal(activeBefore))
		Expect(upper()).To(Equal(filesBefore))
	})

	It("changes an OVS bridge's options: the bridge is activated again, and its ports with it", func() {
		changed := strings.Replace(localnet, "mcast-snooping-enable: true", "mcast-snooping-enable: false", 1)
		Expect(apply(changed, ontoManual, brEx).Commit(ctx)).To(Succeed())
		Expect(run("ovs-vsctl", "get", "Bridge", "ovs-br1", "mcast_snooping_enable")).To(Equal("false"))
		Expect(strings.Fields(run("ovs-vsctl", "list-ports", "ovs-br1"))).To(ConsistOf("eth2"))
		Expect(state.Verify(desired(changed, ontoManual, brEx), current())).To(BeEmpty())
		Expect(apply(localnet, ontoManual, brEx).Commit(ctx)).To(Succeed())
		Expect(run("ovs-vsctl", "get", "Bridge", "ovs-br1", "mcast_snooping_enable")).To(Equal("true"))
	})

	It("bonds two NICs on an OVS bridge, changes the bond's mode, rolls the change back, and removes the bond", func() {
		ovsdbCol := func(table, record, column string) string {
			return strings.Trim(run("ovs-vsctl", "get", table, record, column), `"`)
		}
		Expect(apply(localnet, ontoManual, brEx, bond).Commit(ctx)).To(Succeed())
		Expect(strings.Fields(run("ovs-vsctl", "list-ports", "br1"))).To(ConsistOf("bond1"))
		Expect(strings.Fields(run("ovs-vsctl", "list-ifaces", "br1"))).To(ConsistOf("eth4", "eth5"))
		Expect(ovsdbCol("Port", "bond1", "bond_mode")).To(Equal("balance-slb"))
		Expect(ovsdbCol("Port", "bond1", "lacp")).To(Equal("off"))
		Expect(ovsdbCol("Port", "bond1", "bond_updelay")).To(Equal("100"))
		Expect(run("ovs-appctl", "-t", nmhost.VSwitchdControl, "bond/show", "bond1")).To(SatisfyAll(ContainSubstring("bond_mode: balance-slb"), ContainSubstring("eth4"), ContainSubstring("eth5")))
		Expect(run("cat", "/sys/class/net/eth4/mtu")).To(Equal("9000"))
		Expect(externalID(ovsdb.BridgeMappingsKey)).To(ContainSubstring("provider-network:br1"))
		s := current()
		br := find(s, "br1", state.OVSBridge)
		Expect(br).NotTo(BeNil(), "%+v", s.Interfaces)
		i := slices.IndexFunc(state.SectionOf[*state.BridgeConfig](*br).Port, func(p state.BridgePort) bool { return p.Name == "bond1" })
		Expect(i).To(BeNumerically(">=", 0), "%+v", state.SectionOf[*state.BridgeConfig](*br).Port)
		Expect(state.SectionOf[*state.BridgeConfig](*br).Port[i].LinkAggregation).NotTo(BeNil())
		Expect(state.SectionOf[*state.BridgeConfig](*br).Port[i].LinkAggregation.Mode).To(Equal("balance-slb"))
		Expect(state.SectionOf[*state.BridgeConfig](*br).Port[i].Interfaces()).To(Equal([]string{"eth4", "eth5"}))
		Expect(state.Verify(desired(localnet, ontoManual, brEx, bond), s)).To(BeEmpty())

		// Another mode, rolled back: the bond is balance-slb again with both NICs.
		activeBackup := strings.Replace(bond, "mode: balance-slb", "mode: active-backup", 1)
		tx := apply(localnet, ontoManual, brEx, activeBackup)
		Expect(ovsdbCol("Port", "bond1", "bond_mode")).To(Equal("active-backup"))
		Expect(state.Verify(desired(localnet, ontoManual, brEx, activeBackup), current())).To(BeEmpty())
		Expect(tx.Rollback(ctx)).To(Succeed())
		Eventually(func() []string { return state.Verify(desired(localnet, ontoManual, brEx, bond), current()) }, "20s", "250ms").Should(BeEmpty())
		Expect(ovsdbCol("Port", "bond1", "bond_mode")).To(Equal("balance-slb"))
		Expect(strings.Fields(run("ovs-vsctl", "list-ifaces", "br1"))).To(ConsistOf("eth4", "eth5"))

		// The bond's policy deleted: its bridge, port and NICs' profiles go.
		Expect(apply(localnet, ontoManual, brEx).Commit(ctx)).To(Succeed())
		Eventually(bridges, "10s", "200ms").Should(ConsistOf("br-manual", "br-ex", "ovs-br1"))
		Expect(upper()).NotTo(ContainElement(ContainSubstring("eth4")))
		Expect(externalID(ovsdb.BridgeMappingsKey)).NotTo(ContainSubstring("provider-network"))
	})

	It("rolls back the bridges and the mappings together when a probe fails after the apply", func() {
		// The mapping policy deleted, a bridge and a mapping added.
		tx := apply(localnet, brEx, `
interfaces:
- {name: ovs-br2, type: ovs-bridge, bridge: {options: {datapath: netdev}, port: [{name: ovs-br2}]}}
- {name: ovs-br2, type: ovs-interface, ipv4: {enabled: true, address: [{ip: 203.0.113.1, prefix-length: 24}]}}
ovn: {bridge-mappings: [{localnet: localnet3, bridge: ovs-br2}]}
`)
		Expect(bridges()).To(ContainElement("ovs-br2"))
		Expect(externalID(ovsdb.BridgeMappingsKey)).To(Equal("localnet2:ovs-br1,localnet3:ovs-br2,physnet:br-manual"))
		Expect(tx.Rollback(ctx)).To(Succeed())
		Expect(externalID(ovsdb.BridgeMappingsKey)).To(Equal("localnet2:ovs-br1,physnet:br-manual,tenant:br-manual"))
		Expect(externalID(ovsdb.OwnedMappingsKey)).To(Equal("localnet2:ovs-br1,tenant:br-manual"))
		Eventually(bridges, "10s", "200ms").Should(ConsistOf("br-manual", "br-ex", "ovs-br1"))
		// NetworkManager activates the restored profiles again after its rollback.
		Eventually(func() []string { return state.Verify(desired(localnet, ontoManual, brEx), current()) }, "20s", "250ms").Should(BeEmpty())
	})

	It("rolls back a bridge that cannot come up, writing no mapping", func() {
		_, err := engine.Apply(ctx, desired(localnet, ontoManual, brEx, `
interfaces:
- {name: ovs-br3, type: ovs-bridge, bridge: {options: {datapath: netdev}, port: [{name: nosuch0}]}}
ovn: {bridge-mappings: [{localnet: localnet4, bridge: ovs-br3}]}
`))
		var applyErr *backend.ApplyError
		Expect(errors.As(err, &applyErr)).To(BeTrue(), "%v", err)
		Expect(applyErr.RollbackErr).NotTo(HaveOccurred())
		Expect(applyErr.Reason).To(ContainSubstring("nosuch0"))
		Expect(externalID(ovsdb.BridgeMappingsKey)).To(Equal("localnet2:ovs-br1,physnet:br-manual,tenant:br-manual"))
		Eventually(bridges, "10s", "200ms").Should(ConsistOf("br-manual", "br-ex", "ovs-br1"))
	})

	It("boots on the persistent configuration: no bridge or mapping of nmoverlay's until it applies again", func() {
		nm.Close()
		Expect(n.reboot(ctx)).To(Succeed())
		connect()
		// nm-overlay setup removed the mappings before NetworkManager started, and
		// NetworkManager removed the bridges whose profiles went with the tmpfs layer.
		Expect(externalID(ovsdb.BridgeMappingsKey)).To(Equal("physnet:br-manual"))
		Expect(externalID(ovsdb.OwnedMappingsKey)).To(BeEmpty())
		Eventually(bridges, "20s", "250ms").Should(ConsistOf("br-manual"))

		Expect(apply(localnet, ontoManual, brEx).Commit(ctx)).To(Succeed())
		Expect(bridges()).To(ConsistOf("br-manual", "br-ex", "ovs-br1"))
		Expect(externalID(ovsdb.BridgeMappingsKey)).To(Equal("localnet2:ovs-br1,physnet:br-manual,tenant:br-manual"))
		Expect(state.Verify(desired(localnet, ontoManual, brEx), current())).To(BeEmpty())
	})

	It("leaves nothing of its own once every policy is deleted", func() {
		Expect(apply().Commit(ctx)).To(Succeed())
		Eventually(bridges, "10s", "200ms").Should(ConsistOf("br-manual"))
		Expect(externalID(ovsdb.BridgeMappingsKey)).To(Equal("physnet:br-manual"))
		Expect(externalID(ovsdb.OwnedMappingsKey)).To(BeEmpty())
		Expect(upper()).To(BeEmpty())
		Expect(run("ip", "-4", "-o", "addr", "show", "eth1")).To(ContainSubstring("192.0.2.20/24"))
	})
})
