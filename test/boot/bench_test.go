//go:build boot

package boot_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/nmoverlay/nmoverlay/overlay"
	"github.com/nmoverlay/nmoverlay/reconciler/netplan"
	"github.com/nmoverlay/nmoverlay/reconciler/networkmanager"
	"github.com/nmoverlay/nmoverlay/reconciler/node"
	"github.com/nmoverlay/nmoverlay/reconciler/state"
	"github.com/nmoverlay/nmoverlay/test/kit"
	"github.com/nmoverlay/nmoverlay/test/nspawn"
)

// BenchmarkBootToNetworkManager measures what the helper costs a boot: the time from
// systemd's start in the container to NetworkManager.service active, on the same root
// filesystem with the MachineConfig and helper versus without (the peer), boots interleaved
// in one run. Run with -benchtime 1x; NMOVERLAY_BENCH_BOOTS sets the boots per side.
func BenchmarkBootToNetworkManager(b *testing.B) {
	boots := 15
	if v, err := strconv.Atoi(os.Getenv("NMOVERLAY_BENCH_BOOTS")); err == nil && v > 0 {
		boots = v
	}
	RegisterFailHandler(func(msg string, _ ...int) { b.Fatal(msg) })
	setup()
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		plain, with := benchMachine(b, "bench-plain", false), benchMachine(b, "bench-mc", true)
		var tPlain, tWith, tHelper []time.Duration
		for j := 0; j < boots; j++ {
			d, _ := bootToNM(b, ctx, plain, false)
			tPlain = append(tPlain, d)
			d, h := bootToNM(b, ctx, with, true)
			tWith = append(tWith, d)
			tHelper = append(tHelper, h)
		}
		mp, mw := kit.Median(tPlain), kit.Median(tWith)
		b.ReportMetric(float64(mw.Microseconds())/1000, "ms-with-helper")
		b.ReportMetric(float64(mp.Microseconds())/1000, "ms-without")
		b.ReportMetric(float64(mw)/float64(mp), "ratio")
		fmt.Printf("boot to NetworkManager active, median of %d boots: with nmoverlay %v, without %v, overhead %v, ratio %.2fx\n",
			boots, mw.Round(time.Millisecond), mp.Round(time.Millisecond), (mw - mp).Round(time.Millisecond), float64(mw)/float64(mp))
		fmt.Printf("nm-overlay setup itself (nm-overlay.service start to active), median: %v\n", kit.Median(tHelper).Round(100*time.Microsecond))
		b.ReportMetric(float64(kit.Median(tHelper).Microseconds())/1000, "ms-helper-run")
		fmt.Printf("  with:    %v\n  without: %v\n", tWith, tPlain)
	}
	if fi, err := os.Stat(helper); err == nil {
		fmt.Printf("nm-overlay binary: %d bytes (%.1f MiB, stripped, static)\n", fi.Size(), float64(fi.Size())/(1<<20))
		b.ReportMetric(float64(fi.Size()), "helper-bytes")
	}
}

func benchMachine(b *testing.B, name string, withMC bool) *nspawn.Machine {
	m, err := nspawn.New(baseRootfs, name)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(m.Close)
	installNodeBasics(m)
	if withMC {
		applyMachineConfig(m, true)
	}
	return m
}

// bootToNM boots m and returns the time from systemd's start to NetworkManager active and,
// with helper, how long nm-overlay.service took from start to active.
func bootToNM(b *testing.B, ctx context.Context, m *nspawn.Machine, helper bool) (toNM, helperRun time.Duration) {
	if err := m.Boot(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := m.Poweroff(ctx); err != nil {
			b.Fatal(err)
		}
	}()
	start, err1 := m.Exec(ctx, "systemctl", "show", "-P", "UserspaceTimestampMonotonic")
	ready, err2 := m.Exec(ctx, "systemctl", "show", "-P", "ActiveEnterTimestampMonotonic", "NetworkManager.service")
	if err1 != nil || err2 != nil {
		b.Fatal(err1, err2)
	}
	s, _ := strconv.ParseInt(trim(start), 10, 64)
	r, _ := strconv.ParseInt(trim(ready), 10, 64)
	if s == 0 || r <= s {
		b.Fatalf("bad timestamps: userspace %q, NetworkManager active %q", start, ready)
	}
	if helper {
		hs, _ := m.Exec(ctx, "systemctl", "show", "-P", "InactiveExitTimestampMonotonic", "nm-overlay.service")
		he, _ := m.Exec(ctx, "systemctl", "show", "-P", "ActiveEnterTimestampMonotonic", "nm-overlay.service")
		a, _ := strconv.ParseInt(trim(hs), 10, 64)
		z, _ := strconv.ParseInt(trim(he), 10, 64)
		if a == 0 || z < a {
			b.Fatalf("nm-overlay.service did not run: %q %q", hs, he)
		}
		helperRun = time.Duration(z-a) * time.Microsecond
	}
	return time.Duration(r-s) * time.Microsecond, helperRun
}

// benchNICs are the reference state's five NICs, veths made before NetworkManager starts.
const benchNICs = `[Unit]
Description=the reference state's NICs
DefaultDependencies=no
Before=NetworkManager.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'for i in 1 2 3 4 5; do ip link add eth$i type veth peer name eth$${i}p && ip link set eth$${i}p up; done'
`

// BenchmarkNetplanApply: the reference state (a bridge with two ports, IPv4 and IPv6 on
// four interfaces, ten routes) as one netplan document, on a machine booted by systemd with
// NetworkManager and Debian's netplan.io: through the netplan backend (one checkpoint,
// the changed profiles activated), against plain `netplan apply` (which stops and starts
// NetworkManager) until the state runs, and against the engine with the same state in
// nmstate's schema; interleaved, from the same clean node each time. Run with -benchtime 1x.
func BenchmarkNetplanApply(b *testing.B) {
	RegisterFailHandler(func(msg string, _ ...int) { b.Fatal(msg) })
	setup()
	ctx := context.Background()
	m, err := nspawn.New(baseRootfs, "bench-netplan")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(m.Close)
	writeFile(m, "/etc/systemd/system/bench-nics.service", benchNICs, 0o644)
	Expect(os.MkdirAll(filepath.Join(m.Root, "/etc/systemd/system/NetworkManager.service.wants"), 0o755)).To(Succeed())
	Expect(os.Symlink("/etc/systemd/system/bench-nics.service",
		filepath.Join(m.Root, "/etc/systemd/system/NetworkManager.service.wants/bench-nics.service"))).To(Succeed())
	Expect(m.Boot(ctx)).To(Succeed())
	defer func() { _ = m.Poweroff(ctx) }()
	_, _ = m.Exec(ctx, "nm-online", "-s", "-q", "-t", "30")
	nm, err := networkmanager.Connect(ctx, "unix:path="+m.PathInside("/run/dbus/system_bus_socket"))
	Expect(err).NotTo(HaveOccurred())
	defer nm.Close()

	doc := benchNetplanDoc()
	np := &netplan.Backend{NM: nm, Host: netplan.Host{Root: m.PathInside("/"), Scratch: overlay.DefaultLayout().NetplanScratch(),
		Run: func(ctx context.Context, args ...string) ([]byte, error) {
			return m.Command(ctx, args[0], args[1:]...).CombinedOutput()
		}}}
	parsed, err := np.Parse([]byte(doc))
	Expect(err).NotTo(HaveOccurred())
	desired, _, err := np.Merge([]node.Parsed{{Policy: "reference", State: parsed}})
	Expect(err).NotTo(HaveOccurred())
	cfg, err := netplan.ConfigOf(desired)
	Expect(err).NotTo(HaveOccurred())
	expected := netplan.Expected(cfg)
	// The same state in nmstate's schema: what netplan's document says, as the engine takes it.
	engineState := expected
	running := func() bool {
		s, err := nm.Show(ctx)
		return err == nil && len(state.Verify(expected, s)) == 0
	}
	reset := func() {
		_, err := m.Exec(ctx, "sh", "-c", `
systemctl is-active -q NetworkManager || systemctl start NetworkManager
rm -f /etc/netplan/90-bench.yaml /run/netplan/*.yaml
/lib/netplan/generate
for u in $(nmcli -g UUID,TYPE con show | grep -v ':loopback$' | cut -d: -f1); do nmcli con delete "$u" >/dev/null; done
nmcli con reload
ip link del br0 2>/dev/null || true
for i in 1 2 3 4 5; do ip addr flush dev eth$i; done`)
		Expect(err).NotTo(HaveOccurred())
		time.Sleep(300 * time.Millisecond) // let NetworkManager settle the devices
	}
	variants := []struct {
		name string
		run  func()
	}{
		{"netplan backend (one checkpoint)", func() {
			Expect(np.Check(ctx, "reference", []byte(doc))).To(Succeed())
			tx, err := np.Apply(ctx, desired)
			Expect(err).NotTo(HaveOccurred())
			Expect(tx.Commit(ctx)).To(Succeed())
		}},
		{"netplan apply, until the state runs", func() {
			writeFile(m, "/etc/netplan/90-bench.yaml", doc, 0o600)
			out, err := m.Exec(ctx, "netplan", "apply")
			Expect(err).NotTo(HaveOccurred(), out)
			Eventually(running, "60s", "20ms").Should(BeTrue())
		}},
		{"engine (nmstate's schema)", func() {
			tx, err := nm.Apply(ctx, engineState, networkmanager.ApplyOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(tx.Commit(ctx)).To(Succeed())
		}},
	}
	runs := 5
	times := make([][]time.Duration, len(variants))
	for i := 0; i < b.N; i++ {
		for r := 0; r < runs; r++ {
			for v, variant := range variants {
				reset()
				start := time.Now()
				variant.run()
				times[v] = append(times[v], time.Since(start))
				Expect(running()).To(BeTrue(), "%s: the reference state runs", variant.name)
			}
		}
	}
	peer := kit.Median(times[1])
	fmt.Printf("the reference state as netplan's document, systemd and NetworkManager in an nspawn machine, median of %d:\n", runs)
	for v, variant := range variants {
		md := kit.Median(times[v])
		fmt.Printf("  %-38s %8v  %.2fx netplan apply\n", variant.name, md.Round(time.Millisecond), float64(md)/float64(peer))
		b.ReportMetric(float64(md.Microseconds())/1000, fmt.Sprintf("ms-variant%d", v))
	}
	b.ReportMetric(float64(kit.Median(times[0]))/float64(peer), "backend/netplan-apply")
	b.ReportMetric(float64(kit.Median(times[0]))/float64(kit.Median(times[2])), "backend/engine")
}

// benchNetplanDoc is the reference state as one netplan document.
func benchNetplanDoc() string {
	var routes strings.Builder
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&routes, "        - {to: 172.16.%d.0/24, via: 10.0.3.254}\n", i)
	}
	return `network:
  version: 2
  renderer: NetworkManager
  ethernets:
    eth1: {}
    eth2: {}
    eth3:
      addresses: [10.0.3.1/24, "fd00:3::1/64"]
      routes:
` + routes.String() + `    eth4: {addresses: [10.0.4.1/24, "fd00:4::1/64"]}
    eth5: {addresses: [10.0.5.1/24, "fd00:5::1/64"]}
  bridges:
    br0:
      interfaces: [eth1, eth2]
      parameters: {stp: false}
      addresses: [10.0.0.1/24, "fd00:0::1/64"]
`
}
