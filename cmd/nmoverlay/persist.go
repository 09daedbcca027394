package main

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/nmoverlay/nmoverlay/internal/machineconfigs"
	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// renderPersistent is `nmoverlay render --persist FILE...`: the policies in the files,
// checked as the handler parses them, rendered by the engine as the keyfiles of their
// profiles, and a MachineConfig per pool that writes them into the persistent keyfile dir
// (mode 0600, as NetworkManager writes its own). A policy whose state depends on each
// node (a capture, a reference) is refused, as is what only a node's current state gives
// meaning to (an interface absent, a route to remove); the error names the file, the
// policy and the field, and nothing is written. Two policies giving one profile are
// refused too: the MachineConfig holds one file per profile.
func renderPersistent(o machineconfigs.Options, files []string) ([]byte, error) {
	var out []machineconfigs.File
	from := map[string]string{} // keyfile -> the policy that gives it
	for _, file := range files {
		policies, err := readPolicies(file)
		if err != nil {
			return nil, inputError{fmt.Errorf("--persist %s: %w", file, err)}
		}
		for _, p := range policies {
			where := fmt.Sprintf("--persist %s: policy %s", file, p.GetName())
			spec, err := specOf(p) // readPolicies checked it
			if err != nil {
				return nil, inputError{fmt.Errorf("%s: %w", where, err)}
			}
			if len(spec.Capture) > 0 || bytes.Contains(spec.DesiredState, []byte("{{")) {
				return nil, inputError{fmt.Errorf("%s: spec.capture: a captured value is each node's own, and a MachineConfig "+
					"writes the same file on every node of its pool: give the values themselves", where)}
			}
			desired, err := state.Parse(spec.DesiredState)
			if err != nil {
				return nil, inputError{fmt.Errorf("%s: spec.desiredState: %w", where, err)}
			}
			keyfiles, err := networkmanager.PersistentKeyfiles(desired)
			if err != nil {
				return nil, inputError{fmt.Errorf("%s: spec.desiredState: %w", where, err)}
			}
			for _, k := range keyfiles {
				if other, ok := from[k.Name]; ok {
					return nil, inputError{fmt.Errorf("%s: its profile %s is also %s's", where, k.Name, other)}
				}
				from[k.Name] = p.GetName()
				out = append(out, machineconfigs.File{Path: filepath.Join(o.WithDefaults().Layout.Lower, k.Name), Mode: 0o600, Contents: string(k.Content)})
			}
		}
	}
	mcs, err := machineconfigs.RenderPersistent(o, out)
	if err != nil {
		return nil, inputError{err}
	}
	return machineconfigs.Marshal(mcs)
}
