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
	exitError = 1
	exitUsage = 2
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
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "nmoverlay: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
}

// listFlag collects a repeatable, comma-separated flag.
type listFlag struct {
	values []string
	set    bool
}

func (l *listFlag) String() string { return strings.Join(l.values, ",") }
func (l *listFlag) Set(v string) error {
	l.set = true
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			l.values = append(l.values, s)
		}
	}
	return nil
}

// flagFor maps an option's field path to the flag that sets it, for error messages.
var flagFor = map[string]string{
	"pools":                 "--pool",
	"customPools":           "--custom-pool",
	"ignitionVersion":       "--ignition-version",
	"layout.lower":          "--lower",
	"layout.runDir":         "--run-dir",
	"layout.selinuxContext": "--selinux-context",
	"safetyOptions":         "--safety-options",
}

func renderMachineConfigs(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("nmoverlay machineconfigs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var pools, custom, safety listFlag
	def := overlay.DefaultLayout()
	fs.Var(&pools, "pool", "MachineConfigPool to render for; repeatable or comma-separated (default worker)")
	fs.Var(&custom, "custom-pool", "a pool besides master and worker that exists in the cluster; repeatable")
	version := fs.String("ignition-version", machineconfigs.DefaultIgnitionVersion, "Ignition spec version: "+strings.Join(machineconfigs.SupportedIgnitionVersions, ", "))
	lower := fs.String("lower", def.Lower, "persistent keyfile dir (the overlay's lower layer)")
	runDir := fs.String("run-dir", def.RunDir, "dir below /run for upper, work and merged")
	selinux := fs.String("selinux-context", "", "SELinux context for the merged files, e.g. system_u:object_r:NetworkManager_etc_rw_t:s0")
	fs.Var(&safety, "safety-options", "overlay options that keep offline lower changes safe; comma-separated, or none (default "+strings.Join(overlay.SafetyOptions, ",")+")")
	out := fs.String("o", "-", "output file; - for stdout")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "nmoverlay machineconfigs: unexpected argument %q\n", fs.Arg(0))
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
	mcs, err := machineconfigs.Render(opts)
	if err != nil {
		fmt.Fprintf(stderr, "nmoverlay machineconfigs: %s\n", describe(err))
		return exitUsage
	}
	yaml, err := machineconfigs.Marshal(mcs)
	if err != nil {
		fmt.Fprintf(stderr, "nmoverlay machineconfigs: %v\n", err)
		return exitError
	}
	if *out == "-" {
		_, err = stdout.Write(yaml)
	} else {
		err = overlay.WriteFileAtomic(*out, yaml, 0o644) // never a partial file
	}
	if err != nil {
		fmt.Fprintf(stderr, "nmoverlay machineconfigs: %v\n", err)
		return exitError
	}
	return exitOK
}

// describe prefixes a validation error with the flag that sets the field.
func describe(err error) string {
	var e *machineconfigs.Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	field := e.Field
	if i := strings.IndexByte(field, '['); i >= 0 {
		field = field[:i]
	}
	if f, ok := flagFor[field]; ok {
		return f + ": " + e.Error()
	}
	return e.Error()
}
