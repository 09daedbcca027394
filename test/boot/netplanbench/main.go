// Command netplanbench is the boot tier's BenchmarkNetplanApply, run inside an nspawn
// machine (systemd, NetworkManager, Debian's netplan.io): the reference state as one
// netplan document through the netplan backend, against plain `netplan apply` until the
// state runs, and against the engine with the same state in nmstate's schema; interleaved,
// from the same clean node each time. It prints each variant's median and its ratio.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/nmoverlay/nmoverlay/internal/backend"
	"github.com/nmoverlay/nmoverlay/internal/netplan"
	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/paths"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/kit"
)

func main() {
	runs := flag.Int("runs", 5, "runs of each variant")
	flag.Parse()
	if err := run(*runs); err != nil {
		fmt.Fprintln(os.Stderr, "netplanbench:", err)
		os.Exit(1)
	}
}

func run(runs int) error {
	ctx := context.Background()
	_ = exec.Command("nm-online", "-s", "-q", "-t", "30").Run()
	nm, err := networkmanager.Connect(ctx, "")
	if err != nil {
		return err
	}
	defer nm.Close()
	doc := kit.ReferenceNetplan()
	np := &netplan.Backend{NM: nm, Host: netplan.NewHost("/", paths.DefaultLayout().NetplanScratch())}
	parsed, err := np.Parse([]byte(doc))
	if err != nil {
		return err
	}
	desired, _, err := np.Merge([]backend.Parsed{{Policy: "reference", State: parsed}})
	if err != nil {
		return err
	}
	cfg, err := netplan.ConfigOf(desired)
	if err != nil {
		return err
	}
	expected := netplan.Expected(cfg) // also the engine's desired state: nmstate's schema
	diffs := func() []string {
		s, err := nm.Show(ctx)
		if err != nil {
			return []string{err.Error()}
		}
		return state.Verify(expected, s)
	}
	variants := []struct {
		name string
		run  func() error
	}{
		{"netplan backend (one checkpoint)", func() error {
			if err := np.Check(ctx, "reference", []byte(doc)); err != nil {
				return err
			}
			tx, err := np.Apply(ctx, desired)
			if err != nil {
				return err
			}
			return tx.Commit(ctx)
		}},
		{"netplan apply, until the state runs", func() error {
			if err := os.WriteFile("/etc/netplan/90-bench.yaml", []byte(doc), 0o600); err != nil {
				return err
			}
			if out, err := exec.CommandContext(ctx, "netplan", "apply").CombinedOutput(); err != nil {
				return fmt.Errorf("netplan apply: %w: %s", err, out)
			}
			deadline := time.Now().Add(60 * time.Second)
			for len(diffs()) > 0 {
				if time.Now().After(deadline) {
					return fmt.Errorf("netplan apply: not running after 60 s: %s", strings.Join(diffs(), "; "))
				}
				time.Sleep(20 * time.Millisecond)
			}
			return nil
		}},
		{"engine (nmstate's schema)", func() error {
			tx, err := nm.Apply(ctx, expected, networkmanager.ApplyOptions{})
			if err != nil {
				return err
			}
			return tx.Commit(ctx)
		}},
	}
	times := make([][]time.Duration, len(variants))
	for r := 0; r < runs; r++ {
		for v, variant := range variants {
			if out, err := exec.CommandContext(ctx, "sh", "-c", reset).CombinedOutput(); err != nil {
				return fmt.Errorf("reset: %w: %s", err, out)
			}
			time.Sleep(300 * time.Millisecond) // let NetworkManager settle the devices
			start := time.Now()
			if err := variant.run(); err != nil {
				return fmt.Errorf("%s: %w", variant.name, err)
			}
			times[v] = append(times[v], time.Since(start))
			if d := diffs(); len(d) > 0 {
				return errors.New(variant.name + ": the reference state does not run: " + strings.Join(d, "; "))
			}
		}
	}
	peer := kit.Median(times[1])
	fmt.Printf("the reference state as one netplan document, systemd and NetworkManager in an nspawn machine, median of %d:\n", runs)
	for v, variant := range variants {
		md := kit.Median(times[v])
		fmt.Printf("  %-38s %8v  %.2fx netplan apply  %v\n", variant.name, md.Round(time.Millisecond), float64(md)/float64(peer), times[v])
	}
	fmt.Printf("netplan backend / engine: %.2fx\n", float64(kit.Median(times[0]))/float64(kit.Median(times[2])))
	return nil
}

// reset takes the node back to before a run: no profile but the loopback's, no netplan
// file, no bridge, no address; NetworkManager running (netplan apply stops and starts it).
const reset = `
systemctl is-active -q NetworkManager || systemctl start NetworkManager
nm-online -s -q -t 30 || true
rm -f /etc/netplan/90-bench.yaml /run/netplan/*.yaml
/lib/netplan/generate
for u in $(nmcli -g UUID,TYPE con show | grep -v ':loopback$' | cut -d: -f1); do nmcli con delete "$u" >/dev/null; done
nmcli con reload
ip link del br0 2>/dev/null || true
for i in 1 2 3 4 5; do ip addr flush dev eth$i; done`
