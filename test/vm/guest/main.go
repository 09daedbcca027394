// Command guest runs the VM tier's scenarios inside the qemu guest against its real
// NetworkManager, printing "PASS name" or "FAIL name: reason" per scenario.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/test/vm/scenarios"
)

// The host asks for snapshots with recordMark in the share, and takes them from recordDir.
const (
	recordMark = "/mnt/share/record"
	recordDir  = "/mnt/share/snapshots"
)

// suiteFile names the scenarios the host asks this guest to run (scenarios.Suites).
const suiteFile = "/mnt/share/suite"

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 11*time.Minute)
	defer cancel()
	// NetworkManager is started by systemd; wait until it is up and settled.
	_ = exec.CommandContext(ctx, "nm-online", "-s", "-q", "-t", "60").Run()
	nics, err := scenarios.FindNICs()
	if err != nil {
		fmt.Println("SETUP FAIL:", err)
		os.Exit(1)
	}
	nm, err := networkmanager.Connect(ctx, "")
	if err != nil {
		fmt.Println("SETUP FAIL:", err)
		os.Exit(1)
	}
	env := &scenarios.Env{NM: nm, NICs: nics}
	if _, err := os.Stat(recordMark); err == nil {
		env.Record = recordDir
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	version, _ := nm.Version()
	fmt.Printf("SETUP kernel %s NetworkManager %s NICs %+v\n", kernel[:len(kernel)-1], version, nics)
	suite, _ := os.ReadFile(suiteFile)
	run, ok := scenarios.Suites[string(suite)]
	if !ok {
		fmt.Printf("SETUP FAIL: no suite %q\n", suite)
		os.Exit(1)
	}
	failed := 0
	for _, s := range run {
		start := time.Now()
		env.Scenario = s.Name
		if err := s.Run(ctx, env); err != nil {
			failed++
			fmt.Printf("FAIL %s: %v\n", s.Name, err)
			// What NetworkManager and the LAN's DHCP server said, for the host's log.
			journal, _ := exec.Command("sh", "-c", "journalctl -b -u NetworkManager --no-pager | grep -v dispatcher | tail -n 80").CombinedOutput()
			dhcp, _ := exec.Command("sh", "-c", "grep -E 'DHCP[A-Z]+|SOLICIT|ADVERTISE|REPLY' /run/lan-dnsmasq.log | tail -n 40; ip -d link show").CombinedOutput()
			fmt.Printf("DIAG NetworkManager:\n%s\nDIAG dnsmasq:\n%s\n", journal, dhcp)
			continue
		}
		fmt.Printf("PASS %s (%s)\n", s.Name, time.Since(start).Round(time.Millisecond))
	}
	if failed > 0 {
		os.Exit(1)
	}
}
