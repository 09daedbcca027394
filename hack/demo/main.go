// Command demo walks through nmoverlay on a real systemd node (systemd-nspawn on a Debian
// root filesystem): render the MachineConfig, apply it as MCO would, boot, change the
// network on day 2, reboot, and show that the node came back on its persistent profiles.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nmoverlay/nmoverlay/machineconfigs"
	"github.com/nmoverlay/nmoverlay/overlay"
	"github.com/nmoverlay/nmoverlay/test/nspawn"
)

const persistentProfile = `[connection]
id=uplink
uuid=0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0
type=ethernet
interface-name=eth1

[ipv4]
method=manual
address1=192.0.2.10/24

[ipv6]
method=disabled
`

const nics = `[Unit]
Description=demo NICs (stand-ins for the node's hardware)
DefaultDependencies=no
Before=NetworkManager.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/sbin/ip link add eth1 type veth peer name eth1p
ExecStart=/usr/sbin/ip link set eth1p up
ExecStart=/usr/sbin/ip link add eth2 type veth peer name eth2p
ExecStart=/usr/sbin/ip link set eth2p up
`

func main() {
	helper := flag.String("helper", "bin/nm-overlay", "nm-overlay binary to install on the node")
	flag.Parse()
	if err := run(context.Background(), os.Getenv("NMOVERLAY_ROOTFS"), *helper); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) { fmt.Printf("\n\033[1m==> "+format+"\033[0m\n", args...) }

func run(ctx context.Context, rootfs, helper string) error {
	if rootfs == "" {
		return fmt.Errorf("NMOVERLAY_ROOTFS is unset (hack/rootfs.sh prints it)")
	}
	opts := machineconfigs.Options{Pools: []string{"worker"}}
	step("render the MachineConfig for the worker pool (Ignition 3.2.0)")
	mcs, err := machineconfigs.Render(opts)
	if err != nil {
		return err
	}
	yaml, err := machineconfigs.Marshal(mcs)
	if err != nil {
		return err
	}
	fmt.Printf("%d bytes of YAML for `oc apply -f -`; it writes:\n", len(yaml))
	for _, f := range overlay.DefaultLayout().MachineConfigFiles() {
		fmt.Println("  ", f)
	}

	node, err := nspawn.New(rootfs, "demo-node")
	if err != nil {
		return err
	}
	defer node.Close()
	write := func(path, content string, mode os.FileMode) error {
		p := filepath.Join(node.Root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, []byte(content), mode)
	}
	step("a Debian node with one persistent profile (what MCO owns) and two NICs")
	if err := write(filepath.Join(overlay.NMDefaultKeyfile, "uplink.nmconnection"), persistentProfile, 0o600); err != nil {
		return err
	}
	if err := write("/etc/systemd/system/demo-nics.service", nics, 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(node.Root, "/etc/systemd/system/NetworkManager.service.wants"), 0o755); err != nil {
		return err
	}
	if err := os.Symlink("/etc/systemd/system/demo-nics.service", filepath.Join(node.Root, "/etc/systemd/system/NetworkManager.service.wants/demo-nics.service")); err != nil {
		return err
	}
	step("apply the MachineConfig as MCO would, and install nm-overlay as the DaemonSet will")
	if err := machineconfigs.WriteToRoot(node.Root, opts); err != nil {
		return err
	}
	bin, err := os.ReadFile(helper)
	if err != nil {
		return fmt.Errorf("%w (make build)", err)
	}
	if err := write(overlay.HelperBinary, string(bin), 0o755); err != nil {
		return err
	}

	step("boot 1")
	if err := node.Boot(ctx); err != nil {
		return err
	}
	show := func(args ...string) {
		fmt.Printf("$ %s\n", strings.Join(args, " "))
		out, err := node.Exec(ctx, args[0], args[1:]...)
		fmt.Print(out)
		if err != nil {
			fmt.Println("  (", err, ")")
		}
	}
	show("systemctl", "show", "-p", "ActiveState", "-p", "StatusText", overlay.HelperService)
	show("nm-overlay", "verify")
	show("nmcli", "-f", "NAME,DEVICE,FILENAME", "connection", "show")

	step("day 2: change the network through NetworkManager (what the reconciler will do, issues 3-4)")
	show("nmcli", "connection", "add", "type", "ethernet", "ifname", "eth2", "con-name", "day2-eth2",
		"ipv4.method", "manual", "ipv4.addresses", "198.51.100.2/24", "ipv6.method", "disabled")
	show("nmcli", "connection", "modify", "uplink", "ipv4.addresses", "192.0.2.99/24")
	show("nm-overlay", "status")
	show("ls", "/etc/NetworkManager/system-connections")

	step("reboot")
	if err := node.Reboot(ctx); err != nil {
		return err
	}
	show("nmcli", "-f", "NAME,DEVICE,FILENAME", "connection", "show")
	show("nmcli", "-g", "IP4.ADDRESS", "device", "show", "eth1")
	show("nm-overlay", "status")
	fmt.Println("\nThe day-2 profile is gone and the persistent one is back as MCO wrote it.")
	fmt.Println("Not in this demo yet: the control plane and a policy re-applied after the reboot (issues 3-5).")
	return node.Poweroff(ctx)
}
