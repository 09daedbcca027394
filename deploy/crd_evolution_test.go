package deploy_test

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/deploy"
)

// The rules a CRD change follows (README, "Versions and upgrades"), checked against the
// CRDs of every earlier release kept in testdata/released/VERSION/crds: what a release
// stored stays readable, and the objects it wrote stay as it wrote them. The same
// releases' objects are applied to these CRDs on a real API server by the integration
// tier (test/integration/crd_evolution_test.go).

// peerPreserved are the schema paths where kubernetes-nmstate's CRDs keep unknown fields
// (x-kubernetes-preserve-unknown-fields), read from its deploy/crds at
// nmstate/kubernetes-nmstate c97527555 (main, 2026-07-20): a state in nmstate's schema is not
// pruned, and neither is an enactment as a whole.
var peerPreserved = map[string][]string{
	"nodenetworkconfigurationpolicies.nmstate.io":   {"spec.desiredState"},
	"nodenetworkconfigurationenactments.nmstate.io": {"", "status.capturedStates.*.state", "status.desiredState"},
	"nodenetworkstates.nmstate.io":                  {"status.currentState"},
}

func readCRDs(t *testing.T, dir string) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no CRDs (%v)", dir, err)
	}
	crds := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		crds[crd.Name] = crd
	}
	return crds
}

// schemaField is one node of a schema: its type and whether it keeps unknown fields.
type schemaField struct {
	typ      string
	preserve bool
}

// fields flattens a schema into its paths: "spec.desiredState", "status.conditions[].type",
// "status.capturedStates.*" for additionalProperties; "" is the root.
func fields(s *apiextensionsv1.JSONSchemaProps, path string, out map[string]schemaField) {
	if s == nil {
		return
	}
	out[path] = schemaField{typ: s.Type, preserve: s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields}
	join := func(name string) string {
		if path == "" {
			return name
		}
		return path + "." + name
	}
	for name, p := range s.Properties {
		fields(&p, join(name), out)
	}
	if s.Items != nil {
		fields(s.Items.Schema, path+"[]", out)
	}
	if s.AdditionalProperties != nil {
		fields(s.AdditionalProperties.Schema, join("*"), out)
	}
}

func crdVersion(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == name {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

func TestCRDsEvolveAdditively(t *testing.T) {
	current := readCRDs(t, "crds")
	releases, err := filepath.Glob("testdata/released/*/crds")
	if err != nil || len(releases) == 0 {
		t.Fatalf("no earlier release's CRDs in testdata/released (%v)", err)
	}
	for _, dir := range releases {
		release := filepath.Base(filepath.Dir(dir))
		for name, old := range readCRDs(t, dir) {
			crd, ok := current[name]
			if !ok {
				t.Errorf("%s: CRD %s is gone: %s stored objects of it", release, name, release)
				continue
			}
			if crd.Spec.Group != old.Spec.Group || crd.Spec.Names.Kind != old.Spec.Names.Kind || crd.Spec.Scope != old.Spec.Scope {
				t.Errorf("%s: %s changed its group, kind or scope", release, name)
			}
			for _, ov := range old.Spec.Versions {
				v := crdVersion(crd, ov.Name)
				if ov.Served && (v == nil || !v.Served) {
					t.Errorf("%s: %s %s was served and is not: clients of %s use it", release, name, ov.Name, release)
					continue
				}
				if ov.Storage && (v == nil || !v.Served) {
					t.Errorf("%s: %s %s was the storage version and is not served: objects stored then cannot be read until a storage migration is shipped", release, name, ov.Name)
					continue
				}
				if v == nil || ov.Schema == nil {
					continue
				}
				before, after := map[string]schemaField{}, map[string]schemaField{}
				fields(ov.Schema.OpenAPIV3Schema, "", before)
				fields(v.Schema.OpenAPIV3Schema, "", after)
				var paths []string
				for p := range before {
					paths = append(paths, p)
				}
				sort.Strings(paths)
				for _, p := range paths {
					b := before[p]
					a, present := after[p]
					if !present && !underPreserved(p, after) {
						t.Errorf("%s: %s %s: field %q is gone (additive changes only): objects %s wrote would lose it", release, name, ov.Name, p, release)
						continue
					}
					if present && b.typ != a.typ && a.typ != "" {
						t.Errorf("%s: %s %s: field %q changed its type from %q to %q", release, name, ov.Name, p, b.typ, a.typ)
					}
					if b.preserve && !a.preserve {
						t.Errorf("%s: %s %s: field %q no longer keeps unknown fields", release, name, ov.Name, p)
					}
				}
			}
		}
	}
}

// underPreserved: a path no longer declared under one that keeps unknown fields is still
// kept as it was written.
func underPreserved(path string, schema map[string]schemaField) bool {
	for p, f := range schema {
		if f.preserve && (p == "" || strings.HasPrefix(path, p+".")) {
			return true
		}
	}
	return false
}

func TestCRDsKeepUnknownFieldsWhereThePeerDoes(t *testing.T) {
	current := readCRDs(t, "crds")
	for name, paths := range peerPreserved {
		crd, ok := current[name]
		if !ok {
			t.Errorf("no CRD %s", name)
			continue
		}
		for _, v := range crd.Spec.Versions {
			got := map[string]schemaField{}
			fields(v.Schema.OpenAPIV3Schema, "", got)
			for _, p := range paths {
				if !got[p].preserve {
					t.Errorf("%s %s: %q does not keep unknown fields; kubernetes-nmstate's does", name, v.Name, p)
				}
			}
		}
	}
}

// The operator prunes what an earlier release's operand had and this one's has not
// (internal/operator/prune.go), by name: its RBAC must let it delete every object of the
// operand and of every released operand (testdata/released/VERSION/operand.txt), and a
// name a release drops must stay in its delete rules.
func TestOperatorMayDeleteEveryReleasedOperandObject(t *testing.T) {
	var rules []rbacv1.PolicyRule
	for _, o := range objects(t, deploy.Options{}) {
		if (o.GetKind() == "ClusterRole" || o.GetKind() == "Role") && strings.HasPrefix(o.GetName(), "nmoverlay-operator") {
			var r rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r); err != nil {
				t.Fatal(err)
			}
			rules = append(rules, r.Rules...)
		}
	}
	mayDelete := func(gk schema.GroupKind, name string) bool {
		resource, _ := meta.UnsafeGuessKindToResource(gk.WithVersion("v1"))
		for _, r := range rules {
			if slices.Contains(r.Verbs, "delete") && slices.Contains(r.APIGroups, gk.Group) &&
				slices.Contains(r.Resources, resource.Resource) && slices.Contains(r.ResourceNames, name) {
				return true
			}
		}
		return false
	}
	operand, err := deploy.Operand(deploy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range operand {
		if gk := o.GroupVersionKind().GroupKind(); !mayDelete(gk, o.GetName()) {
			t.Errorf("the operator may not delete %s %s of its own operand, by name", gk, o.GetName())
		}
	}
	files, _ := filepath.Glob("testdata/released/*/operand.txt")
	if len(files) == 0 {
		t.Fatal("no released operand in testdata/released")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			kind, name, ok := strings.Cut(line, " ")
			if !ok || strings.HasPrefix(line, "#") {
				continue
			}
			if gk := schema.ParseGroupKind(kind); !mayDelete(gk, name) {
				t.Errorf("%s: the operator may not delete %s %s, which that release deployed: keep its name in deploy/operator.yaml's delete rules", f, gk, name)
			}
		}
	}
}
