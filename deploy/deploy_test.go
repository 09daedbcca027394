package deploy_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/api/field"
	"github.com/nmoverlay/nmoverlay/deploy"
	"github.com/nmoverlay/nmoverlay/internal/serving"
	"github.com/nmoverlay/nmoverlay/internal/version"
)

// source is the kustomization and its resources as read from disk, parsed here
// independently of the package.
type source struct {
	Namespace string   `json:"namespace"`
	Resources []string `json:"resources"`
	Images    []struct {
		Name, NewName, NewTag, Digest string
	} `json:"images"`
	objects []*unstructured.Unstructured
}

func readSource(t *testing.T) source {
	t.Helper()
	var s source
	b, err := os.ReadFile(deploy.KustomizationFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	for _, r := range s.Resources {
		b, err := os.ReadFile(filepath.FromSlash(r))
		if err != nil {
			t.Fatal(err)
		}
		s.objects = append(s.objects, decodeAll(t, b)...)
	}
	if len(s.objects) == 0 || s.Namespace == "" {
		t.Fatalf("%s: no objects or no namespace", deploy.KustomizationFile)
	}
	return s
}

func decodeAll(t *testing.T, b []byte) []*unstructured.Unstructured {
	t.Helper()
	objs, err := deploy.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func id(o *unstructured.Unstructured) string {
	return o.GroupVersionKind().GroupKind().String() + "/" + o.GetName()
}

func objects(t *testing.T, opts deploy.Options) []*unstructured.Unstructured {
	t.Helper()
	objs, err := deploy.Objects(opts)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func TestEveryResourceOfTheKustomization(t *testing.T) {
	src := readSource(t)
	var want, got []string
	for _, o := range src.objects {
		want = append(want, id(o))
	}
	for _, o := range objects(t, deploy.Options{}) {
		got = append(got, id(o))
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("rendered objects\n%v\nwant the kustomization's resources\n%v", got, want)
	}
}

// clusterScoped are the kinds of the manifests that the Kubernetes API serves without a
// namespace (kubectl api-resources --namespaced=false).
var clusterScoped = []string{"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
	"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}

func TestNamespaceOnNamespacedObjectsOnly(t *testing.T) {
	src := readSource(t)
	namespaced := 0
	for _, o := range objects(t, deploy.Options{}) {
		want := src.Namespace
		if slices.Contains(clusterScoped, o.GetKind()) {
			want = ""
		} else {
			namespaced++
		}
		if o.GetNamespace() != want {
			t.Errorf("%s: namespace %q, want %q", id(o), o.GetNamespace(), want)
		}
		if o.GetKind() == "Namespace" && o.GetName() != src.Namespace {
			t.Errorf("Namespace %q, want the kustomization's %q", o.GetName(), src.Namespace)
		}
	}
	if namespaced == 0 {
		t.Error("no namespaced object rendered")
	}
}

// imagePaths returns the path and value of every container image (and image volume reference).
func imagePaths(prefix string, v any, out map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			if s, ok := c.(string); ok && (k == "image" || k == "reference") {
				out[prefix+"."+k] = s
			}
			imagePaths(prefix+"."+k, c, out)
		}
	case []any:
		for i, c := range v {
			imagePaths(fmt.Sprintf("%s[%d]", prefix, i), c, out)
		}
	}
}

func allImages(objs []*unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" { // schemas have "image"-free property names, but not ours to judge
			imagePaths(id(o), o.Object, out)
		}
	}
	return out
}

func TestImageReplacedWhereverTheManifestsNameIt(t *testing.T) {
	src := readSource(t)
	before := allImages(src.objects)
	var placeholders []string
	for path, img := range before {
		if img == deploy.ImageName {
			placeholders = append(placeholders, path)
		}
	}
	if len(placeholders) < 1 {
		t.Fatalf("the manifests name image %q only at %v", deploy.ImageName, placeholders)
	}
	var fromKustomization string
	for _, i := range src.Images {
		if i.Name == deploy.ImageName {
			fromKustomization = i.NewName + ":" + i.NewTag
		}
	}
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		image, want string
	}{
		{"", fromKustomization},
		{"registry.example/nmoverlay@" + digest, "registry.example/nmoverlay@" + digest},
		{"registry.example:5000/team/nmoverlay:v1.2.3", "registry.example:5000/team/nmoverlay:v1.2.3"},
		{"nmoverlay:dev", "nmoverlay:dev"},
		{"localhost/nmoverlay:v1@" + digest, "localhost/nmoverlay:v1@" + digest},
	} {
		t.Run(tc.image, func(t *testing.T) {
			after := allImages(objects(t, deploy.Options{Image: tc.image}))
			if len(after) != len(before) {
				t.Errorf("%d images after, %d before", len(after), len(before))
			}
			for path, img := range before {
				want := img
				if slices.Contains(placeholders, path) {
					want = tc.want
				}
				if after[path] != want {
					t.Errorf("%s: %q, want %q", path, after[path], want)
				}
			}
		})
	}
}

func TestInstallOrder(t *testing.T) {
	objs := objects(t, deploy.Options{})
	index := map[string]int{}
	for i, o := range objs {
		index[id(o)] = i
	}
	before := func(o *unstructured.Unstructured, dep string) {
		t.Helper()
		if i, ok := index[dep]; ok && i > index[id(o)] {
			t.Errorf("%s comes before %s, which it needs", id(o), dep)
		}
	}
	sawWorkload := false
	for _, o := range objs {
		switch {
		case o.GetNamespace() != "":
			before(o, "Namespace/"+o.GetNamespace())
		case o.GetKind() == "CustomResourceDefinition":
			for _, p := range objs[:index[id(o)]] {
				if p.GetKind() != "Namespace" && p.GetKind() != "CustomResourceDefinition" {
					t.Errorf("CRD %s after %s", o.GetName(), id(p))
				}
			}
		}
		policy, _, _ := unstructured.NestedString(o.Object, "spec", "policyName")
		if o.GetKind() == "ValidatingAdmissionPolicyBinding" {
			if _, ok := index["ValidatingAdmissionPolicy.admissionregistration.k8s.io/"+policy]; !ok {
				t.Errorf("%s binds %q, which is not rendered", id(o), policy)
			}
			before(o, "ValidatingAdmissionPolicy.admissionregistration.k8s.io/"+policy)
		}
		if role, ok, _ := unstructured.NestedString(o.Object, "roleRef", "name"); ok {
			kind, _, _ := unstructured.NestedString(o.Object, "roleRef", "kind")
			before(o, kind+".rbac.authorization.k8s.io/"+role)
		}
		if sa, ok, _ := unstructured.NestedString(o.Object, "spec", "template", "spec", "serviceAccountName"); ok {
			sawWorkload = true
			before(o, "ServiceAccount/"+sa)
		}
	}
	if !sawWorkload || objs[0].GetKind() != "Namespace" {
		t.Errorf("want the Namespace first and a workload: %v", index)
	}
}

// kustomization builds an in-memory deploy directory.
func kustomization(k string, files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{deploy.KustomizationFile: {Data: []byte(k)}}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return fsys
}

// transformFixture is a kustomization with the namespace and images transformations on
// inputs deploy/ does not have (yet); the integration tier renders it with kubectl kustomize
// too.
const transformFixture = "testdata/transform"

// The transformations kustomize documents for its namespace and images fields.
func TestKustomizeTransformations(t *testing.T) {
	const digest = "sha256:abababababababababababababababababababababababababababababababab"
	fsys := os.DirFS(transformFixture)
	objs, err := deploy.ObjectsFrom(fsys, deploy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetKind())
	}
	wantKinds := []string{"Namespace", "CustomResourceDefinition", "ClusterRoleBinding", "RoleBinding", "ValidatingAdmissionPolicy",
		"ValidatingAdmissionPolicyBinding", "Deployment"}
	if !slices.Equal(kinds, wantKinds) {
		t.Fatalf("kinds %v, want %v", kinds, wantKinds)
	}
	get := func(o *unstructured.Unstructured, path ...string) any {
		t.Helper()
		var v any = o.Object
		for _, p := range path {
			switch c := v.(type) {
			case map[string]any:
				v = c[p]
			case []any:
				var i int
				fmt.Sscan(p, &i)
				v = c[i]
			}
		}
		return v
	}
	for _, c := range []struct {
		obj  *unstructured.Unstructured
		path string
		want any
	}{
		{objs[0], "metadata.name", "ns1"},
		{objs[1], "spec.conversion.webhook.clientConfig.service.namespace", "ns1"},
		{objs[1], "metadata.namespace", nil},
		{objs[2], "subjects.0.namespace", "ns1"},       // named default
		{objs[2], "subjects.1.namespace", "elsewhere"}, // any other keeps its namespace
		{objs[2], "subjects.2.namespace", nil},
		{objs[3], "metadata.namespace", "ns1"},
		{objs[3], "subjects.0.namespace", "ns1"},
		{objs[3], "subjects.1.namespace", "elsewhere"},
		{objs[4], "metadata.namespace", nil},
		{objs[6], "metadata.namespace", "ns1"},
		{objs[6], "spec.template.spec.initContainers.0.image", "reg.example/app@" + digest}, // a digest replaces the tag
		{objs[6], "spec.template.spec.containers.0.image", "reg.example/app@" + digest},
		{objs[6], "spec.template.spec.containers.1.image", "side:v2"}, // a tag replaces the digest
		{objs[6], "spec.template.spec.containers.2.image", "application"},
		{objs[6], "spec.template.spec.containers.3.image", "reg.example/app"},
		{objs[6], "spec.template.spec.volumes.0.image.reference", "reg.example/app@" + digest},
	} {
		if got := get(c.obj, strings.Split(c.path, ".")...); got != c.want {
			t.Errorf("%s %s: %v, want %v", id(c.obj), c.path, got, c.want)
		}
	}
}

// Any kustomization kustomize accepts renders, with the image override on top.
func TestKustomizeFeatures(t *testing.T) {
	const k = "kind: Kustomization\nnamespace: ns1\nlabels: [{pairs: {team: net}}]\nnamePrefix: p-\n" +
		"resources: [a.yaml]\nimages: [{name: nmoverlay, newTag: old}]\n"
	fsys := kustomization(k, map[string]string{"a.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n" +
		"spec: {template: {spec: {containers: [{name: c, image: nmoverlay}]}}}\n"})
	objs, err := deploy.ObjectsFrom(fsys, deploy.Options{Image: "reg.example/nmoverlay:new"})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 {
		t.Fatalf("%d objects, want 1", len(objs))
	}
	o := objs[0]
	img, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	if o.GetName() != "p-d" || o.GetNamespace() != "ns1" || o.GetLabels()["team"] != "net" ||
		len(img) != 1 || img[0].(map[string]any)["image"] != "reg.example/nmoverlay:new" {
		t.Errorf("got %v", o.Object)
	}
}

func TestRejects(t *testing.T) {
	const ns = "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns1}\n"
	for _, tc := range []struct {
		name string
		fsys fstest.MapFS
		opts deploy.Options
		want string
	}{
		{"unknown kind", kustomization("kind: Kustomization\nresources: [a.yaml]",
			map[string]string{"a.yaml": ns + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"}),
			deploy.Options{}, "ConfigMap"},
		{"known kind, other group", kustomization("kind: Kustomization\nresources: [a.yaml]",
			map[string]string{"a.yaml": "apiVersion: example.com/v1\nkind: Deployment\nmetadata: {name: d}\n"}),
			deploy.Options{}, "Deployment.example.com"},
		{"missing resource", kustomization("kind: Kustomization\nresources: [a.yaml, b.yaml]",
			map[string]string{"a.yaml": ns}), deploy.Options{}, "b.yaml"},
		{"duplicate", kustomization("kind: Kustomization\nresources: [a.yaml, b.yaml]",
			map[string]string{"a.yaml": ns, "b.yaml": ns}), deploy.Options{}, "already registered id"},
		{"no kind", kustomization("kind: Kustomization\nresources: [a.yaml]",
			map[string]string{"a.yaml": "apiVersion: v1\nmetadata: {name: x}\n"}), deploy.Options{}, "missing kind"},
		{"bad image", kustomization("kind: Kustomization\nresources: [a.yaml]",
			map[string]string{"a.yaml": ns}), deploy.Options{Image: "reg.example/nm overlay"}, `image: "reg.example/nm overlay"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := deploy.ObjectsFrom(tc.fsys, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
			if objs != nil {
				t.Errorf("objects despite the error: %v", objs)
			}
		})
	}
}

func TestValidateImage(t *testing.T) {
	const d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, ok := range []string{
		"nmoverlay", "nmoverlay:v1", "quay.io/nmoverlay/nmoverlay:latest", "registry.example/nmoverlay@" + d,
		"registry.example:5000/a/b_c__d-e:1.0-rc.1", "localhost:5000/nmoverlay", "[::1]:5000/nmoverlay:x", "reg/app:v1@" + d,
	} {
		if err := deploy.ValidateImage(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{
		"", " ", "nm overlay", "NMoverlay", "nmoverlay:", "nmoverlay:-x", "nmoverlay@sha256:abc", "nmoverlay@" + d[:70],
		"nmoverlay@" + d + "0", "/nmoverlay", "nmoverlay/", "reg.example//nmoverlay", "nmoverlay\n", "nmoverlay:" + strings.Repeat("t", 129),
	} {
		err := deploy.ValidateImage(bad)
		var e *field.Error
		if !errors.As(err, &e) || e.Path != "image" {
			t.Errorf("%q: error %v, want a *field.Error for field image", bad, err)
		}
	}
}

func TestRenderDecodesToObjects(t *testing.T) {
	b, err := deploy.Render(deploy.Options{Image: "registry.example/nmoverlay:v9"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("---\n")) {
		t.Errorf("the stream does not start with a document separator")
	}
	want := objects(t, deploy.Options{Image: "registry.example/nmoverlay:v9"})
	got := decodeAll(t, b)
	if len(got) != len(want) {
		t.Fatalf("%d documents, want %d", len(got), len(want))
	}
	for i := range want {
		if id(got[i]) != id(want[i]) || got[i].GetNamespace() != want[i].GetNamespace() {
			t.Errorf("document %d is %s, want %s", i, id(got[i]), id(want[i]))
		}
	}
	if !bytes.Contains(b, []byte("image: registry.example/nmoverlay:v9\n")) {
		t.Error("the image override is not in the stream")
	}
}

// TestHandlerPorts: the DaemonSet serves the handler's metrics where the binary's defaults
// (and the port list in docs/installing.md) say, in the host-service range, and probes its health on
// loopback, where it listens.
func TestHandlerPorts(t *testing.T) {
	var handler map[string]any
	operand, err := deploy.Operand(deploy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range operand {
		if o.GetKind() == "DaemonSet" {
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			handler = containers[0].(map[string]any)
		}
	}
	if handler == nil {
		t.Fatal("no DaemonSet")
	}
	args, _, _ := unstructured.NestedStringSlice(handler, "args")
	health := fmt.Sprintf("127.0.0.1:%d", serving.HandlerHealthPort)
	for _, want := range []string{fmt.Sprintf("--metrics-bind-address=:%d", serving.HandlerMetricsPort), "--health-probe-bind-address=" + health} {
		if !slices.Contains(args, want) {
			t.Errorf("handler args %q lack %s", args, want)
		}
	}
	if serving.HandlerMetricsAddr != fmt.Sprintf(":%d", serving.HandlerMetricsPort) || serving.HandlerHealthAddr != health {
		t.Errorf("the binary's defaults %s, %s differ from the manifest's", serving.HandlerMetricsAddr, serving.HandlerHealthAddr)
	}
	if serving.HandlerMetricsPort < 9000 || serving.HandlerMetricsPort > 9999 {
		t.Errorf("metrics port %d is outside OpenShift's host-service range 9000-9999", serving.HandlerMetricsPort)
	}
	for _, probe := range []string{"livenessProbe", "readinessProbe"} {
		host, _, _ := unstructured.NestedString(handler, probe, "httpGet", "host")
		port, _, _ := unstructured.NestedInt64(handler, probe, "httpGet", "port")
		if host != "127.0.0.1" || port != serving.HandlerHealthPort {
			t.Errorf("%s probes %s:%d, want %s", probe, host, port, health)
		}
	}
}

// TestOperandImage: the operand the operator renders with its own image runs it in every
// container, in the operator's namespace.
func TestOperandImage(t *testing.T) {
	const image = "registry.example/nmoverlay:v7"
	operand, err := deploy.Operand(deploy.Options{Image: image, Namespace: "elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	images := allImages(operand)
	if len(images) < 3 {
		t.Fatalf("the operand runs images at %v only", images)
	}
	for path, img := range images {
		if img != image {
			t.Errorf("%s: %q, want %q", path, img, image)
		}
	}
	for _, o := range operand {
		if slices.Contains(clusterScoped, o.GetKind()) {
			continue
		}
		if o.GetNamespace() != "elsewhere" {
			t.Errorf("%s: namespace %q, want elsewhere", id(o), o.GetNamespace())
		}
	}
	for _, o := range operand {
		subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		for _, s := range subjects {
			if ns := s.(map[string]any)["namespace"]; ns != "elsewhere" {
				t.Errorf("%s: a subject in namespace %v, want elsewhere", id(o), ns)
			}
		}
	}
}

// The manifests install the image of the release they are part of: its tag is the
// release (internal/version/RELEASE), so that a release's deploy/ never installs another's.
func TestImageTagIsTheRelease(t *testing.T) {
	src := readSource(t)
	for _, i := range src.Images {
		if i.Name == deploy.ImageName && i.NewTag != version.Release() {
			t.Errorf("%s: image %s has tag %q; the release is %q (internal/version/RELEASE)", deploy.KustomizationFile, i.NewName, i.NewTag, version.Release())
		}
	}
}
