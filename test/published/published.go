// Package published is the test data of published examples (testdata/, INDEX.md), for a
// test that runs where the files are not: the VM tier's guest applies OpenShift's own
// policies as published.
package published

import (
	"embed"
	"io/fs"
)

//go:embed testdata/openshift/*.yaml
var files embed.FS

// OpenShift is one of OpenShift's documented policies, by its file name in
// testdata/openshift.
func OpenShift(name string) (string, error) {
	b, err := fs.ReadFile(files, "testdata/openshift/"+name)
	return string(b), err
}
