// Package nmhost runs a test "node": a network namespace and a mount namespace of its own
// (private /run on tmpfs, read-only /sys, /etc/NetworkManager from a test dir) with a real
// NetworkManager on a private D-Bus. Everything host-side under test runs inside it through
// nsenter, with NetworkManager's default paths, so the overlay code runs unmodified.
// A reboot drops both namespaces: /run and every mount vanish, the persistent dir stays.
package nmhost

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
)

// Config written as /etc/NetworkManager/NetworkManager.conf: keeps NetworkManager off the
// machine's own DNS, hostname and default devices.
const nmConf = `[main]
plugins=keyfile
auth-polkit=false
dns=none
rc-manager=unmanaged
hostname-mode=none
no-auto-default=*
systemd-resolved=false

[connectivity]
enabled=false
`

// Node is one test host.
type Node struct {
	Name string
	// Dir holds the node's persistent state: etc/ is /etc/NetworkManager (etc/system-connections
	// is the lower dir), lib/ is /var/lib/NetworkManager.
	Dir string
	// BootSetup runs inside the node at each boot, before anything else (create NICs, tmpfiles).
	BootSetup func(n *Node) error
	// OVS, when set before Boot, gives the node Open vSwitch (ovs.go).
	OVS *OVS

	dbus   *exec.Cmd
	holder *exec.Cmd
	nm     *exec.Cmd
	nmLog  *os.File
	netns  string
}

// New creates the node's dirs and its private system bus. The caller must Close it.
func New(name string) (*Node, error) {
	dir, err := os.MkdirTemp("", "nmhost-"+name+"-")
	if err != nil {
		return nil, err
	}
	n := &Node{Name: name, Dir: dir, netns: fmt.Sprintf("nmhost-%s-%d", name, os.Getpid())}
	for _, d := range []string{"etc/conf.d", "etc/system-connections", "lib", "syscfg", "netplan"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.Chmod(filepath.Join(dir, "etc/system-connections"), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "etc/NetworkManager.conf"), []byte(nmConf), 0o644); err != nil {
		return nil, err
	}
	busConf := `<busconfig><type>system</type><listen>unix:path=` + n.busSocket() + `</listen><auth>EXTERNAL</auth>` +
		`<policy context="default"><allow user="root"/><allow own="*"/><allow send_destination="*" eavesdrop="true"/>` +
		`<allow eavesdrop="true"/></policy></busconfig>`
	if err := os.WriteFile(filepath.Join(dir, "dbus.conf"), []byte(busConf), 0o644); err != nil {
		return nil, err
	}
	n.dbus = exec.Command("dbus-daemon", "--config-file="+filepath.Join(dir, "dbus.conf"), "--nofork", "--nopidfile")
	if err := n.dbus.Start(); err != nil {
		return nil, fmt.Errorf("dbus-daemon: %w", err)
	}
	if err := waitFor(5*time.Second, func() bool { _, err := os.Stat(n.busSocket()); return err == nil }); err != nil {
		n.Close()
		return nil, fmt.Errorf("dbus-daemon did not listen on %s", n.busSocket())
	}
	return n, nil
}

func (n *Node) busSocket() string { return filepath.Join(n.Dir, "bus.sock") }

// BusAddress is the node's DBUS_SYSTEM_BUS_ADDRESS.
func (n *Node) BusAddress() string { return "unix:path=" + n.busSocket() }

// Lower is the host-side path of the node's persistent keyfile dir.
func (n *Node) Lower() string { return filepath.Join(n.Dir, "etc/system-connections") }

// Netplan is the host-side path of the node's /etc/netplan: its persistent netplan
// configuration (the machine's own is never seen inside).
func (n *Node) Netplan() string { return filepath.Join(n.Dir, "netplan") }

// ConfD is the host-side path of the node's /etc/NetworkManager/conf.d.
func (n *Node) ConfD() string { return filepath.Join(n.Dir, "etc/conf.d") }

// Boot creates the node's namespaces and runs BootSetup: the state right after a boot,
// before NetworkManager starts.
func (n *Node) Boot(ctx context.Context) error {
	if out, err := exec.CommandContext(ctx, "ip", "netns", "add", n.netns).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns add: %v: %s", err, out)
	}
	ovsMounts, err := n.ovsMounts()
	if err != nil {
		return err
	}
	script := strings.Join(append(append([]string{
		"set -e",
		"mount -t tmpfs -o mode=0755 noderun /run",
		"mount -o remount,ro /sys",
		"mount --bind " + filepath.Join(n.Dir, "etc") + " /etc/NetworkManager",
		"mount --bind " + filepath.Join(n.Dir, "lib") + " /var/lib/NetworkManager",
		"mount --bind " + filepath.Join(n.Dir, "syscfg") + " /usr/lib/NetworkManager/conf.d",
		"mkdir -p /etc/netplan", "mount --bind " + n.Netplan() + " /etc/netplan",
	}, ovsMounts...),
		"echo ready",
		"exec sleep infinity",
	), "\n")
	n.holder = exec.Command("ip", "netns", "exec", n.netns, "unshare", "-m", "--propagation", "private", "--", "sh", "-c", script)
	stdout, err := n.holder.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	n.holder.Stderr = &stderr
	if err := n.holder.Start(); err != nil {
		return err
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		n.holder.Wait()
		n.holder = nil
		return fmt.Errorf("node namespace did not start: %s", stderr.String())
	}
	if _, err := n.Run(ctx, "ip", "link", "set", "lo", "up"); err != nil {
		return err
	}
	if err := n.startOVS(ctx); err != nil {
		return err
	}
	if n.BootSetup != nil {
		return n.BootSetup(n)
	}
	return nil
}

// Command returns a command that runs inside the node, on the node's bus.
func (n *Node) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	pid := strconv.Itoa(n.holder.Process.Pid)
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"-t", pid, "-m", "-n", "--", name}, args...)...)
	cmd.Env = append(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS="+n.BusAddress(), "PAGER=cat", "LC_ALL=C")
	return cmd
}

// Run runs a command inside the node and returns its stdout; an error carries stderr.
func (n *Node) Run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := n.Command(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// ReadFile reads a file as the node sees it.
func (n *Node) ReadFile(ctx context.Context, path string) (string, error) {
	return n.Run(ctx, "cat", path)
}

// StartNM starts NetworkManager the way NetworkManager.service does with the nmoverlay
// drop-in: the environment file (if present) is handed to it.
func (n *Node) StartNM(ctx context.Context, envFile string) error {
	args := []string{"--debug", "--log-level=INFO",
		"--config=/etc/NetworkManager/NetworkManager.conf", "--config-dir=/etc/NetworkManager/conf.d",
		"--state-file=/var/lib/NetworkManager/NetworkManager.state", "--pid-file=/run/NetworkManager/NM.pid"}
	env := []string{}
	if envFile != "" {
		if content, err := n.ReadFile(ctx, envFile); err == nil {
			for _, l := range strings.Split(content, "\n") {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
					env = append(env, l)
				}
			}
		}
	}
	n.nm = n.Command(context.Background(), "env", append(env, append([]string{n.nmBinary()}, args...)...)...)
	log, err := os.OpenFile(filepath.Join(n.Dir, "NetworkManager.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	n.nmLog = log
	n.nm.Stdout, n.nm.Stderr = log, log
	if err := n.nm.Start(); err != nil {
		return err
	}
	if _, err := n.Run(ctx, "nm-online", "-s", "-q", "-t", "20"); err != nil {
		return fmt.Errorf("NetworkManager did not start: %w (log %s)", err, log.Name())
	}
	return nil
}

// StopNM stops NetworkManager as systemd would (SIGTERM) and waits for it.
func (n *Node) StopNM() {
	if n.nm == nil {
		return
	}
	_ = n.nm.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { n.nm.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = n.nm.Process.Kill()
		<-done
	}
	n.nm = nil
	if n.nmLog != nil {
		n.nmLog.Close()
		n.nmLog = nil
	}
}

// Shutdown stops NetworkManager and drops the namespaces: /run and all mounts are gone.
func (n *Node) Shutdown() {
	n.StopNM()
	n.stopOVS()
	if n.holder != nil {
		_ = n.holder.Process.Kill()
		_ = n.holder.Wait()
		n.holder = nil
	}
	_ = exec.Command("ip", "netns", "del", n.netns).Run()
}

// Close shuts the node down and removes everything it made.
func (n *Node) Close() {
	n.Shutdown()
	if n.dbus != nil && n.dbus.Process != nil {
		_ = n.dbus.Process.Kill()
		_ = n.dbus.Wait()
	}
	if os.Getenv("NMHOST_KEEP") == "" {
		os.RemoveAll(n.Dir)
	}
}

// NMLog returns NetworkManager's log so far, for failure messages.
func (n *Node) NMLog() string {
	b, _ := os.ReadFile(filepath.Join(n.Dir, "NetworkManager.log"))
	return string(b)
}

func waitFor(d time.Duration, ok func() bool) error {
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, d, true, func(context.Context) (bool, error) {
		return ok(), nil
	})
	if err != nil {
		return fmt.Errorf("timed out after %s", d)
	}
	return nil
}

// PathInNode is a host path that reaches path inside the node's mount namespace.
// Sysfs is the node's /sys/class/net, for an engine running outside its namespaces.
func (n *Node) Sysfs() string { return n.PathInNode("/sys/class/net") }

// ConnectNM connects the engine to the node's NetworkManager, reading the node's kernel
// (its sysfs and its network namespace) rather than this process's.
func (n *Node) ConnectNM(ctx context.Context) (*networkmanager.Client, error) {
	nm, err := networkmanager.Connect(ctx, n.BusAddress())
	if err != nil {
		return nil, err
	}
	nm.SysfsRoot, nm.NetNS = n.Sysfs(), n.NetNSPath()
	return nm, nil
}

func (n *Node) PathInNode(path string) string {
	return filepath.Join("/proc", strconv.Itoa(n.holder.Process.Pid), "root", path)
}

// KeyfilePathFromPrintConfig extracts [keyfile] path from `NetworkManager --print-config`
// output; NetworkManager prints nothing for it when its built-in default applies.
func KeyfilePathFromPrintConfig(printed, builtinDefault string) string {
	section := ""
	for _, line := range strings.Split(printed, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			section = line
		} else if section == "[keyfile]" && strings.HasPrefix(line, "path=") {
			return strings.TrimPrefix(line, "path=")
		}
	}
	return builtinDefault
}

// NetNSPath is the node's network namespace, for entering it from the host.
func (n *Node) NetNSPath() string {
	return filepath.Join("/proc", strconv.Itoa(n.holder.Process.Pid), "ns", "net")
}

// PID is a process inside the node's namespaces (for `ip link ... netns PID`).
func (n *Node) PID() int { return n.holder.Process.Pid }

// NMPID is the running NetworkManager's process ID (nsenter and env exec it in place).
func (n *Node) NMPID() int {
	if n.nm == nil || n.nm.Process == nil {
		return 0
	}
	return n.nm.Process.Pid
}
