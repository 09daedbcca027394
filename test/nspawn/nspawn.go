// Package nspawn boots a Debian root filesystem with systemd-nspawn as a test node: real
// systemd as PID 1, real unit ordering, tmpfiles, mount units and reboots. The machine's
// root is an overlay on the shared base root filesystem, so every machine starts from the
// same pristine tree and keeps its own changes across its reboots.
package nspawn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// ExitReboot is systemd-nspawn's exit code when the container asked for a reboot.
const ExitReboot = 133

// Machine is one nspawn test node.
type Machine struct {
	Name string
	// Root is the machine's root filesystem as seen from the host; write into it while
	// the machine is off to install things "offline", as MCO/Ignition would.
	Root string
	// Interfaces are moved from the host into the machine's private network at each boot
	// (--network-interface); BeforeBoot, when set, makes them first (a veth is gone with
	// the machine's network namespace when it stops).
	Interfaces []string
	BeforeBoot func() error
	// Args are more systemd-nspawn options (binds, capabilities).
	Args []string
	// WritableSys leaves /sys writable inside (nspawn's SYSTEMD_NSPAWN_API_VFS_WRITABLE):
	// `netplan apply` asks udev to replay the network devices' events by writing their
	// uevent files.
	WritableSys bool
	// PrivateCgroup gives the machine a cgroup of its own in every hierarchy, so what it
	// makes there (a kubelet's pod cgroups) stays under it and goes with Close.
	PrivateCgroup bool
	dir           string
	cgroups       []string

	cmd     *exec.Cmd
	done    chan struct{}
	exit    int
	console *os.File
	initPID int
}

// New prepares a machine on top of base (a root filesystem that is never modified).
func New(base, name string) (*Machine, error) {
	dir, err := os.MkdirTemp("", "nspawn-"+name+"-")
	if err != nil {
		return nil, err
	}
	m := &Machine{Name: name, dir: dir, Root: filepath.Join(dir, "root")}
	for _, d := range []string{"upper", "work", "root"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	opts := "lowerdir=" + base + ",upperdir=" + filepath.Join(dir, "upper") + ",workdir=" + filepath.Join(dir, "work")
	if err := syscall.Mount("overlay", m.Root, "overlay", 0, opts); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("mounting the machine's root: %w", err)
	}
	return m, nil
}

// Boot starts the machine and waits until systemd finished booting.
func (m *Machine) Boot(ctx context.Context) error {
	if m.cmd != nil {
		return errors.New("already running")
	}
	console, err := os.OpenFile(filepath.Join(m.dir, "console.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(console, "\n===== boot at %s =====\n", time.Now().Format(time.RFC3339Nano))
	m.console = console
	// A private mount namespace with a tmpfs for nspawn's runtime dir: the host's /run is
	// not a tmpfs and no systemd/machined runs on the host.
	network, hideUdev := "--private-network", ""
	for _, ifname := range m.Interfaces {
		network += " --network-interface=" + ifname
		// nspawn waits for udev to initialize a moved interface when /sys is writable (its
		// sign of a udevd); this host runs none, so /sys is read-only in nspawn's namespace.
		hideUdev = "mount -o bind,remount,ro /sys && "
	}
	if m.BeforeBoot != nil {
		if err := m.BeforeBoot(); err != nil {
			return fmt.Errorf("before boot: %w", err)
		}
	}
	join := ""
	if m.PrivateCgroup {
		// A reboot starts from empty cgroups, as a kernel does: what the last boot made in
		// them (a kubelet's pod cgroups) would otherwise look like live containers.
		m.removeCgroups()
		if err := m.makeCgroups(); err != nil {
			return err
		}
		for _, cg := range m.cgroups {
			join += "echo $$ > " + shellQuote(filepath.Join(cg, "cgroup.procs")) + " && "
		}
	}
	extra := ""
	for _, a := range m.Args {
		extra += " " + shellQuote(a)
	}
	env := ""
	if m.WritableSys {
		env = "env SYSTEMD_NSPAWN_API_VFS_WRITABLE=1 "
	}
	script := join + hideUdev + "mkdir -p /run/systemd/nspawn && mount -t tmpfs nspawnrun /run/systemd/nspawn && exec " + env + "systemd-nspawn -D " +
		m.Root + " -b " + network + extra + " --register=no --keep-unit -M " + m.Name + " --console=read-only"
	m.cmd = exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", script)
	m.cmd.Stdout, m.cmd.Stderr = console, console
	if err := m.cmd.Start(); err != nil {
		m.cmd = nil
		return err
	}
	m.done = make(chan struct{})
	go func() {
		_ = m.cmd.Wait()
		m.exit = m.cmd.ProcessState.ExitCode()
		close(m.done)
	}()
	if err := m.waitInit(ctx); err != nil {
		return err
	}
	// "running" or "degraded" both mean the boot transaction finished.
	state, _ := m.Exec(ctx, "systemctl", "is-system-running", "--wait")
	if s := strings.TrimSpace(state); s != "running" && s != "degraded" {
		return fmt.Errorf("boot did not finish: system state %q (console %s)", s, console.Name())
	}
	return nil
}

// waitInit finds the container's PID 1 (systemd, a descendant of nspawn) on the host.
func (m *Machine) waitInit(ctx context.Context) error {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case <-m.done:
			console := m.Console()
			if len(console) > 2000 {
				console = console[len(console)-2000:]
			}
			return false, fmt.Errorf("systemd-nspawn exited with %d before booting (console %s):\n%s", m.exit, m.console.Name(), console)
		default:
		}
		if pid := findDescendant(m.cmd.Process.Pid, "systemd"); pid != 0 {
			// Wait until its D-Bus API answers.
			m.initPID = pid
			if _, err := m.Exec(ctx, "systemctl", "show", "-p", "Version"); err == nil {
				return true, nil
			}
		}
		return false, nil
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("the container's systemd did not come up (console %s)", m.console.Name())
	}
	return err
}

func findDescendant(pid int, comm string) int {
	children, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	for _, f := range strings.Fields(string(children)) {
		child, _ := strconv.Atoi(f)
		c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", child))
		if strings.TrimSpace(string(c)) == comm {
			return child
		}
		if d := findDescendant(child, comm); d != 0 {
			return d
		}
	}
	return 0
}

// PathInside is a host path that reaches path inside the running machine's mount
// namespace (its /run, a tmpfs of its own, included).
func (m *Machine) PathInside(path string) string {
	return filepath.Join("/proc", strconv.Itoa(m.initPID), "root", path)
}

// Command runs a command inside the machine (all its namespaces).
func (m *Machine) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"-t", strconv.Itoa(m.initPID), "-a", "--", name}, args...)...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "PAGER=cat", "SYSTEMD_PAGER=", "LC_ALL=C"}
	return cmd
}

// Exec runs a command inside the machine and returns stdout; an error carries stderr.
func (m *Machine) Exec(ctx context.Context, name string, args ...string) (string, error) {
	cmd := m.Command(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s%s", name, strings.Join(args, " "), err, stderr.String(), stdout.String())
	}
	return stdout.String(), nil
}

// Reboot asks systemd inside to reboot and boots the machine again when nspawn exits 133.
func (m *Machine) Reboot(ctx context.Context) error {
	if err := m.stop(ctx, "reboot", ExitReboot); err != nil {
		return err
	}
	return m.Boot(ctx)
}

// Poweroff shuts the machine down cleanly.
func (m *Machine) Poweroff(ctx context.Context) error { return m.stop(ctx, "poweroff", 0) }

func (m *Machine) stop(ctx context.Context, verb string, wantExit int) error {
	if m.cmd == nil {
		return nil
	}
	_ = m.Command(ctx, "systemctl", "--no-block", verb).Run()
	select {
	case <-m.done:
	case <-time.After(60 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
	m.cmd = nil
	m.console.Close()
	if m.exit != wantExit {
		return fmt.Errorf("systemd-nspawn exited %d on %s, want %d (console %s)", m.exit, verb, wantExit, m.console.Name())
	}
	return nil
}

// Console returns what the machine printed so far.
func (m *Machine) Console() string {
	b, _ := os.ReadFile(filepath.Join(m.dir, "console.log"))
	return string(b)
}

// Close powers the machine off if needed and removes it.
func (m *Machine) Close() {
	if m.cmd != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		_ = m.Poweroff(ctx)
		cancel()
	}
	_ = syscall.Unmount(m.Root, 0)
	m.removeCgroups()
	if os.Getenv("NSPAWN_KEEP") == "" {
		os.RemoveAll(m.dir)
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// cgroupMount is where the host mounts the hierarchy a /proc/self/cgroup line names.
func cgroupMount(controllers string) string {
	switch {
	case controllers == "":
		return "/sys/fs/cgroup/unified"
	case strings.HasPrefix(controllers, "name="):
		return "/sys/fs/cgroup/" + strings.TrimPrefix(controllers, "name=")
	default:
		return "/sys/fs/cgroup/" + controllers
	}
}

// Cgroups are the machine's own cgroups (PrivateCgroup), one below this process's in every
// hierarchy the host mounts, whether they exist now or not.
func (m *Machine) Cgroups() []string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	var dirs []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		parent := filepath.Join(cgroupMount(f[1]), f[2])
		if _, err := os.Stat(filepath.Join(parent, "cgroup.procs")); err != nil {
			continue // not mounted here
		}
		dirs = append(dirs, filepath.Join(parent, fmt.Sprintf("nspawn-%s-%d", m.Name, os.Getpid())))
	}
	return dirs
}

// makeCgroups makes the machine's cgroups. cpuset's must be given its parent's CPUs and
// memory nodes before a process may join it.
func (m *Machine) makeCgroups() error {
	for _, dir := range m.Cgroups() {
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			return fmt.Errorf("cgroup %s: %w", dir, err)
		}
		m.cgroups = append(m.cgroups, dir)
		if strings.HasPrefix(dir, cgroupMount("cpuset")+"/") {
			parent := filepath.Dir(dir)
			for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(parent, file))
				if err == nil {
					err = os.WriteFile(filepath.Join(dir, file), v, 0o644)
				}
				if err != nil {
					return fmt.Errorf("cgroup %s: %s: %w", dir, file, err)
				}
			}
		}
	}
	return nil
}

// removeCgroups removes the machine's cgroups, deepest first (what its kubelet made in
// them), once nothing runs in them.
func (m *Machine) removeCgroups() {
	for _, cg := range m.cgroups {
		var dirs []string
		_ = filepath.WalkDir(cg, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = os.Remove(dirs[i])
		}
	}
	m.cgroups = nil
}
