//go:build node

package node_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/kit"
	"github.com/nmoverlay/nmoverlay/test/published"
)

// IPsec through the engine on NetworkManager 1.42, with NetworkManager's own VPN
// machinery: it finds the libreswan plugin by its plugin file, starts the plugin's
// program, asks it for secrets, connects it and runs its VPN connection over the device
// of the default route. Debian packages no NetworkManager-libreswan, so the program is
// test/fakevpn, which speaks the plugin's D-Bus interface and builds no tunnel: what is
// tested is the engine's part (the profile, its activation on no device, the wait for the
// VPN connection, the read-back, the rollback of a VPN profile, which NetworkManager's
// checkpoints do not cover, and its removal), not IPsec.
var _ = Describe("IPsec through the engine and NetworkManager's VPN plugin machinery", Ordered, func() {
	var (
		ctx     = context.Background()
		n       *overlayNode
		nm      *networkmanager.Client
		engine  networkmanager.Backend
		log     string
		example string
	)
	apply := func(doc string) error {
		tx, err := engine.Apply(ctx, mustParse(doc))
		if err != nil {
			return err
		}
		return tx.Commit(ctx)
	}
	// calls are the plugin's log lines, each a call NetworkManager made.
	calls := func() []string {
		b, _ := os.ReadFile(log)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	// vpn is the IPsec interface the node runs, read back by the engine.
	vpn := func() (state.Interface, bool) {
		cur, err := nm.Show(ctx)
		Expect(err).NotTo(HaveOccurred())
		for _, it := range cur.Interfaces {
			if it.Name == "hosta_conn" {
				return it, true
			}
		}
		return state.Interface{}, false
	}
	profileData := func() string {
		out, err := n.Run(ctx, "nmcli", "-g", "vpn.data", "connection", "show", "hosta_conn")
		Expect(err).NotTo(HaveOccurred(), out)
		return out
	}

	BeforeAll(func() {
		plugin, err := kit.Binary("test/fakevpn")
		Expect(err).NotTo(HaveOccurred())
		n, err = newOverlayNode("ipsec", helper, nil)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(n.close)
		// NetworkManager reads plugin files from /etc/NetworkManager/VPN too (the node's is
		// the test dir's etc/), and runs program= with its own environment: a wrapper gives
		// the plugin its log.
		log = filepath.Join(n.Dir, "fakevpn.log")
		wrapper := filepath.Join(n.Dir, "nm-libreswan-service")
		Expect(os.WriteFile(wrapper, []byte("#!/bin/sh\nFAKEVPN_LOG="+log+" exec "+plugin+" \"$@\"\n"), 0o755)).To(Succeed())
		vpnDir := filepath.Join(n.Dir, "etc/VPN")
		Expect(os.MkdirAll(vpnDir, 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(vpnDir, "nm-libreswan-service.name"), []byte("[VPN Connection]\nname=libreswan\n"+
			"service=org.freedesktop.NetworkManager.libreswan\nprogram="+wrapper+"\nsupports-multiple-connections=true\n"), 0o644)).To(Succeed())
		nm, engine = n.engineOn(ctx)
		nm.VPNPluginDir = vpnDir
		example, err = published.Nmstate("ipsec_psk.yaml")
		Expect(err).NotTo(HaveOccurred())
	})
	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Println(n.NMLog())
			b, _ := os.ReadFile(log)
			GinkgoWriter.Println(string(b))
		}
	})

	It("finds the plugin, as NetworkManager does, and lists it among the node's capabilities", func() {
		caps, err := nm.Capabilities()
		Expect(err).NotTo(HaveOccurred())
		Expect(caps.Names()).To(ContainElement(string(state.CapabilityLibreswan)))
		_, needs, err := state.ParseNeeds([]byte(example))
		Expect(err).NotTo(HaveOccurred())
		Expect(caps.Lacks(needs)).To(BeEmpty())
	})

	It("activates nmstate's ipsec_psk example on no device, waits for its VPN connection, and reads it back without the psk", func() {
		Expect(apply(example)).To(Succeed())
		it, ok := vpn()
		Expect(ok).To(BeTrue())
		Expect(it.Type).To(Equal(state.IPsec))
		Expect(it.State).To(Equal(state.Up))
		l := state.SectionOf[*state.LibreswanConfig](it)
		Expect(l).NotTo(BeNil())
		Expect(l.Right).To(Equal("192.0.2.252"))
		Expect(string(l.PSK)).To(BeEmpty(), "the psk is never read back")
		Expect(calls()).To(ContainElement("connect right=192.0.2.252 psk=set"), "the plugin was given the psk")
		Expect(profileData()).To(ContainSubstring("right = 192.0.2.252"))
		upper, err := n.Run(ctx, "sh", "-c", "grep -l 'service-type=org.freedesktop.NetworkManager.libreswan' "+n.layout.Upper()+"/*.nmconnection")
		Expect(err).NotTo(HaveOccurred(), "the VPN profile is in the tmpfs layer")
		Expect(upper).NotTo(BeEmpty())
	})

	It("applies the same state again without a new connection", func() {
		before := len(calls())
		Expect(apply(example)).To(Succeed())
		Expect(calls()).To(HaveLen(before))
	})

	It("rolls back a change the plugin fails, and puts the running VPN back as it was, psk included", func() {
		before := len(calls())
		err := apply(strings.Replace(example, "right: 192.0.2.252", "right: 192.0.2.66", 1)) // fakevpn fails this gateway
		Expect(err).To(HaveOccurred())
		GinkgoWriter.Println("apply:", err)
		Expect(err.Error()).To(ContainSubstring("hosta_conn"))
		Expect(profileData()).To(ContainSubstring("right = 192.0.2.252"), "the profile as it was")
		it, ok := vpn()
		Expect(ok).To(BeTrue(), "running again")
		Expect(it.State).To(Equal(state.Up))
		Expect(calls()[before:]).To(ContainElements(
			ContainSubstring("connect right=192.0.2.66"), "connect right=192.0.2.252 psk=set"), "started again with its psk")
	})

	It("activates OpenShift's documented north-south IPsec policies (transport and tunnel), as published but for the remote host's address", func() {
		for _, file := range []string{"nw-ovn-ipsec-north-south-enable-1.yaml", "nw-ovn-ipsec-north-south-enable-2.yaml"} {
			policy, err := published.OpenShift(file)
			Expect(err).NotTo(HaveOccurred())
			// The stand-in plugin reports the gateway it connects to, and resolves no names.
			raw, err := published.DesiredState(strings.Replace(policy, "right: host.example.com", "right: 192.0.2.252", 1))
			Expect(err).NotTo(HaveOccurred())
			before := len(calls())
			Expect(apply(string(raw))).To(Succeed(), file)
			it, ok := vpn()
			Expect(ok).To(BeTrue(), file)
			Expect(it.State).To(Equal(state.Up), file)
			Expect(state.SectionOf[*state.LibreswanConfig](it).LeftCert).To(Equal("left_server"), file)
			Expect(calls()[before:]).To(ContainElement("connect right=192.0.2.252 psk=unset"), file)
		}
		Expect(profileData()).To(ContainSubstring("type = tunnel"))
	})

	It("removes it with its policy", func() {
		Expect(apply("")).To(Succeed())
		_, ok := vpn()
		Expect(ok).To(BeFalse())
		Expect(calls()).To(ContainElement("disconnect"))
		_, err := n.Run(ctx, "nmcli", "connection", "show", "hosta_conn")
		Expect(err).To(HaveOccurred(), "no profile left")
	})
})
