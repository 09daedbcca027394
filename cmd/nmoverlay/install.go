package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nmoverlay/nmoverlay/api/field"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/deploy"
	"github.com/nmoverlay/nmoverlay/internal/atomicfile"
	"github.com/nmoverlay/nmoverlay/internal/machineconfigs"
	"github.com/nmoverlay/nmoverlay/internal/nmpolicy"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// openshift-install's asset dirs: what `openshift-install create manifests` wrote, and
// what the bootstrap node applies (in any order, retrying until each is accepted: a CR
// before its CRD is fine there).
const (
	installManifestsDir = "manifests" // the cluster's objects
	installOpenShiftDir = "openshift" // MachineConfigs and the like, by convention
)

// installFile is one file the install manifests add.
type installFile struct {
	dir, name string
	content   []byte
}

// installManifests renders, for openshift-install: the cluster side (deploy/) into
// manifests/, and the MachineConfigs, the NMState and the given policies into openshift/,
// one object per file, named so that they sort in install order and say they are
// nmoverlay's. Every policy is decoded and its desiredState parsed by the engine first; any
// error names the file and the field, and nothing is written.
func installManifests(mcs []machineconfigs.MachineConfig, opts deploy.Options, policyFiles []string) ([]installFile, error) {
	var files []installFile
	objs, err := deploy.Objects(opts)
	if err != nil {
		return nil, inputError{err}
	}
	for i, o := range objs {
		b, err := deploy.Marshal([]*unstructured.Unstructured{o})
		if err != nil {
			return nil, err
		}
		files = append(files, installFile{installManifestsDir, fmt.Sprintf("50_nmoverlay_%02d_%s_%s.yaml", i, strings.ToLower(o.GetKind()), o.GetName()), b})
	}
	for _, mc := range mcs {
		b, err := machineconfigs.Marshal([]machineconfigs.MachineConfig{mc})
		if err != nil {
			return nil, err
		}
		files = append(files, installFile{installOpenShiftDir, "99_nmoverlay_0_machineconfig_" + mc.Metadata.Name + ".yaml", b})
	}
	nm := &unstructured.Unstructured{}
	nm.SetAPIVersion(nmstatev1.GroupVersion.String())
	nm.SetKind("NMState")
	nm.SetName(nmstatev1.NMStateName)
	b, err := deploy.Marshal([]*unstructured.Unstructured{nm})
	if err != nil {
		return nil, err
	}
	files = append(files, installFile{installOpenShiftDir, "99_nmoverlay_1_nmstate.yaml", b})
	seen := map[string]string{}
	for _, f := range policyFiles {
		policies, err := readPolicies(f)
		if err != nil {
			return nil, inputError{fmt.Errorf("--policy %s: %w", f, err)}
		}
		for _, p := range policies {
			if other, ok := seen[p.GetName()]; ok {
				return nil, inputError{fmt.Errorf("--policy %s: policy %q is also in %s", f, p.GetName(), other)}
			}
			seen[p.GetName()] = f
			b, err := deploy.Marshal([]*unstructured.Unstructured{p})
			if err != nil {
				return nil, err
			}
			files = append(files, installFile{installOpenShiftDir, "99_nmoverlay_2_policy_" + p.GetName() + ".yaml", b})
		}
	}
	return files, nil
}

// readPolicies decodes every document of file as a NodeNetworkConfigurationPolicy and
// parses its desiredState as the handler will. An error names the document and the field.
func readPolicies(file string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	docs, err := deploy.Decode(b)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, errors.New("no policy in it")
	}
	for i, d := range docs {
		where := fmt.Sprintf("document %d (%s %s)", i+1, d.GetKind(), d.GetName()) // counted from 1, as editors number them
		if _, err := checkPolicy(d); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
	}
	return docs, nil
}

// isPolicy says whether the document is a NodeNetworkConfigurationPolicy, of any version.
func isPolicy(d *unstructured.Unstructured) bool {
	return d.GroupVersionKind().Group == nmstatev1.GroupVersion.Group && d.GetKind() == "NodeNetworkConfigurationPolicy"
}

// checkPolicy checks one document as the API server and the handler will: an nmstate.io
// v1 or v1beta1 NodeNetworkConfigurationPolicy whose name can label its enactments, and
// whose desiredState the engine parses. Field errors (field.Errors) name the policy's
// fields (spec.desiredState...).
func checkPolicy(d *unstructured.Unstructured) ([]state.Need, error) {
	if v := d.GroupVersionKind().Version; !isPolicy(d) || (v != "v1" && v != "v1beta1") {
		return nil, fmt.Errorf("apiVersion/kind: want nmstate.io/v1 (or v1beta1) NodeNetworkConfigurationPolicy, not %s %s", d.GetAPIVersion(), d.GetKind())
	}
	// An object name the API server takes, and a label value: its enactments carry it in
	// nmstate.io/policy (as the admission policy nmoverlay-policy-checks checks).
	if len(validation.IsDNS1123Subdomain(d.GetName())) > 0 || len(validation.IsValidLabelValue(d.GetName())) > 0 {
		return nil, errors.New("metadata.name: must be a label value (at most 63 characters of a-z, 0-9, '-' and '.'): its enactments are labelled with it")
	}
	if d.GetNamespace() != "" {
		return nil, errors.New("metadata.namespace: policies are cluster-scoped")
	}
	spec, err := specOf(d)
	if err != nil {
		return nil, err
	}
	return checkDesired(spec.Capture, spec.DesiredState)
}

// policySpec is the part of a policy's spec the commands read.
type policySpec struct {
	Capture      map[string]string `json:"capture"`
	DesiredState json.RawMessage   `json:"desiredState"`
}

// specOf decodes a policy document's spec; a null desiredState is none.
func specOf(d *unstructured.Unstructured) (policySpec, error) {
	var spec policySpec
	raw, _ := json.Marshal(d.Object["spec"])
	if err := json.Unmarshal(raw, &spec); err != nil {
		return spec, fmt.Errorf("spec: %w", err)
	}
	if string(spec.DesiredState) == "null" {
		spec.DesiredState = nil
	}
	return spec, nil
}

// checkDesired parses a policy's captures and desired state as the handler will, without
// the node: capture syntax and order, and each reference's syntax and capture are
// checked; what a reference stands for is unknown until a node evaluates it, so the
// desired state is parsed without those values and nothing is said about them. Valid, it
// says which of its fields need a capability not every node has (their paths the policy's).
func checkDesired(captures map[string]string, desired []byte) ([]state.Need, error) {
	var errs field.Errors
	if _, cerrs := nmpolicy.ParseAll(captures); cerrs != nil {
		errs = append(errs, cerrs...)
	}
	var stubbed []string
	if bytes.Contains(desired, []byte("{{")) || bytes.Contains(desired, []byte("}}")) {
		tree, err := nmpolicy.DecodeDocument(desired)
		if err != nil {
			return nil, field.Errors{{Path: "spec.desiredState", Reason: "not valid YAML: " + err.Error()}}
		}
		if _, rerrs := nmpolicy.Check(tree, captures); rerrs != nil {
			errs = append(errs, rerrs.Within("desiredState.")...)
		}
		var stubs any
		if stubs, stubbed = nmpolicy.Stub(tree); len(stubbed) > 0 {
			if desired, err = json.Marshal(stubs); err != nil {
				return nil, err
			}
		}
	}
	_, needs, err := state.ParseNeeds(desired)
	var perrs field.Errors
	if errors.As(err, &perrs) {
		for _, e := range perrs {
			if !nmpolicy.Moot(strings.TrimPrefix(e.Path, "desiredState."), stubbed) {
				errs = append(errs, e)
			}
		}
	} else if err != nil {
		return nil, err
	}
	if len(errs) == 0 {
		for i := range needs {
			needs[i].Path = "spec.desiredState." + needs[i].Path
		}
		return needs, nil
	}
	// The engine names fields within the desiredState; here they are the policy's.
	for _, e := range errs {
		switch {
		case e.Path == "desiredState" || strings.HasPrefix(e.Path, "desiredState.") || strings.HasPrefix(e.Path, "capture."):
			e.Path = "spec." + e.Path
		default:
			e.Path = "spec.desiredState." + e.Path
		}
	}
	return nil, errs
}

// writeInstallManifests writes files under dir, each atomically, once all are rendered.
// Files of another name are left alone: the dir is openshift-install's.
func writeInstallManifests(dir string, files []installFile) error {
	for _, f := range files {
		d := filepath.Join(dir, f.dir)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		if err := atomicfile.Write(filepath.Join(d, f.name), f.content, 0o644); err != nil {
			return err
		}
	}
	return nil
}
