// Package deploy is nmoverlay's cluster side as Go data: the manifests in this directory,
// embedded, with what kustomize does to them for kustomization.yaml applied, so that one
// binary renders them without kubectl. kubectl apply -k deploy/ remains the reference; the
// integration tier checks that both produce the same objects.
//
// Only the kustomization fields this package implements are accepted, and only the kinds it
// knows the scope of: a new kustomize feature or a new kind fails Objects instead of being
// rendered differently from kustomize.
package deploy

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// kustomization.yaml is matched by *.yaml too; it is named so that it cannot go missing.
//
//go:embed kustomization.yaml *.yaml crds/*.yaml
var manifests embed.FS

// KustomizationFile is the kustomization every rendering starts from.
const KustomizationFile = "kustomization.yaml"

// ImageName is the image the manifests name, for the kustomization's images: entry (or
// Options.Image) to replace.
const ImageName = "nmoverlay"

// Options say what to render.
type Options struct {
	// Image replaces the kustomization's image for ImageName, as
	// `kustomize edit set image nmoverlay=IMAGE` would: name[:tag][@digest]. Empty: the
	// kustomization's newName/newTag/digest.
	Image string
}

// Error is a validation error naming the option's field, e.g. "image".
type Error struct {
	Field  string
	Reason string
}

func (e *Error) Error() string { return e.Field + ": " + e.Reason }

// An image reference in the grammar container runtimes parse (the distribution reference):
// an optional registry host[:port]/, lowercase path components joined by slashes, an
// optional :tag and an optional @algorithm:hex digest.
var (
	label      = `[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?`
	registry   = `(?:(?:localhost|\[[0-9a-fA-F:]+\]|` + label + `(?:\.` + label + `)+)(?::[0-9]+)?|` + label + `:[0-9]+)/`
	component  = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
	tag        = `:[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,127}`
	digest     = `@[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-f]{32,}`
	imageRef   = regexp.MustCompile(`^(?:` + registry + `)?` + component + `(?:/` + component + `)*(?:` + tag + `)?(?:` + digest + `)?$`)
	sha256Hash = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)
)

// ValidateImage checks an image reference, e.g. registry.example/nmoverlay:v1 or
// registry.example/nmoverlay@sha256:<64 hex digits>.
func ValidateImage(ref string) error {
	const want = "name[:tag][@digest], e.g. quay.io/nmoverlay/nmoverlay:v1"
	switch {
	case ref == "":
		return &Error{"image", "must not be empty: want " + want}
	case len(ref) > 512 || !imageRef.MatchString(ref):
		return &Error{"image", fmt.Sprintf("%q is not an image reference: want %s", ref, want)}
	case strings.Contains(ref, "@sha256:") && !sha256Hash.MatchString(ref):
		return &Error{"image", fmt.Sprintf("%q: a sha256 digest has 64 hex digits", ref)}
	}
	return nil
}

// Validate checks the options.
func (o Options) Validate() error {
	if o.Image != "" {
		return ValidateImage(o.Image)
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
}

// kinds are the kinds the manifests use. Objects rejects any other: its scope would be a guess.
// (kustomize guesses "namespaced" for a kind its built-in Kubernetes 1.21 schema lacks, and
// so sets metadata.namespace on ValidatingAdmissionPolicy(Binding); the API server drops it.)
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
	{Group: "apps", Kind: "DaemonSet"}:                                                {namespaced: true, stage: 6},
	{Group: "apps", Kind: "Deployment"}:                                               {namespaced: true, stage: 6},
}

// kustomization is the subset of kustomize's Kustomization this package implements. It is
// parsed strictly: any other field is an error rather than silently ignored.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Resources  []string `json:"resources"`
	Images     []image  `json:"images"`
}

type image struct {
	Name    string `json:"name"`
	NewName string `json:"newName"`
	NewTag  string `json:"newTag"`
	Digest  string `json:"digest"`
}

// Objects returns every object the kustomization lists, transformed as kustomize does, in
// the order kubectl apply -f - accepts in one go.
func Objects(opts Options) ([]*unstructured.Unstructured, error) {
	return ObjectsFrom(manifests, opts)
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

// ObjectsFrom is Objects for the kustomization.yaml at the root of fsys, which must stay
// within what this package implements; tests compare it with kustomize on other inputs.
func ObjectsFrom(fsys fs.FS, opts Options) ([]*unstructured.Unstructured, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	k, err := readKustomization(fsys)
	if err != nil {
		return nil, err
	}
	images := k.Images
	if opts.Image != "" {
		name, tag, digest := splitImage(opts.Image)
		override := image{Name: ImageName, NewName: name, NewTag: tag, Digest: digest}
		images = append(slices.DeleteFunc(slices.Clone(images), func(i image) bool { return i.Name == ImageName }), override)
	}

	type staged struct {
		obj   *unstructured.Unstructured
		stage int
	}
	var all []staged
	seen := map[string]string{}
	for _, res := range k.Resources {
		objs, err := readObjects(fsys, res)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			gk := o.GroupVersionKind().GroupKind()
			info, ok := kinds[gk]
			if !ok {
				return nil, fmt.Errorf("%s: %s %q: kind %s is not known to package deploy (add it to its kinds table)", res, o.GetKind(), o.GetName(), gk)
			}
			if err := setNamespace(o, gk, info, k.Namespace); err != nil {
				return nil, fmt.Errorf("%s: %s %q: %w", res, o.GetKind(), o.GetName(), err)
			}
			if gk.Kind != "CustomResourceDefinition" { // kustomize leaves CRDs' schemas alone
				for _, img := range images {
					setImage(o.Object, img)
				}
			}
			id := gk.String() + " " + o.GetNamespace() + "/" + o.GetName()
			if prev, dup := seen[id]; dup {
				return nil, fmt.Errorf("%s: %s is also in %s", res, id, prev)
			}
			seen[id] = res
			all = append(all, staged{o, info.stage})
		}
	}
	// Stable: within a stage, the kustomization's order.
	slices.SortStableFunc(all, func(a, b staged) int { return a.stage - b.stage })
	out := make([]*unstructured.Unstructured, len(all))
	for i, s := range all {
		out[i] = s.obj
	}
	return out, nil
}

func readKustomization(fsys fs.FS) (*kustomization, error) {
	b, err := fs.ReadFile(fsys, KustomizationFile)
	if err != nil {
		return nil, err
	}
	k := &kustomization{}
	if err := yaml.UnmarshalStrict(b, k); err != nil {
		return nil, fmt.Errorf("%s: %w (package deploy implements namespace, resources and images only)", KustomizationFile, err)
	}
	if k.Kind != "Kustomization" {
		return nil, fmt.Errorf("%s: kind %q, want Kustomization", KustomizationFile, k.Kind)
	}
	for i, img := range k.Images {
		if img.Name == "" {
			return nil, fmt.Errorf("%s: images[%d]: no name", KustomizationFile, i)
		}
	}
	return k, nil
}

// readObjects parses one resource file of the kustomization.
func readObjects(fsys fs.FS, res string) ([]*unstructured.Unstructured, error) {
	b, err := fs.ReadFile(fsys, res)
	if err != nil {
		// Directories, remote bases and files outside the embed patterns land here.
		return nil, fmt.Errorf("resource %s: %w (package deploy reads embedded files only)", res, err)
	}
	objs, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", res, err)
	}
	return objs, nil
}

// Decode parses a multi-document YAML stream (a manifest file, Render's output, kubectl
// kustomize's) into objects. Empty documents are skipped, as kustomize and kubectl do;
// a document that is not an object with a kind and a name is an error naming its index.
func Decode(b []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if t := bytes.TrimSpace(j); len(t) == 0 || string(t) == "null" {
			continue
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(j); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if o.GetName() == "" {
			return nil, fmt.Errorf("document %d: %s without a name", i, o.GetKind())
		}
		objs = append(objs, o)
	}
}

// setNamespace is kustomize's namespace transformer for the kinds above: metadata.namespace
// of namespaced objects; the name of a v1 Namespace (kustomize renames it to the
// kustomization's namespace); role binding subjects named "default" (its defaultOnly mode;
// other subjects keep the namespace they name); a CRD's conversion webhook service.
func setNamespace(o *unstructured.Unstructured, gk schema.GroupKind, info kindInfo, ns string) error {
	if ns == "" {
		return nil
	}
	if info.namespaced {
		o.SetNamespace(ns)
	}
	switch {
	case gk.Kind == "Namespace" && o.GetAPIVersion() == "v1":
		o.SetName(ns)
	case gk.Group == "rbac.authorization.k8s.io" && (gk.Kind == "RoleBinding" || gk.Kind == "ClusterRoleBinding"):
		subjects, _, err := unstructured.NestedSlice(o.Object, "subjects")
		if err != nil {
			return err
		}
		for _, s := range subjects {
			if m, ok := s.(map[string]any); ok && m["name"] == "default" {
				m["namespace"] = ns
			}
		}
		if subjects != nil {
			return unstructured.SetNestedSlice(o.Object, subjects, "subjects")
		}
	case gk.Kind == "CustomResourceDefinition":
		path := []string{"spec", "conversion", "webhook", "clientConfig", "service"}
		if _, found, _ := unstructured.NestedMap(o.Object, path...); found {
			return unstructured.SetNestedField(o.Object, ns, append(path, "namespace")...)
		}
	}
	return nil
}

// setImage is kustomize's images transformer for one images: entry: the image of every
// container and init container, wherever in the object, and of every image volume of a pod
// (template) spec, if it names img.Name.
func setImage(obj map[string]any, img image) {
	setContainerImages(obj, img)
	for _, podSpec := range [][]string{{"spec"}, {"spec", "template", "spec"}} {
		vols, _, _ := unstructured.NestedSlice(obj, append(podSpec, "volumes")...)
		for _, vol := range vols {
			if vol, ok := vol.(map[string]any); ok {
				if ref, ok := vol["image"].(map[string]any); ok {
					replaceImage(ref, "reference", img)
				}
			}
		}
		if vols != nil {
			_ = unstructured.SetNestedSlice(obj, vols, append(podSpec, "volumes")...) // the path exists
		}
	}
}

func setContainerImages(v any, img image) {
	switch v := v.(type) {
	case map[string]any:
		for key, child := range v {
			setContainerImages(child, img)
			if list, ok := child.([]any); ok && (key == "containers" || key == "initContainers") {
				for _, c := range list {
					if c, ok := c.(map[string]any); ok {
						replaceImage(c, "image", img)
					}
				}
			}
		}
	case []any:
		for _, e := range v {
			setContainerImages(e, img)
		}
	}
}

// replaceImage rewrites m[key] if it names img.Name: a new name, and a new tag and/or digest
// that replace both the old tag and digest.
func replaceImage(m map[string]any, key string, img image) {
	ref, ok := m[key].(string)
	if !ok {
		return
	}
	name, tag, digest := splitImage(ref)
	if name != img.Name {
		return
	}
	if img.NewName != "" {
		name = img.NewName
	}
	if img.NewTag != "" || img.Digest != "" {
		tag, digest = img.NewTag, img.Digest
	}
	if tag != "" {
		name += ":" + tag
	}
	if digest != "" {
		name += "@" + digest
	}
	m[key] = name
}

// splitImage splits name[:tag][@digest]. A colon before the last slash is a registry port.
func splitImage(ref string) (name, tag, digest string) {
	name, digest, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
	}
	return name, tag, digest
}
