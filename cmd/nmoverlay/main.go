// Command nmoverlay renders what a cluster administrator applies: the MachineConfigs that
// put NetworkManager's keyfile dir on the overlay (`nmoverlay machineconfigs`), and those
// followed by nmoverlay's cluster side, the objects of deploy/ as kubectl apply -k would
// create them (`nmoverlay render`), so that one kubectl apply -f - installs everything. It
// also checks policy manifests offline (`nmoverlay validate`), and whether a cluster running
// kubernetes-nmstate can move to nmoverlay, and makes the move (`nmoverlay migrate`), and
// shows what a policy would change on each node before it is applied (`nmoverlay plan`),
// and draws a node's network (`nmoverlay topology`).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nmoverlay/nmoverlay/deploy"
	"github.com/nmoverlay/nmoverlay/internal/machineconfigs"

	"github.com/nmoverlay/nmoverlay/api/field"
	"github.com/nmoverlay/nmoverlay/internal/atomicfile"
	"github.com/nmoverlay/nmoverlay/internal/paths"
	"github.com/nmoverlay/nmoverlay/internal/version"
)

const usage = `nmoverlay: render nmoverlay's cluster configuration, check policies

Usage:
  nmoverlay render [flags]           MachineConfigs, then the cluster side (deploy/), for kubectl apply -f -
  nmoverlay machineconfigs [flags]   MachineConfig YAML for oc apply -f -
  nmoverlay validate FILE|DIR...     check policy manifests offline, as the handler parses them
  nmoverlay migrate [flags]          whether a kubernetes-nmstate cluster can move now (and --apply: the move, --rollback: undo it)
  nmoverlay plan [flags] POLICY      what a policy would change on each node it selects, before it is applied
  nmoverlay topology [flags] NODE    a picture of a node's network (SVG or HTML; --all: every node)
  nmoverlay version                  nmoverlay's version, the commit it was built from, Go's release
  nmoverlay help

Run "nmoverlay render -h" or "nmoverlay machineconfigs -h" for the flags.
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
		return machineConfigsCommand.run(args[1:], stdout, stderr)
	case "render":
		return renderCommand.run(args[1:], stdout, stderr)
	case "validate":
		return runValidate(args[1:], stdout, stderr)
	case "migrate":
		return runMigrate(args[1:], stdout, stderr)
	case "plan":
		return runPlan(args[1:], stdout, stderr)
	case "topology":
		return runTopology(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, version.String("nmoverlay"))
		return exitOK
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

// flagFor maps an option's field path (without index), of machineconfigs.Options or
// deploy.Options, to the flag that sets it.
var flagFor = map[string]string{
	"pools":                 "--pool",
	"customPools":           "--custom-pool",
	"ignitionVersion":       "--ignition-version",
	"layout.lower":          "--lower",
	"layout.runDir":         "--run-dir",
	"layout.selinuxContext": "--selinux-context",
	"safetyOptions":         "--safety-options",
	"image":                 "--image",
}

// command is a subcommand that renders YAML. define registers its flags and returns the
// rendering, called once the flags are parsed.
type command struct {
	name   string // as in messages, e.g. "nmoverlay render"
	about  string // what -h says it renders
	define func(fs *flag.FlagSet) func() ([]byte, error)
}

// inputError is an error in what the command line asks for (exit 2), as opposed to one
// writing the result (exit 1).
type inputError struct{ error }

func (e inputError) Unwrap() error { return e.error }

var machineConfigsCommand = command{
	name:  "nmoverlay machineconfigs",
	about: "Renders one MachineConfig per pool as YAML for oc apply -f -.",
	define: func(fs *flag.FlagSet) func() ([]byte, error) {
		return addMachineConfigFlags(fs).render
	},
}

var renderCommand = command{
	name: "nmoverlay render",
	about: "Renders one MachineConfig per pool, then every object of nmoverlay's cluster side (deploy/, as\n" +
		"kubectl apply -k deploy/ creates them: the CRDs and the operator) in an order kubectl apply -f -\n" +
		"accepts in one go. Creating the NMState named nmstate then deploys the handler and the controller.",
	define: func(fs *flag.FlagSet) func() ([]byte, error) {
		mc := addMachineConfigFlags(fs)
		installDir := fs.String("install-manifests", "", "write openshift-install manifests under this dir (its manifests/ and openshift/), one object per file, "+
			"instead of a stream: the cluster side, the MachineConfigs, the NMState and every --policy")
		var policies listFlag
		fs.Var(&policies, "policy", "with --install-manifests: a file of NodeNetworkConfigurationPolicies to create at install time, each checked "+
			"by the engine's parser first; repeatable or comma-separated")
		image := fs.String("image", "", "image of the operator, which deploys the handler and the controller with it, name[:tag][@digest] (default deploy/kustomization.yaml's)")
		var persist listFlag
		fs.Var(&persist, "persist", "instead, a MachineConfig per pool that lays the profiles of the policies in these files down in the persistent "+
			"keyfile dir, as the engine builds them: for what a node needs before the cluster is up; repeatable or comma-separated")
		return func() ([]byte, error) {
			if persist.set {
				if *installDir != "" || policies.set || *image != "" {
					return nil, inputError{errors.New("--persist: not with --install-manifests, --policy or --image (it renders the profiles' MachineConfigs only)")}
				}
				return renderPersistent(mc.options(), persist.values)
			}
			opts := deploy.Options{Image: *image}
			// Given but empty is a mistake (an unset variable in a script), not the default.
			imageSet := false
			fs.Visit(func(f *flag.Flag) { imageSet = imageSet || f.Name == "image" })
			if imageSet {
				if err := deploy.ValidateImage(*image); err != nil {
					return nil, inputError{err}
				}
			}
			if policies.set && *installDir == "" {
				return nil, inputError{errors.New("--policy: only with --install-manifests (apply policies with oc apply once installed)")}
			}
			if *installDir != "" {
				if o := fs.Lookup("o"); o != nil && o.Value.String() != "-" {
					return nil, inputError{errors.New("-o: not with --install-manifests, which writes a file per object")}
				}
				mcs, err := machineconfigs.Render(mc.options())
				if err != nil {
					return nil, inputError{err}
				}
				files, err := installManifests(mcs, opts, policies.values)
				if err != nil {
					return nil, err
				}
				return nil, writeInstallManifests(*installDir, files)
			}
			mcs, err := mc.render()
			if err != nil {
				return nil, err
			}
			objs, err := deploy.Objects(opts)
			if err != nil {
				return nil, inputError{err}
			}
			objYAML, err := deploy.Marshal(objs)
			if err != nil {
				return nil, err
			}
			return append(mcs, objYAML...), nil
		}
	},
}

// run parses args, renders everything and only then writes it: bad input leaves no output.
func (c command) run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	render := c.define(fs)
	out := fs.String("o", "-", "output file, replaced atomically; - for stdout")

	// The flag package would print the whole usage after an error; print one line instead,
	// and the usage only when asked for it.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fmt.Fprintf(stdout, "Usage: %s [flags]\n\n%s\n\nFlags:\n", c.name, c.about)
			fs.PrintDefaults()
			return exitOK
		}
		fmt.Fprintf(stderr, "%s: %v (see %s -h)\n", c.name, err, c.name)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q (see %s -h)\n", c.name, fs.Arg(0), c.name)
		return exitUsage
	}
	yaml, err := render()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s\n", c.name, describe(err))
		if errors.As(err, new(inputError)) {
			return exitUsage
		}
		return exitError
	}
	if yaml == nil { // written as files (render --install-manifests)
		return exitOK
	}
	if *out == "-" {
		_, err = stdout.Write(yaml)
	} else {
		err = atomicfile.Write(*out, yaml, 0o644) // never a partial file
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
		return exitError
	}
	return exitOK
}

// machineConfigFlags are the flags of every command that renders MachineConfigs.
type machineConfigFlags struct {
	pools, custom, safety           listFlag
	version, lower, runDir, selinux *string
}

func addMachineConfigFlags(fs *flag.FlagSet) *machineConfigFlags {
	f := &machineConfigFlags{}
	def := paths.DefaultLayout()
	fs.Var(&f.pools, "pool", "MachineConfigPool to render for; repeatable or comma-separated (default worker)")
	fs.Var(&f.custom, "custom-pool", "a pool besides master and worker that exists in the cluster; repeatable or comma-separated")
	f.version = fs.String("ignition-version", machineconfigs.DefaultIgnitionVersion,
		"Ignition spec version: "+strings.Join(machineconfigs.SupportedIgnitionVersions, ", ")+" (3.4.0 needs OCP 4.13+, 3.5.0 OCP 4.19+)")
	f.lower = fs.String("lower", def.Lower, "persistent keyfile dir (the overlay's lower layer)")
	f.runDir = fs.String("run-dir", def.RunDir, "dir below /run for upper, work and merged")
	f.selinux = fs.String("selinux-context", def.SELinuxContext, "SELinux context for the merged files: NetworkManager's keyfile type in RHEL's and Debian's policies; "+
		"left out of the mount where SELinux is disabled; \"\" for none")
	fs.Var(&f.safety, "safety-options", "overlay options that keep offline changes to lower safe; comma-separated subset, or none (default "+
		strings.Join(paths.SafetyOptions, ",")+")")
	return f
}

// options are the parsed flags as machineconfigs.Options.
func (f *machineConfigFlags) options() machineconfigs.Options {
	opts := machineconfigs.Options{
		Pools:           f.pools.values,
		CustomPools:     f.custom.values,
		IgnitionVersion: *f.version,
		Layout:          paths.Layout{Lower: *f.lower, RunDir: *f.runDir, SELinuxContext: *f.selinux},
	}
	if !f.pools.set {
		opts.Pools = []string{"worker"}
	}
	if f.safety.set {
		opts.SafetyOptions = f.safety.values
		if len(f.safety.values) == 1 && f.safety.values[0] == "none" {
			opts.SafetyOptions = []string{}
		}
	}
	return opts
}

// render returns the MachineConfigs' YAML; an invalid option is an inputError.
func (f *machineConfigFlags) render() ([]byte, error) {
	mcs, err := machineconfigs.Render(f.options())
	if err != nil {
		return nil, inputError{err}
	}
	return machineconfigs.Marshal(mcs)
}

// describe prefixes a validation error with the flag that sets the field, on one line.
func describe(err error) string {
	msg := err.Error()
	var fe *field.Error
	var path string
	if errors.As(err, &fe) {
		path, _, _ = strings.Cut(fe.Path, "[")
	}
	if f, ok := flagFor[path]; ok {
		msg = f + ": " + msg
	}
	return strings.ReplaceAll(msg, "\n", " ")
}
