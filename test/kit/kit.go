// Package kit is what the test tiers share: a real kube-apiserver and etcd (envtest) with
// the nmstate.io CRDs, the scheme and a client; this module's binaries built once per test
// process; a Ready node as the kubelet reports it; medians.
package kit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nmoverlay/nmoverlay/api"
	"github.com/nmoverlay/nmoverlay/api/shared"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
)

// Module is the module's path, for Binary.
const Module = "github.com/nmoverlay/nmoverlay"

// Root is the module's root directory: the first directory up from the working directory
// (a test's package directory) that holds go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// API is a real kube-apiserver and etcd with the nmstate.io CRDs installed.
type API struct {
	Env    *envtest.Environment
	Config *rest.Config
	Scheme *kruntime.Scheme
	// Client is an administrator's client.
	Client client.Client
}

// StartAPI starts an API server from the binaries hack/kube-assets.sh built
// (KUBEBUILDER_ASSETS), with the CRDs of deploy/crds, nmoverlay's scheme (and
// apiextensions, to read the CRDs). configure, when given, adjusts the environment first
// (flags of the API server).
func StartAPI(configure ...func(*envtest.Environment)) (*API, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, fmt.Errorf("KUBEBUILDER_ASSETS is unset: run the tier with make (hack/kube-assets.sh builds kube-apiserver and etcd)")
	}
	root, err := Root()
	if err != nil {
		return nil, err
	}
	a := &API{Env: &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join(root, "deploy", "crds")}, ErrorIfCRDPathMissing: true}}
	for _, c := range configure {
		c(a.Env)
	}
	if a.Config, err = a.Env.Start(); err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd: %w", err)
	}
	if a.Scheme, err = api.NewScheme(); err == nil {
		err = apiextensionsv1.AddToScheme(a.Scheme)
	}
	if err == nil {
		a.Client, err = client.New(a.Config, client.Options{Scheme: a.Scheme})
	}
	if err != nil {
		_ = a.Env.Stop()
		return nil, err
	}
	return a, nil
}

// Stop stops the API server and etcd. An API server whose graceful termination outlasts
// envtest's stop timeout (a client's watch still draining) is killed, and envtest says so
// only in its error's text: when that is the whole error, the kill worked and etcd
// stopped, so nothing is left running.
func (a *API) Stop() error {
	err := a.Env.Stop()
	if err != nil && err.Error() == "timeout waiting for process kube-apiserver to stop" {
		return nil
	}
	return err
}

var builds struct {
	sync.Mutex
	dir  string
	bins map[string]string
}

// Binary builds cmd (a path in the module, e.g. "cmd/handler") as make build does (static,
// stripped) the first time a test process asks, and returns the binary's path: a suite
// that starts ten handler processes builds the handler once. RemoveBinaries removes them.
func Binary(cmd string) (string, error) {
	builds.Lock()
	defer builds.Unlock()
	if bin, ok := builds.bins[cmd]; ok {
		return bin, nil
	}
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "nmoverlay-bin-")
		if err != nil {
			return "", err
		}
		builds.dir, builds.bins = dir, map[string]string{}
	}
	bin := filepath.Join(builds.dir, strings.ReplaceAll(cmd, "/", "_"))
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, Module+"/"+cmd)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v: %s", cmd, err, out)
	}
	builds.bins[cmd] = bin
	return bin, nil
}

// RemoveBinaries removes what Binary built (at the end of a suite).
func RemoveBinaries() error {
	builds.Lock()
	defer builds.Unlock()
	dir := builds.dir
	builds.dir, builds.bins = "", nil
	if dir == "" {
		return nil
	}
	return os.RemoveAll(dir)
}

// ReadyNode creates a Node with these labels and reports it Ready, as the kubelet would.
func ReadyNode(ctx context.Context, k8s client.Client, name string, labels map[string]string) (*corev1.Node, error) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := k8s.Create(ctx, n); err != nil {
		return nil, err
	}
	SetReady(n, corev1.ConditionTrue)
	return n, k8s.Status().Update(ctx, n)
}

// SetReady sets the node's Ready condition (status only; the caller writes it).
func SetReady(n *corev1.Node, status corev1.ConditionStatus) {
	for i, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status != status {
				n.Status.Conditions[i].Status, n.Status.Conditions[i].LastTransitionTime = status, metav1.Now()
			}
			return
		}
	}
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: status, LastTransitionTime: metav1.Now()})
}

// Median is the median of ds (the mean of the middle two for an even count); 0 for none.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// EnactmentSummary reads the policy's enactment on the node as "<True condition> <boot>:
// <message>", "<none>" while there is none.
func EnactmentSummary(k8s client.Client, nodeName, policy string) func() string {
	return func() string {
		e := &v1beta1.NodeNetworkConfigurationEnactment{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: shared.EnactmentKey(nodeName, policy)}, e); err != nil {
			return "<none>"
		}
		for _, c := range e.Status.Conditions {
			if c.Status == metav1.ConditionTrue {
				return c.Type + " " + e.Status.BootID + ": " + c.Message
			}
		}
		return "<no condition>"
	}
}

// OpenCRD is a CRD of a kind the tiers do not otherwise serve (OLM's, MCO's), with an
// open schema: what the tests write of such objects is metadata and a few spec fields.
func OpenCRD(group, version, kind, plural string, namespaced bool) *apiextensionsv1.CustomResourceDefinition {
	scope := apiextensionsv1.ClusterScoped
	if namespaced {
		scope = apiextensionsv1.NamespaceScoped
	}
	open := true
	return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Scope: scope,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					XPreserveUnknownFields: &open}}}}}}
}

// AdminKubeconfig writes into dir a kubeconfig of a cluster administrator (system:masters)
// of a's API server, for commands run as an administrator runs them, and returns its path.
func (a *API) AdminKubeconfig(dir string) (string, error) {
	user, err := a.Env.AddUser(envtest.User{Name: "cluster-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, os.WriteFile(path, kc, 0o600)
}
