//go:build integration

package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/deploy"
)

// kustomizeDir is deploy/ as kubectl apply -k reads it.
const kustomizeDir = "../../deploy"

// decodeYAMLStream parses a multi-document YAML stream, skipping empty documents.
func decodeYAMLStream(b []byte) []*unstructured.Unstructured {
	GinkgoHelper()
	objs, err := deploy.Decode(b)
	Expect(err).NotTo(HaveOccurred())
	return objs
}

// namespaced asks the API server whether o's kind is namespaced.
func namespaced(o *unstructured.Unstructured) bool {
	GinkgoHelper()
	gvk := o.GroupVersionKind()
	mapping, err := k8s.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	Expect(err).NotTo(HaveOccurred(), "%s", gvk)
	return mapping.Scope.Name() == meta.RESTScopeNameNamespace
}

// asServed keys objects by kind, namespace and name, each as JSON would carry it to the API
// server, without a metadata.namespace on a cluster-scoped kind: the API server drops it,
// and kustomize sets it on ValidatingAdmissionPolicy(Binding), which its built-in schema
// (Kubernetes 1.21) does not know to be cluster-scoped.
func asServed(objs []*unstructured.Unstructured) map[string]map[string]any {
	GinkgoHelper()
	out := map[string]map[string]any{}
	for _, o := range objs {
		o = o.DeepCopy()
		if !namespaced(o) {
			o.SetNamespace("")
		}
		key := o.GroupVersionKind().GroupKind().String() + " " + o.GetNamespace() + "/" + o.GetName()
		Expect(out).NotTo(HaveKey(key))
		b, err := json.Marshal(o.Object)
		Expect(err).NotTo(HaveOccurred())
		var v map[string]any
		Expect(json.Unmarshal(b, &v)).To(Succeed())
		out[key] = v
	}
	return out
}

var _ = Describe("removing nmoverlay with kubectl delete -k", Ordered, func() {
	ctx := context.Background()
	var (
		kubectl   func(stdin []byte, args ...string) []byte
		rendered  []*unstructured.Unstructured
		nsName    string
		clientset *kubernetes.Clientset
		dyn       *dynamic.DynamicClient
	)

	// get reads o's current state from the API server.
	get := func(o *unstructured.Unstructured) error {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GroupVersionKind())
		return k8s.Get(ctx, client.ObjectKeyFromObject(o), got)
	}

	// finalizeNamespace does the namespace controller's job, which envtest does not run
	// (there is no kube-controller-manager): it deletes whatever is left in the namespace,
	// then clears the namespace's "kubernetes" finalizer through the finalize subresource,
	// upon which the API server deletes the Namespace. Without it the namespace would stay
	// Terminating and every later spec that creates an object in it would be refused.
	finalizeNamespace := func(name string) {
		GinkgoHelper()
		Expect(name).NotTo(BeEmpty(), "no namespace: that would empty them all")
		lists, err := discovery.ServerPreferredNamespacedResources(clientset.Discovery())
		Expect(err).NotTo(HaveOccurred())
		for _, l := range lists {
			gv, err := schema.ParseGroupVersion(l.GroupVersion)
			Expect(err).NotTo(HaveOccurred())
			for _, r := range l.APIResources {
				if !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "delete") {
					continue
				}
				res := dyn.Resource(gv.WithResource(r.Name)).Namespace(name)
				items, err := res.List(ctx, metav1.ListOptions{})
				Expect(err).NotTo(HaveOccurred(), "%s %s", l.GroupVersion, r.Name)
				for _, it := range items.Items {
					// No kubelet confirms a Pod's end: delete at once.
					err := res.Delete(ctx, it.GetName(), metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
					Expect(client.IgnoreNotFound(err)).To(Succeed())
				}
			}
		}
		ns, err := clientset.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		Expect(err).NotTo(HaveOccurred())
		Expect(ns.DeletionTimestamp).NotTo(BeNil(), "finalizing a namespace nobody deleted")
		ns.Spec.Finalizers = slices.DeleteFunc(ns.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
		_, err = clientset.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
		Expect(client.IgnoreNotFound(err)).To(Succeed())
		Eventually(func() bool {
			_, err := clientset.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(30*time.Second).Should(BeTrue(), "namespace %s still there after finalizing", name)
	}

	// crdProgress says why a CRD is still there, if it is one that is being deleted.
	crdProgress := func(name string) string {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if k8s.Get(ctx, client.ObjectKey{Name: name}, crd) != nil || crd.DeletionTimestamp == nil {
			return ""
		}
		var conds []string
		for _, c := range crd.Status.Conditions {
			conds = append(conds, string(c.Type)+"="+string(c.Status)+" "+c.Reason+": "+c.Message)
		}
		return " (being deleted: " + strings.Join(conds, "; ") + ")"
	}

	// awaitInstanceStorage waits until the API server can list all instances of each of our
	// CRDs. It builds a CRD's storage on first use, and the CRD finalizer that deletes a
	// deleted CRD's instances lists them all, which fails while that storage's watch cache
	// is still initializing ("storage is (re)initializing"); it then retries with a growing
	// backoff, and a CRD deleted right after it was created can stay Terminating for minutes.
	// A list without a limit is answered from that same watch cache.
	awaitInstanceStorage := func() {
		GinkgoHelper()
		for _, o := range rendered {
			if o.GetKind() != "CustomResourceDefinition" {
				continue
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			err := k8s.Get(ctx, client.ObjectKey{Name: o.GetName()}, crd)
			if apierrors.IsNotFound(err) {
				continue
			}
			Expect(err).NotTo(HaveOccurred())
			for _, v := range crd.Spec.Versions {
				gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural}
				start := time.Now()
				Eventually(func() error {
					_, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
					return err
				}).WithTimeout(5*time.Minute).WithPolling(100*time.Millisecond).Should(Succeed(), "listing %s", gvr)
				GinkgoWriter.Printf("%s listable after %s\n", gvr, time.Since(start))
			}
		}
	}

	// remaining lists every rendered object the API server still has, but the Namespace.
	remaining := func() []string {
		var left []string
		for _, o := range rendered {
			if o.GetKind() == "Namespace" {
				continue
			}
			switch err := get(o); {
			case err == nil:
				left = append(left, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()+crdProgress(o.GetName()))
			case !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err):
				left = append(left, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()+": "+err.Error())
			}
		}
		return left
	}

	BeforeAll(func() {
		bin := os.Getenv("KUBECTL")
		Expect(bin).NotTo(BeEmpty(), "KUBECTL is unset: run make test-integration (hack/kube-assets.sh builds kubectl from the Go module proxy)")
		user, err := env.AddUser(envtest.User{Name: "kubectl-admin", Groups: []string{"system:masters"}}, nil)
		Expect(err).NotTo(HaveOccurred())
		kc, err := user.KubeConfig()
		Expect(err).NotTo(HaveOccurred())
		dir := GinkgoT().TempDir()
		kubeconfig := filepath.Join(dir, "kubeconfig")
		Expect(os.WriteFile(kubeconfig, kc, 0o600)).To(Succeed())
		kubectl = func(stdin []byte, args ...string) []byte {
			GinkgoHelper()
			// Its own discovery cache: nothing under $HOME, nothing stale from another run.
			cmd := exec.Command(bin, append([]string{"--kubeconfig", kubeconfig, "--cache-dir", filepath.Join(dir, "cache")}, args...)...)
			cmd.Stdin = bytes.NewReader(stdin)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			out := stdout.String()
			if len(out) > 4096 { // kustomize's output: the specs compare it
				out = out[:4096] + "...\n"
			}
			GinkgoWriter.Printf("kubectl %s\n%s%s", strings.Join(args, " "), stderr.String(), out)
			Expect(err).NotTo(HaveOccurred(), "kubectl %s: %s", strings.Join(args, " "), stderr.String())
			return stdout.Bytes()
		}
		clientset, err = kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		quiet := rest.CopyConfig(cfg)
		quiet.WarningHandler = rest.NoWarnings{} // finalizeNamespace lists every kind, deprecated ones too
		dyn, err = dynamic.NewForConfig(quiet)
		Expect(err).NotTo(HaveOccurred())

		rendered, err = deploy.Objects(deploy.Options{})
		Expect(err).NotTo(HaveOccurred())
		for _, o := range rendered {
			if o.GetKind() == "Namespace" {
				nsName = o.GetName()
			}
		}
		Expect(nsName).NotTo(BeEmpty(), "the manifests have no Namespace")
	})

	// Whatever happened above, leave the API server as the suite set it up: nothing of the
	// deploy manifests installed, and the CRDs installed exactly as BeforeSuite did.
	AfterAll(func() {
		if kubectl == nil || nsName == "" { // BeforeAll failed: nothing was changed
			return
		}
		awaitInstanceStorage()
		kubectl(nil, "delete", "-k", kustomizeDir, "--ignore-not-found", "--wait=false")
		Eventually(remaining).WithTimeout(2 * time.Minute).Should(BeEmpty())
		finalizeNamespace(nsName)
		_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: env.CRDDirectoryPaths, ErrorIfPathMissing: env.ErrorIfCRDPathMissing})
		Expect(err).NotTo(HaveOccurred())
	})

	It("renders what kubectl kustomize renders, every object, the operator's and the operand's", func() {
		operand, err := deploy.Operand(deploy.Options{})
		Expect(err).NotTo(HaveOccurred())
		for dir, objs := range map[string][]*unstructured.Unstructured{kustomizeDir: rendered, filepath.Join(kustomizeDir, deploy.OperandDir): operand} {
			want := asServed(decodeYAMLStream(kubectl(nil, "kustomize", dir)))
			got := asServed(objs)
			Expect(slices.Sorted(maps.Keys(got))).To(Equal(slices.Sorted(maps.Keys(want))))
			for key, w := range want {
				Expect(got[key]).To(Equal(w), key)
			}
		}
		// And its scopes are the API server's: a namespace on exactly the namespaced objects.
		for _, o := range rendered {
			Expect(o.GetNamespace() != "").To(Equal(namespaced(o)), "%s %s", o.GetKind(), o.GetName())
		}
	})

	It("transforms as kubectl kustomize does beyond what deploy/ uses today", func() {
		// deploy's own fixture: kustomize transformations on inputs deploy/ does not have yet
		// (deploy_test.go checks the results themselves).
		dir := filepath.Join(kustomizeDir, "testdata", "transform")
		objs, err := deploy.ObjectsFrom(os.DirFS(dir), deploy.Options{})
		Expect(err).NotTo(HaveOccurred())
		want := asServed(decodeYAMLStream(kubectl(nil, "kustomize", dir)))
		Expect(asServed(objs)).To(Equal(want))
	})

	It("installs with kubectl apply -k, over the CRDs the suite installed", func() {
		kubectl(nil, "apply", "-k", kustomizeDir)
		for _, o := range rendered {
			Expect(get(o)).To(Succeed(), "%s %s", o.GetKind(), o.GetName())
		}

		// Instances of each of our kinds, for the removal to take along.
		node := "removal-node"
		p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "removal-policy"}}
		p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
		p.Spec.DesiredState = shared.State{Raw: []byte(`{"interfaces":[{"name":"eth1","type":"ethernet","state":"up"}]}`)}
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Expect(k8s.Create(ctx, &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{
			Name:   shared.EnactmentKey(node, p.Name),
			Labels: map[string]string{shared.NodeLabel: node, shared.PolicyLabel: p.Name},
		}})).To(Succeed())
		Expect(k8s.Create(ctx, &v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: node}})).To(Succeed())
	})

	It("is removed by kubectl delete -k: the CRDs with every instance, and every other object", func() {
		awaitInstanceStorage()
		// --wait=false: the Namespace never finishes terminating here (below).
		kubectl(nil, "delete", "-k", kustomizeDir, "--wait=false")

		// The API server itself removes a deleted CRD's instances, then the CRD. Every other
		// object is deleted outright: no finalizers, and background propagation.
		Eventually(remaining).WithTimeout(2 * time.Minute).Should(BeEmpty())
		for _, list := range []client.ObjectList{
			&nmstatev1.NodeNetworkConfigurationPolicyList{},
			&v1beta1.NodeNetworkConfigurationEnactmentList{},
			&v1beta1.NodeNetworkStateList{},
		} {
			err := k8s.List(ctx, list)
			Expect(apierrors.IsNotFound(err) || meta.IsNoMatchError(err)).To(BeTrue(), "listing %T: %v", list, err)
		}

		// Emptying a terminating namespace and then deleting it is the namespace
		// controller's job, in kube-controller-manager, which envtest does not run: the
		// Namespace gets as far as Terminating.
		ns := &corev1.Namespace{}
		err := k8s.Get(ctx, client.ObjectKey{Name: nsName}, ns)
		if !apierrors.IsNotFound(err) {
			Expect(err).NotTo(HaveOccurred())
			Expect(ns.Status.Phase).To(Equal(corev1.NamespaceTerminating))
		}
		finalizeNamespace(nsName)
	})

	It("installs in one go from nmoverlay render's stream, with kubectl apply -f -", func() {
		// Nothing of nmoverlay is left: not the CRDs, not the Namespace. One apply must
		// create everything in order.
		Expect(remaining()).To(BeEmpty())
		const image = "registry.example/nmoverlay:removal-test"
		stream, err := deploy.Render(deploy.Options{Image: image})
		Expect(err).NotTo(HaveOccurred())
		kubectl(stream, "apply", "-f", "-")
		var crds []string
		for _, o := range rendered {
			Expect(get(o)).To(Succeed(), "%s %s", o.GetKind(), o.GetName())
			if o.GetKind() == "CustomResourceDefinition" {
				crds = append(crds, "crd/"+o.GetName())
			}
		}
		kubectl(nil, append([]string{"wait", "--for=condition=Established", "--timeout=60s"}, crds...)...)
		// The operator runs the image (and deploys the handler and the controller with its own).
		d := &unstructured.Unstructured{}
		for _, o := range rendered {
			if o.GetKind() == "Deployment" {
				d.SetGroupVersionKind(o.GroupVersionKind())
				Expect(k8s.Get(ctx, client.ObjectKeyFromObject(o), d)).To(Succeed())
			}
		}
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		Expect(containers).To(HaveLen(1))
		Expect(containers[0]).To(HaveKeyWithValue("image", image))
		// AfterAll removes it again.
	})
})
