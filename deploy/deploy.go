// Package deploy is nmoverlay's cluster side as Go data: the manifests in this directory,
// embedded, rendered by kustomize's own library (what kubectl kustomize runs) for
// kustomization.yaml, so that one binary renders them without kubectl. kubectl apply -k
// deploy/ remains the reference; the integration tier checks that both produce the same
// objects.
//
// Only the kinds this package knows the scope and install order of are accepted: a new kind
// fails Objects instead of being applied out of order.
package deploy

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/api/field"
)

// kustomization.yaml is matched by *.yaml too; it is named so that it cannot go missing.
//
//go:embed kustomization.yaml *.yaml crds/*.yaml operand/*.yaml
var manifests embed.FS

// KustomizationFile is the kustomization every rendering starts from.
const KustomizationFile = "kustomization.yaml"

// OperandDir holds the kustomization of what the operator deploys for the NMState CR:
// the handler, the controller, their RBAC and admission policies.
const OperandDir = "operand"

// ImageName is the image the manifests name, for the kustomization's images: entry (or
// Options.Image) to replace.
const ImageName = "nmoverlay"

// Options say what to render.
type Options struct {
	// Image replaces the kustomization's image for ImageName, as
	// `kustomize edit set image nmoverlay=IMAGE` would: name[:tag][@digest]. Empty: the
	// kustomization's newName/newTag/digest.
	Image string
	// Namespace moves every namespaced object, and every binding's service account
	// subject, to this namespace (the operator deploys into its own). Empty: the
	// kustomization's.
	Namespace string
}

// ValidateImage checks an image reference, e.g. registry.example/nmoverlay:v1 or
// registry.example/nmoverlay@sha256:<64 hex digits>.
func ValidateImage(ref string) error {
	_, err := imageEntry(ref)
	return err
}

// imageEntry is the images: entry `kustomize edit set image nmoverlay=ref` writes: ref's
// name as written, its tag and its digest.
func imageEntry(ref string) (types.Image, error) {
	const want = "name[:tag][@digest], e.g. quay.io/nmoverlay/nmoverlay:v1"
	if ref == "" {
		return types.Image{}, &field.Error{Path: "image", Reason: "must not be empty: want " + want}
	}
	// ParseNormalizedNamed reads ref as container runtimes do: what it refuses, no node can
	// pull. Parse then keeps the name as written, where the former would prefix
	// docker.io/library/.
	_, err := reference.ParseNormalizedNamed(ref)
	var r reference.Reference
	if err == nil {
		r, err = reference.Parse(ref)
	}
	if err != nil {
		return types.Image{}, &field.Error{Path: "image", Reason: fmt.Sprintf("%q is not an image reference (%v): want %s", ref, err, want)}
	}
	img := types.Image{Name: ImageName}
	if n, ok := r.(reference.Named); ok {
		img.NewName = n.Name()
	}
	if t, ok := r.(reference.Tagged); ok {
		img.NewTag = t.Tag()
	}
	if d, ok := r.(reference.Digested); ok {
		img.Digest = d.Digest().String()
	}
	return img, nil
}

// Validate checks the options.
func (o Options) Validate() error {
	if o.Image != "" {
		if err := ValidateImage(o.Image); err != nil {
			return err
		}
	}
	if o.Namespace != "" {
		if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
			return field.Invalid("namespace", o.Namespace, "is not a namespace name: "+strings.Join(errs, "; "))
		}
	}
	return nil
}

// kindInfo is what rendering needs to know about a kind without an API server.
type kindInfo struct {
	namespaced bool
	// stage orders kubectl apply -f: the Namespace before what lives in it, CRDs before what
	// refers to their resources, RBAC before the workloads that use it, an admission policy
	// before its binding, and both before the workloads start writing.
	stage int
	// crd names the CustomResourceDefinition of another project that serves the kind, for
	// kinds a cluster may lack (prometheus-operator's): they are applied only where it is
	// installed. Empty for the kinds every cluster serves and nmoverlay's own.
	crd string
}

// kinds are the kinds the manifests use. Objects rejects any other: its stage would be a
// guess. kustomize guesses "namespaced" for a kind its built-in Kubernetes 1.21 schema lacks,
// and so sets metadata.namespace on ValidatingAdmissionPolicy(Binding); the API server drops
// it, and Objects removes it from every kind namespaced is false for.
var kinds = map[schema.GroupKind]kindInfo{
	{Kind: "Namespace"}: {stage: 0},
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}: {stage: 1},
	{Kind: "ServiceAccount"}:                                                          {namespaced: true, stage: 2},
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         {stage: 2},
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}:                                {namespaced: true, stage: 2},
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  {stage: 3},
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}:                         {namespaced: true, stage: 3},
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        {stage: 4},
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: {stage: 5},
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:                               {namespaced: true, stage: 5},
	{Group: "apps", Kind: "DaemonSet"}:                                                {namespaced: true, stage: 6},
	{Group: "apps", Kind: "Deployment"}:                                               {namespaced: true, stage: 6},
	{Group: "policy", Kind: "PodDisruptionBudget"}:                                    {namespaced: true, stage: 6},
	{Kind: "Service"}: {namespaced: true, stage: 6},
	{Group: "monitoring.coreos.com", Kind: "ServiceMonitor"}: {namespaced: true, stage: 7, crd: "servicemonitors.monitoring.coreos.com"},
	{Group: "monitoring.coreos.com", Kind: "PrometheusRule"}: {namespaced: true, stage: 7, crd: "prometheusrules.monitoring.coreos.com"},
	{Group: "nmstate.io", Kind: "NMState"}:                   {stage: 8},
}

// CRDOf names the CustomResourceDefinition a kind of the manifests needs where clusters may
// lack it (prometheus-operator's ServiceMonitor and PrometheusRule); "" for every other kind.
func CRDOf(gk schema.GroupKind) string {
	return kinds[gk].crd
}

// Objects returns every object the kustomization lists (the CRDs and the operator: what
// kubectl apply -k deploy/ installs), transformed as kustomize does, in the order kubectl
// apply -f - accepts in one go.
func Objects(opts Options) ([]*unstructured.Unstructured, error) {
	return ObjectsFrom(manifests, opts)
}

// The label every operand object carries, set by the operator: what it owns, and what
// nmoverlay migrate --rollback deletes.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "nmoverlay-operator"
)

// Operand returns what the operator deploys (OperandDir's kustomization) in the order it
// applies them.
func Operand(opts Options) ([]*unstructured.Unstructured, error) {
	return objectsIn(manifests, OperandDir, opts)
}

// Render returns Objects as a YAML stream, every document starting with "---".
func Render(opts Options) ([]byte, error) {
	objs, err := Objects(opts)
	if err != nil {
		return nil, err
	}
	return Marshal(objs)
}

// Marshal writes objects as a multi-document YAML stream for kubectl apply -f -.
func Marshal(objs []*unstructured.Unstructured) ([]byte, error) {
	var out []byte
	for _, o := range objs {
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
		out = append(out, "---\n"...)
		out = append(out, b...)
	}
	return out, nil
}

// ObjectsFrom is Objects for the kustomization.yaml at the root of fsys, with everything it
// refers to in fsys; tests compare it with kustomize on other inputs.
func ObjectsFrom(fsys fs.FS, opts Options) ([]*unstructured.Unstructured, error) {
	return objectsIn(fsys, ".", opts)
}

// objectsIn renders the kustomization in dir of fsys.
func objectsIn(fsys fs.FS, dir string, opts Options) ([]*unstructured.Unstructured, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	// kustomize reads its own filesystem type: copy fsys into memory, where the image
	// override can also be written without touching fsys.
	mem := filesys.MakeFsInMemory()
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		return mem.WriteFile(path.Join("/", p), b)
	})
	if err != nil {
		return nil, err
	}
	root := path.Join("/", dir)
	if err := edit(mem, root, opts); err != nil {
		return nil, err
	}
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, root)
	if err != nil {
		return nil, err
	}

	type staged struct {
		obj   *unstructured.Unstructured
		stage int
	}
	var all []staged
	for _, r := range resources.Resources() {
		// Through JSON, as Decode reads kubectl kustomize's output: the same Go types.
		j, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", r.GetKind(), r.GetName(), err)
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(j); err != nil {
			return nil, fmt.Errorf("%s %q: %w", r.GetKind(), r.GetName(), err)
		}
		gk := o.GroupVersionKind().GroupKind()
		info, ok := kinds[gk]
		if !ok {
			return nil, fmt.Errorf("%s %q: kind %s is not known to package deploy (add it to its kinds table)", o.GetKind(), o.GetName(), gk)
		}
		if !info.namespaced {
			o.SetNamespace("")
		}
		all = append(all, staged{o, info.stage})
	}
	// Stable: within a stage, kustomize's order, which is the kustomization's.
	slices.SortStableFunc(all, func(a, b staged) int { return a.stage - b.stage })
	out := make([]*unstructured.Unstructured, len(all))
	for i, s := range all {
		out[i] = s.obj
	}
	return out, nil
}

// edit rewrites the kustomization in dir of fsys as `kustomize edit set image
// nmoverlay=IMAGE` does (read and fixed up as kustomize reads it, the images: entry for
// ImageName replaced) and adds a namespace transformer for opts.Namespace.
func edit(fsys filesys.FileSystem, dir string, opts Options) error {
	if opts.Image == "" && opts.Namespace == "" {
		return nil
	}
	file := path.Join(dir, KustomizationFile)
	b, err := fsys.ReadFile(file)
	if err != nil {
		return err
	}
	var k types.Kustomization
	if err := k.Unmarshal(b); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	k.FixKustomization()
	if opts.Image != "" {
		img, err := imageEntry(opts.Image)
		if err != nil {
			return err
		}
		k.Images = append(slices.DeleteFunc(k.Images, func(i types.Image) bool { return i.Name == ImageName }), img)
	}
	if opts.Namespace != "" {
		// kustomize's namespace: field moves only the binding subjects in namespace
		// "default"; this transformer moves every service account's, ours included.
		t := fmt.Sprintf("apiVersion: builtin\nkind: NamespaceTransformer\nmetadata:\n  name: namespace\n  namespace: %s\n"+
			"setRoleBindingSubjects: allServiceAccounts\n", opts.Namespace)
		if err := fsys.WriteFile(path.Join(dir, namespaceTransformerFile), []byte(t)); err != nil {
			return err
		}
		k.Transformers = append(k.Transformers, namespaceTransformerFile)
	}
	if b, err = yaml.Marshal(&k); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return fsys.WriteFile(file, b)
}

// namespaceTransformerFile is written next to the kustomization to set Options.Namespace.
const namespaceTransformerFile = "zz-nmoverlay-namespace.yaml"

// Decode parses a multi-document YAML stream (a manifest file, Render's output, kubectl
// kustomize's) into objects. Empty documents are skipped, as kustomize and kubectl do;
// a document that is not an object with a kind and a name is an error naming its number,
// counted from 1 as editors count them.
func Decode(b []byte) ([]*unstructured.Unstructured, error) {
	docs, err := Documents(b)
	if err != nil {
		return nil, err
	}
	objs := make([]*unstructured.Unstructured, 0, len(docs))
	for _, d := range docs {
		o, err := d.Object()
		if err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// Document is one document of a YAML stream, as JSON, with its number in the stream
// (from 1).
type Document struct {
	Number int
	JSON   []byte
}

// Documents splits a multi-document YAML stream, skipping empty documents.
func Documents(b []byte) ([]Document, error) {
	var out []Document
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if t := bytes.TrimSpace(j); len(t) == 0 || string(t) == "null" {
			continue
		}
		out = append(out, Document{Number: n, JSON: j})
	}
}

// Object is the document as a Kubernetes object. The error never quotes the document,
// which may hold a secret (a pre-shared key).
func (d Document) Object() (*unstructured.Unstructured, error) {
	o := &unstructured.Unstructured{}
	if err := o.UnmarshalJSON(d.JSON); err != nil {
		what := "not a Kubernetes object"
		switch {
		case runtime.IsMissingKind(err):
			what = "no kind: not a Kubernetes object"
		case runtime.IsMissingVersion(err):
			what = "no apiVersion: not a Kubernetes object"
		}
		return nil, fmt.Errorf("document %d: %s", d.Number, what)
	}
	if o.GetName() == "" {
		return nil, fmt.Errorf("document %d: %s without a name", d.Number, o.GetKind())
	}
	return o, nil
}

// CRDServedVersions are the versions each of nmoverlay's CRDs serves, by CRD name.
func CRDServedVersions() (map[string][]string, error) {
	files, err := fs.Glob(manifests, "crds/*.yaml")
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, f := range files {
		b, err := manifests.ReadFile(f)
		if err != nil {
			return nil, err
		}
		objs, err := Decode(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, o := range objs {
			versions, _, _ := unstructured.NestedSlice(o.Object, "spec", "versions")
			for _, v := range versions {
				m, _ := v.(map[string]any)
				if served, _ := m["served"].(bool); served {
					name, _ := m["name"].(string)
					out[o.GetName()] = append(out[o.GetName()], name)
				}
			}
		}
	}
	return out, nil
}
