//go:build boot

package boot_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"

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
// NetworkManager and Debian's netplan.io: through the netplan backend against plain
// `netplan apply` and against the engine (test/boot/netplanbench, run inside the machine:
// NetworkManager authorizes only callers in its own PID namespace). Run with -benchtime 1x.
func BenchmarkNetplanApply(b *testing.B) {
	RegisterFailHandler(func(msg string, _ ...int) { b.Fatal(msg) })
	setup()
	ctx := context.Background()
	bench, err := kit.Binary("test/boot/netplanbench")
	Expect(err).NotTo(HaveOccurred())
	m, err := nspawn.New(baseRootfs, "bench-netplan")
	Expect(err).NotTo(HaveOccurred())
	b.Cleanup(m.Close)
	m.WritableSys = true
	writeFile(m, "/etc/systemd/system/bench-nics.service", benchNICs, 0o644)
	Expect(os.MkdirAll(filepath.Join(m.Root, "/etc/systemd/system/NetworkManager.service.wants"), 0o755)).To(Succeed())
	Expect(os.Symlink("/etc/systemd/system/bench-nics.service",
		filepath.Join(m.Root, "/etc/systemd/system/NetworkManager.service.wants/bench-nics.service"))).To(Succeed())
	bin, err := os.ReadFile(bench)
	Expect(err).NotTo(HaveOccurred())
	writeFile(m, "/usr/local/bin/netplanbench", string(bin), 0o755)
	Expect(m.Boot(ctx)).To(Succeed())
	defer func() { _ = m.Poweroff(ctx) }()
	for i := 0; i < b.N; i++ {
		out, err := m.Exec(ctx, "/usr/local/bin/netplanbench", "-runs", "5")
		Expect(err).NotTo(HaveOccurred(), out)
		fmt.Print(out)
	}
}
