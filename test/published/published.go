// Package published is the test data of published examples (testdata/, nmstate/, each with
// its INDEX.md), for a test that runs where the files are not: the VM tier's guest applies
// OpenShift's own policies and nmstate's own examples as published.
package published

import (
	"embed"
	"encoding/json"
	"io/fs"

	"sigs.k8s.io/yaml"
)

//go:embed testdata/openshift/*.yaml nmstate/*.yaml
var files embed.FS

// OpenShift is one of OpenShift's documented policies, by its file name in
// testdata/openshift.
func OpenShift(name string) (string, error) {
	b, err := fs.ReadFile(files, "testdata/openshift/"+name)
	return string(b), err
}

// Nmstate is one of nmstate's own example states, by its file name in nmstate/.
func Nmstate(name string) (string, error) {
	b, err := fs.ReadFile(files, "nmstate/"+name)
	return string(b), err
}

// DesiredState is a policy's spec.desiredState, as JSON (none: empty).
func DesiredState(policy string) ([]byte, error) {
	var nncp struct {
		Spec struct {
			DesiredState json.RawMessage `json:"desiredState"`
		} `json:"spec"`
	}
	err := yaml.Unmarshal([]byte(policy), &nncp)
	return nncp.Spec.DesiredState, err
}
