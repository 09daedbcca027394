package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nmoverlay/nmoverlay/deploy"

	"github.com/nmoverlay/nmoverlay/api/field"
	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

const validateAbout = `Checks NodeNetworkConfigurationPolicy manifests offline with the handler's own parser,
as an administrator's CI does before oc apply, and nmstate's own desired-state files (a
document with no kind whose keys are nmstate's). Each FILE may hold several YAML documents;
a DIR is read recursively (*.yaml, *.yml, *.json). Documents of other kinds are skipped.
Every error is printed with its file, document, policy and field path. A field that only
some NetworkManager releases apply is noted with those releases: a node whose
NetworkManager is older refuses the policy. Exit status: 0 when every policy is valid, 1
when any is not (or none was found), 2 on bad usage.`

// manifestExts are the files validate reads in a directory.
var manifestExts = []string{".yaml", ".yml", ".json"}

// runValidate is `nmoverlay validate FILE|DIR...`.
func runValidate(args []string, stdout, stderr io.Writer) int {
	const name = "nmoverlay validate"
	fset := flag.NewFlagSet(name, flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "Usage: %s FILE|DIR...\n\n%s\n", name, validateAbout)
			return exitOK
		}
		fmt.Fprintf(stderr, "%s: %v (see %s -h)\n", name, err, name)
		return exitUsage
	}
	if fset.NArg() == 0 {
		fmt.Fprintf(stderr, "%s: name at least one file or directory (see %s -h)\n", name, name)
		return exitUsage
	}
	var files []string
	problems := 0
	report := func(format string, a ...any) {
		problems++
		fmt.Fprintf(stderr, format+"\n", a...)
	}
	for _, arg := range fset.Args() {
		found, err := manifestFiles(arg)
		if err != nil {
			report("%s: %v", arg, err)
			continue
		}
		files = append(files, found...)
	}
	policies := 0
	for _, file := range files {
		n, lines, notes := validateFile(file)
		policies += n
		for _, l := range lines {
			report("%s", l)
		}
		for _, l := range notes {
			fmt.Fprintln(stdout, l)
		}
	}
	switch {
	case problems > 0:
		fmt.Fprintf(stderr, "%s: %d problem(s) in %d file(s), %d policies read\n", name, problems, len(files), policies)
		return exitError
	case policies == 0:
		fmt.Fprintf(stderr, "%s: no NodeNetworkConfigurationPolicy in %d file(s)\n", name, len(files))
		return exitError
	}
	fmt.Fprintf(stdout, "%d policies in %d file(s): valid\n", policies, len(files))
	return exitOK
}

// manifestFiles is path itself if it is a file, or the manifests under it, sorted.
func manifestFiles(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	var out []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && slices.Contains(manifestExts, strings.ToLower(filepath.Ext(p))) {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// bareDesiredState says whether a document is a desired state alone (nmstate's own files):
// an object with no kind or apiVersion and one of nmstate's top-level keys.
func bareDesiredState(doc []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(doc, &m) != nil {
		return false
	}
	if _, ok := m["kind"]; ok {
		return false
	}
	if _, ok := m["apiVersion"]; ok {
		return false
	}
	for _, k := range []string{"interfaces", "routes", "route-rules", "dns-resolver", "ovn"} {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// validateFile checks every policy in file: how many it holds, and one line per problem
// ("file: document 2 (policy br-ex): spec.desiredState.interfaces[0].mtu: ..."), and one
// note per field that only some nodes apply.
func validateFile(file string) (policies int, lines, notes []string) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, []string{fmt.Sprintf("%s: %v", file, err)}, nil
	}
	docs, err := deploy.Documents(b)
	if err != nil {
		return 0, []string{fmt.Sprintf("%s: %v", file, err)}, nil
	}
	for _, doc := range docs {
		var where string
		var needs []state.Need
		if bareDesiredState(doc.JSON) {
			// nmstate's own format, as its examples are written: a policy's desiredState.
			policies++
			where = fmt.Sprintf("%s: document %d (desired state)", file, doc.Number)
			_, needs, err = state.ParseNeeds(doc.JSON)
		} else {
			d, derr := doc.Object()
			if derr != nil {
				lines = append(lines, fmt.Sprintf("%s: %v", file, derr))
				continue
			}
			if !isPolicy(d) {
				continue
			}
			policies++
			where = fmt.Sprintf("%s: document %d (policy %s)", file, doc.Number, d.GetName())
			needs, err = checkPolicy(d)
		}
		var errs field.Errors
		switch {
		case err == nil:
			for _, n := range needs {
				notes = append(notes, fmt.Sprintf("%s: %s: needs %s: %s", where, n.Path, n.Capability, networkmanager.Supports(n.Capability)))
			}
		case errors.As(err, &errs):
			for _, e := range errs {
				lines = append(lines, where+": "+e.Error())
			}
		default:
			lines = append(lines, where+": "+err.Error())
		}
	}
	return policies, lines, notes
}
