//go:build integration

package integration_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nmoverlay/nmoverlay/internal/serving"
)

// The daemons' metrics filter (serving.Authorized) against the real API server's
// TokenReview and SubjectAccessReview: no token or a token the API server does not know
// is 401, a service account without the right to get /metrics 403, one with it 200.
var _ = Describe("the metrics filter", Ordered, func() {
	const ns = "metrics-auth"
	ctx := context.Background()
	var addr string
	token := func(sa string) string {
		GinkgoHelper()
		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(3600))}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		return tr.Status.Token
	}
	get := func(bearer string) int {
		GinkgoHelper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		Expect(err).NotTo(HaveOccurred())
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the server's certificate is self-signed
		resp, err := c.Do(req)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		return resp.StatusCode
	}

	BeforeAll(func() {
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		for _, sa := range []string{"scraper", "nobody"} {
			Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}})).To(Succeed())
		}
		Expect(k8s.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "metrics-auth-reader"},
			Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}})).To(Succeed())
		Expect(k8s.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "metrics-auth-reader"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "metrics-auth-reader"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "scraper", Namespace: ns}}})).To(Succeed())

		hc, err := rest.HTTPClientFor(cfg)
		Expect(err).NotTo(HaveOccurred())
		o, err := serving.Metrics("127.0.0.1:0", true, nil)
		Expect(err).NotTo(HaveOccurred())
		srv, err := metricsserver.NewServer(o, cfg, hc)
		Expect(err).NotTo(HaveOccurred())
		sctx, stop := context.WithCancel(ctx)
		DeferCleanup(stop)
		go func() { _ = srv.Start(sctx) }()
		bound, ok := srv.(interface{ GetBindAddr() string }) // controller-runtime's server says where it listens
		Expect(ok).To(BeTrue())
		Eventually(func() string { addr = bound.GetBindAddr(); return addr }, "10s").ShouldNot(BeEmpty())
	})

	It("refuses a request without a token or with one the API server does not know: 401", func() {
		Expect(get("")).To(Equal(http.StatusUnauthorized))
		Expect(get("not-a-token")).To(Equal(http.StatusUnauthorized))
	})

	It("refuses a user who may not get /metrics: 403", func() {
		Expect(get(token("nobody"))).To(Equal(http.StatusForbidden))
	})

	It("serves a user who may get /metrics, twice (the second from the kept answer)", func() {
		t := token("scraper")
		Expect(get(t)).To(Equal(http.StatusOK))
		Expect(get(t)).To(Equal(http.StatusOK))
	})
})
