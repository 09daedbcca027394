// Command nmoverlay renders what a cluster administrator applies: today the MachineConfigs
// that put NetworkManager's keyfile dir on the overlay (`nmoverlay machineconfigs`).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nmoverlay/nmoverlay/machineconfigs"
	"github.com/nmoverlay/nmoverlay/overlay"
)

const usage = `nmoverlay: render nmoverlay's cluster configuration

Usage:
  nmoverlay machineconfigs [flags]   MachineConfig YAML for oc apply -f -
  nmoverlay help

Run "nmoverlay machineconfigs -h" for its flags.
`

const (
	exitOK    = 0
	exitError = 1 // the output could not be written
	exitUsage = 2 // bad input; nothing was written
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "machineconfigs":
		return renderMachineConfigs(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "nmoverlay: unknown command %q (see nmoverlay help)\n", args[0])
		return exitUsage
	}
}

// listFlag collects a repeatable, comma-separated flag. Empty elements are kept, so that
// validation reports them instead of silently dropping them.
type listFlag struct {
	values []string
	set    bool
}

func (l *listFlag) String() string { return strings.Join(l.values, ",") }
func (l *listFlag) Set(v string) error {
	l.set = true
	for _, s := range strings.Split(v, ",") {
		l.values = append(l.values, strings.TrimSpace(s))
	}
	return nil
}

// flagFor maps an option's field path (without index) to the flag that sets it.
var flagFor = map[string]string{
	"pools":                 "--pool",
	"customPools":           "--custom-pool",
	"ignitionVersion":       "--ignition-version",
	"layout.lower":          "--lower",
	"layout.runDir":         "--run-dir",
	"layout.selinuxContext": "--selinux-context",
	"safetyOptions":         "--safety-options",
}

const cmdName = "nmoverlay machineconfigs"

func renderMachineConfigs(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(cmdName, flag.ContinueOnError)
	var pools, custom, safety listFlag
	def := overlay.DefaultLayout()
	fs.Var(&pools, "pool", "MachineConfigPool to render for; repeatable or comma-separated (default worker)")
	fs.Var(&custom, "custom-pool", "a pool besides master and worker that exists in the cluster; repeatable or comma-separated")
	version := fs.String("ignition-version", machineconfigs.DefaultIgnitionVersion,
		"Ignition spec version: "+strings.Join(machineconfigs.SupportedIgnitionVersions, ", ")+" (3.4.0 needs OCP 4.13+, 3.5.0 OCP 4.19+)")
	lower := fs.String("lower", def.Lower, "persistent keyfile dir (the overlay's lower layer)")
	runDir := fs.String("run-dir", def.RunDir, "dir below /run for upper, work and merged")
	selinux := fs.String("selinux-context", "", "SELinux context for the merged files, e.g. system_u:object_r:NetworkManager_etc_rw_t:s0")
	fs.Var(&safety, "safety-options", "overlay options that keep offline changes to lower safe; comma-separated subset, or none (default "+
		strings.Join(overlay.SafetyOptions, ",")+")")
	out := fs.String("o", "-", "output file, replaced atomically; - for stdout")

	// The flag package would print the whole usage after an error; print one line instead,
	// and the usage only when asked for it.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fmt.Fprintf(stdout, "Usage: %s [flags]\n\nRenders one MachineConfig per pool as YAML for oc apply -f -.\n\nFlags:\n", cmdName)
			fs.PrintDefaults()
			return exitOK
		}
		fmt.Fprintf(stderr, "%s: %v (see %s -h)\n", cmdName, err, cmdName)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q (see %s -h)\n", cmdName, fs.Arg(0), cmdName)
		return exitUsage
	}
	opts := machineconfigs.Options{
		Pools:           pools.values,
		CustomPools:     custom.values,
		IgnitionVersion: *version,
		Layout:          overlay.Layout{Lower: *lower, RunDir: *runDir, SELinuxContext: *selinux},
	}
	if !pools.set {
		opts.Pools = []string{"worker"}
	}
	if safety.set {
		opts.SafetyOptions = safety.values
		if len(safety.values) == 1 && safety.values[0] == "none" {
			opts.SafetyOptions = []string{}
		}
	}
	// Render everything before writing anything: bad input leaves no output at all.
	mcs, err := machineconfigs.Render(opts)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s\n", cmdName, describe(err))
		return exitUsage
	}
	yaml, err := machineconfigs.Marshal(mcs)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmdName, err)
		return exitError
	}
	if *out == "-" {
		_, err = stdout.Write(yaml)
	} else {
		err = overlay.WriteFileAtomic(*out, yaml, 0o644) // never a partial file
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmdName, err)
		return exitError
	}
	return exitOK
}

// describe prefixes a validation error with the flag that sets the field, on one line.
func describe(err error) string {
	msg := err.Error()
	var e *machineconfigs.Error
	if errors.As(err, &e) {
		field, _, _ := strings.Cut(e.Field, "[")
		if f, ok := flagFor[field]; ok {
			msg = f + ": " + msg
		}
	}
	return strings.ReplaceAll(msg, "\n", " ")
}
