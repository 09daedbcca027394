//go:build integration

// The integration tier: a real kube-apiserver and etcd (envtest), built from the Go module
// proxy by hack/kube-assets.sh. Later issues add the nmstate.io API and the controllers.
package integration_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nmoverlay/nmoverlay/test/kit"
)

var (
	env *envtest.Environment
	cfg *rest.Config
	k8s client.Client
	// monitoringCRDPath holds prometheus-operator's CRDs (hack/prometheus.sh); "" when not
	// given, outside CI.
	monitoringCRDPath string
)

func TestIntegration(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "integration tier: kube-apiserver + etcd")
}

var _ = BeforeSuite(func() {
	a, err := kit.StartAPI()
	Expect(err).NotTo(HaveOccurred())
	env, cfg, k8s = a.Env, a.Config, a.Client
	DeferCleanup(a.Stop)
	DeferCleanup(kit.RemoveBinaries)
	// prometheus-operator's CRDs, as on a cluster that has it (OpenShift's do): the operand's
	// ServiceMonitors and PrometheusRule are checked against their real schemas. The
	// operator's specs remove them first, to show what it does without them.
	dir := os.Getenv("NMOVERLAY_PROMETHEUS")
	if dir == "" {
		if os.Getenv("CI") == "true" {
			Fail("NMOVERLAY_PROMETHEUS is not set: make test-integration sets it (hack/prometheus.sh)")
		}
		return
	}
	monitoringCRDPath = filepath.Join(dir, "crds")
	_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{monitoringCRDPath}})
	Expect(err).NotTo(HaveOccurred())
	env.CRDDirectoryPaths = append(env.CRDDirectoryPaths, monitoringCRDPath)
})

var _ = Describe("the test API server", func() {
	ctx := context.Background()

	It("is a real kube-apiserver of the version built", func() {
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		v, err := dc.ServerVersion()
		Expect(err).NotTo(HaveOccurred())
		Expect(v.GitVersion).To(HavePrefix("v1."))
		Expect(v.GitVersion).NotTo(ContainSubstring("master"), "built without version ldflags")
		Expect(strings.Count(v.GitVersion, ".")).To(Equal(2))
		// The server answering is the binary hack/kube-assets.sh built.
		out, err := exec.Command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kube-apiserver"), "--version").Output()
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.TrimSpace(string(out))).To(Equal("Kubernetes " + v.GitVersion))
	})

	It("stores and serves objects, and validates them", func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "smoke"}}
		Expect(k8s.Create(ctx, ns)).To(Succeed())
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "smoke"}, Data: map[string]string{"k": "v"}}
		Expect(k8s.Create(ctx, cm)).To(Succeed())
		got := &corev1.ConfigMap{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cm), got)).To(Succeed())
		Expect(got.Data).To(HaveKeyWithValue("k", "v"))
		Expect(got.UID).NotTo(BeEmpty())

		bad := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Not_Valid", Namespace: "smoke"}}
		err := k8s.Create(ctx, bad)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
	})
})
