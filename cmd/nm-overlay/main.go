// Command nm-overlay sets up, verifies, shows and resets NetworkManager's keyfile overlay
// on one host. systemd runs `nm-overlay setup` before NetworkManager at every boot.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/coreos/go-systemd/v22/journal"

	"github.com/nmoverlay/nmoverlay/internal/atomicfile"
	"github.com/nmoverlay/nmoverlay/internal/overlay"
	"github.com/nmoverlay/nmoverlay/internal/paths"
	"github.com/nmoverlay/nmoverlay/internal/version"
)

// Exit codes.
const (
	exitOK       = 0
	exitDegraded = 1 // verification failed, host degraded, or leftovers found
	exitUsage    = 2
)

var usage = `nm-overlay: NetworkManager's keyfile overlay (lower: persistent keyfiles, upper: tmpfs)

Usage: nm-overlay COMMAND [--layout FILE] [-o text|json]

Commands:
  setup      create upper/work on tmpfs, mount the overlay if needed, verify it, and enable
             it for NetworkManager's next start; on failure NetworkManager keeps the
             persistent keyfile dir and the host is marked degraded (run by nm-overlay.service)
  enable     set the overlay up and restart NetworkManager onto it, in a boot that started
             without it (the helper was installed after NetworkManager started, or setup
             failed and was fixed since); nothing when the overlay is in use already (run by
             nm-overlay-enable.service when the helper appears)
  verify     check the overlay and NetworkManager's use of it; exit 1 if anything is wrong
  status     what the tmpfs layer adds, modifies (copy-up) and hides (whiteouts), per profile
  reset      drop every ephemeral change now and make NetworkManager reload its profiles
  uninstall  remove what is left after the MachineConfig was removed (--check: only list it)
  migrate-profiles
             move the persistent profiles a migration from kubernetes-nmstate planned to
             move (the handler writes the plan) out of the keyfile dir into a backup under
             ` + paths.MigratedDir + `/BOOT_ID, before the overlay is mounted on it (run by
             nm-overlay-migrate.service); nothing without a plan
  restore-profiles
             put the profiles a migration moved back into the keyfile dir, byte for byte
             (--from BACKUP; the latest by default), where the overlay is not mounted
  install    copy this binary to --to (the handler DaemonSet's init container: the host's
             /usr/local/bin mounted there), replacing it atomically
  version    print nm-overlay's version, the commit it was built from and Go's release

Exit codes: 0 ok, 1 degraded or failed, 2 usage.
`

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd := args[0]
	if cmd == "version" {
		fmt.Fprintln(stdout, version.String("nm-overlay"))
		return exitOK
	}
	f, ok := parseFlags(cmd, args[1:], stderr)
	if !ok {
		return exitUsage
	}
	l, err := overlay.LoadLayout(f.layoutFile)
	if err != nil {
		fmt.Fprintf(stderr, "nm-overlay: %v\n", err)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out := printer{w: stdout, json: f.output == "json"}

	switch cmd {
	case "setup":
		return setup(ctx, l, out, stderr)
	case "enable":
		return enable(ctx, l, out, stderr)
	case "verify":
		r := overlay.Verify(ctx, l, overlay.VerifyOptions{})
		out.report(r)
		if !r.OK {
			return exitDegraded
		}
	case "status":
		changes, err := overlay.Status(l)
		if err != nil {
			fmt.Fprintf(stderr, "nm-overlay: %v\n", err)
			return exitDegraded
		}
		out.changes(changes)
	case "reset":
		dropped, err := overlay.Reset(ctx, l, overlay.NMConfig{})
		if err != nil {
			fmt.Fprintf(stderr, "nm-overlay: %v\n", err)
			return exitDegraded
		}
		log(journal.PriNotice, fmt.Sprintf("reset: dropped %d ephemeral changes", len(dropped)), nil)
		out.changes(dropped)
	case "migrate-profiles":
		return migrateProfiles(out, stderr)
	case "restore-profiles":
		return restoreProfiles(f.from, out, stderr)
	case "install":
		return install(f.installTo, out, stderr)
	case "uninstall":
		return uninstall(l, f.check, f.keepBinary, out, stderr)
	default:
		fmt.Fprintf(stderr, "nm-overlay: unknown command %q\n\n%s", cmd, usage)
		return exitUsage
	}
	return exitOK
}

// flags are the options after the command; each command uses those it needs.
type flags struct {
	layoutFile, output, installTo, from string
	check, keepBinary                   bool
}

// parseFlags reads the options of cmd, reporting any error on stderr; false is a usage error.
func parseFlags(cmd string, args []string, stderr io.Writer) (flags, bool) {
	var f flags
	fs := flag.NewFlagSet("nm-overlay "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.layoutFile, "layout", paths.LayoutFile, "layout file written by the MachineConfig (defaults apply when missing)")
	fs.StringVar(&f.output, "o", "text", "output format: text or json")
	fs.BoolVar(&f.check, "check", false, "uninstall: only list what is left, exit 1 if anything is")
	fs.BoolVar(&f.keepBinary, "keep-binary", false, "uninstall: keep "+paths.HelperBinary)
	fs.StringVar(&f.from, "from", "", "restore-profiles: the backup to restore (default: the latest)")
	fs.StringVar(&f.installTo, "to", filepath.Dir(paths.HelperBinary), "install: the directory to copy this binary to")
	if err := fs.Parse(args); err != nil {
		return f, false
	}
	if f.output != "text" && f.output != "json" {
		fmt.Fprintf(stderr, "nm-overlay: -o %q: want text or json\n", f.output)
		return f, false
	}
	return f, true
}

// setup runs `nm-overlay setup`: it tells systemd and the journal the outcome, and
// prints the checks.
func setup(ctx context.Context, l paths.Layout, out printer, stderr io.Writer) int {
	r, err := overlay.Setup(ctx, l, overlay.NMConfig{})
	report(r, err)
	out.report(r)
	if err != nil {
		fmt.Fprintf(stderr, "nm-overlay: %v\n", err)
		return exitDegraded
	}
	if !r.OK {
		fmt.Fprintln(stderr, "nm-overlay: the overlay is ready; NetworkManager uses it from its next start (nm-overlay enable restarts it now)")
	}
	return exitOK
}

// enable runs `nm-overlay enable`: setup, then a restart of NetworkManager through systemd.
func enable(ctx context.Context, l paths.Layout, out printer, stderr io.Writer) int {
	action, r, err := overlay.Enable(ctx, l, overlay.NMConfig{}, restartNetworkManager)
	if action == overlay.EnableNothing && err == nil {
		if out.json {
			out.encode(map[string]string{"action": string(action)})
		} else {
			fmt.Fprintln(out.w, "nothing to enable: the keyfile overlay is in use in this boot")
		}
		return exitOK
	}
	if err == nil && !r.OK {
		err = fmt.Errorf("%w: %s", overlay.ErrDegraded, r.Reason())
	}
	if action != overlay.EnableNothing {
		report(r, err)
	}
	out.report(r)
	if err != nil {
		fmt.Fprintf(stderr, "nm-overlay: %v\n", err)
		return exitDegraded
	}
	return exitOK
}

// restartNetworkManager restarts NetworkManager through systemd and waits for the job.
func restartNetworkManager(ctx context.Context) error {
	conn, err := sddbus.NewSystemConnectionContext(ctx)
	if err != nil {
		return fmt.Errorf("connecting to systemd: %w", err)
	}
	defer conn.Close()
	done := make(chan string, 1)
	if _, err := conn.RestartUnitContext(ctx, paths.NMService, "replace", done); err != nil {
		return err
	}
	select {
	case result := <-done:
		if result != "done" {
			return fmt.Errorf("systemd job %s", result)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// install copies this binary into dir, replacing the one there atomically.
func install(dir string, out printer, stderr io.Writer) int {
	self, err := os.Executable()
	if err == nil {
		var b []byte
		if b, err = os.ReadFile(self); err == nil {
			dst := filepath.Join(dir, filepath.Base(paths.HelperBinary))
			if err = atomicfile.Write(dst, b, 0o755); err == nil {
				out.list([]string{dst})
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "nm-overlay: install: %v\n", err)
		return exitDegraded
	}
	return exitOK
}

// uninstall removes what is left after the MachineConfig was removed, or with check only
// lists it.
func uninstall(l paths.Layout, check, keepBinary bool, out printer, stderr io.Writer) int {
	if check {
		left := overlay.Leftovers(l)
		out.list(left)
		if len(left) > 0 {
			return exitDegraded
		}
		return exitOK
	}
	removed, err := overlay.Uninstall(l, keepBinary)
	out.list(removed)
	if err != nil {
		fmt.Fprintf(stderr, "nm-overlay: %v\n", err)
		return exitDegraded
	}
	return exitOK
}

// report tells systemd and the journal how setup went.
func report(r overlay.Report, err error) {
	status := "keyfile overlay verified; NetworkManager will use " + r.Layout.Merged()
	prio := journal.PriInfo
	result := "verified"
	if err != nil {
		status = "degraded: NetworkManager keeps " + r.Layout.Lower + " (" + r.Reason() + ")"
		prio = journal.PriErr
		result = "degraded"
	}
	_, _ = daemon.SdNotify(false, "STATUS="+status)
	log(prio, status, map[string]string{"NMOVERLAY_RESULT": result})
}

// log writes to the journal under systemd (every entry names the version that wrote it:
// NMOVERLAY_VERSION), else to stderr.
//
// Each entry also names its unit (OBJECT_SYSTEMD_UNIT, which `journalctl -u` matches for
// root's entries): journald ties an entry to its unit by reading the sender's cgroup
// from /proc when the entry arrives, and the helper has often exited by then, which
// would leave the verdict out of `journalctl -u nm-overlay.service`.
func log(prio journal.Priority, msg string, fields map[string]string) {
	if os.Getenv("INVOCATION_ID") != "" && journal.Enabled() {
		f := map[string]string{"NMOVERLAY_VERSION": version.Version}
		if cgroup, err := os.ReadFile("/proc/self/cgroup"); err == nil {
			if unit := unitOf(string(cgroup)); unit != "" {
				f["OBJECT_SYSTEMD_UNIT"] = unit
			}
		}
		maps.Copy(f, fields)
		if journal.Send(msg, prio, f) == nil {
			return
		}
	}
	fmt.Fprintln(os.Stderr, "nm-overlay: "+msg)
}

// unitOf is the systemd unit a process runs in, from its /proc/PID/cgroup: the unified
// hierarchy's path ("0::/system.slice/nm-overlay.service") or, on a host on cgroup v1,
// systemd's named one ("1:name=systemd:/system.slice/..."). The unit is the path's last
// service or scope; "" when there is none.
func unitOf(cgroup string) string {
	for line := range strings.Lines(cgroup) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 || !(parts[0] == "0" && parts[1] == "" || parts[1] == "name=systemd") {
			continue
		}
		elems := strings.Split(parts[2], "/")
		for i := len(elems) - 1; i >= 0; i-- {
			if strings.HasSuffix(elems[i], ".service") || strings.HasSuffix(elems[i], ".scope") {
				return elems[i]
			}
		}
	}
	return ""
}

type printer struct {
	w    io.Writer
	json bool
}

func (p printer) encode(v any) {
	enc := json.NewEncoder(p.w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func (p printer) report(r overlay.Report) {
	if p.json {
		p.encode(r)
		return
	}
	tw := tabwriter.NewWriter(p.w, 0, 2, 2, ' ', 0)
	for _, c := range r.Checks {
		mark := "ok"
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", mark, c.Name, c.Detail)
	}
	tw.Flush()
	if r.OK {
		fmt.Fprintln(p.w, "overlay verified")
	} else {
		fmt.Fprintln(p.w, "overlay degraded")
	}
}

func (p printer) changes(cs []overlay.ProfileChange) {
	if p.json {
		p.encode(cs)
		return
	}
	if len(cs) == 0 {
		fmt.Fprintln(p.w, "no ephemeral changes")
		return
	}
	tw := tabwriter.NewWriter(p.w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANGE\tFILE\tID\tTYPE\tINTERFACE\tUUID")
	for _, c := range cs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Change, c.File, dash(c.ID), dash(c.Type), dash(c.Interface), dash(c.UUID))
	}
	tw.Flush()
}

func (p printer) list(items []string) {
	if p.json {
		if items == nil {
			items = []string{}
		}
		p.encode(items)
		return
	}
	if len(items) > 0 {
		fmt.Fprintln(p.w, strings.Join(items, "\n"))
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
