//go:build integration

package integration_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nmoverlay/nmoverlay/internal/serving"
)

// The daemons' metrics endpoint with the flags the operator renders (serving.TLSFlags):
// the cluster's TLS profile holds in real handshakes, and a certificate the service CA
// would write is the one served, verified for the metrics Service's name.
var _ = Describe("the metrics endpoint's TLS", func() {
	const serverName = "nmoverlay-handler-metrics.nmoverlay.svc"

	// serve starts a metrics server with the daemons' flags args; its address.
	serve := func(args ...string) string {
		GinkgoHelper()
		fs := flag.NewFlagSet("", flag.ContinueOnError)
		t := serving.TLSFlags(fs)
		Expect(fs.Parse(args)).To(Succeed())
		o, err := serving.Metrics("127.0.0.1:0", true, t)
		Expect(err).NotTo(HaveOccurred())
		hc, err := rest.HTTPClientFor(cfg)
		Expect(err).NotTo(HaveOccurred())
		srv, err := metricsserver.NewServer(o, cfg, hc)
		Expect(err).NotTo(HaveOccurred())
		ctx, stop := context.WithCancel(context.Background())
		DeferCleanup(stop)
		go func() { _ = srv.Start(ctx) }()
		bound := srv.(interface{ GetBindAddr() string })
		var addr string
		Eventually(func() string { addr = bound.GetBindAddr(); return addr }, "10s").ShouldNot(BeEmpty())
		return addr
	}
	handshake := func(addr string, c *tls.Config) (tls.ConnectionState, error) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, c)
		if err != nil {
			return tls.ConnectionState{}, err
		}
		defer conn.Close()
		return conn.ConnectionState(), nil
	}

	It("serves the service CA's certificate, and TLS 1.3 alone under the Modern profile", func() {
		dir, pool := serviceCACertificate(serverName)
		addr := serve("--tls-min-version=VersionTLS13", "--metrics-cert-dir="+dir)
		st, err := handshake(addr, &tls.Config{RootCAs: pool, ServerName: serverName})
		Expect(err).NotTo(HaveOccurred(), "verified with the CA, for the Service's name")
		Expect(st.Version).To(Equal(uint16(tls.VersionTLS13)))
		_, err = handshake(addr, &tls.Config{RootCAs: pool, ServerName: serverName, MaxVersion: tls.VersionTLS12})
		Expect(err).To(MatchError(ContainSubstring("protocol version")))
		_, err = handshake(addr, &tls.Config{RootCAs: pool, ServerName: "elsewhere.example"})
		Expect(err).To(HaveOccurred(), "not a certificate for another name")
	})

	It("accepts Intermediate's suites and refuses the others by default", func() {
		addr := serve()
		insecure := func(suite uint16) *tls.Config {
			return &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{suite}} //nolint:gosec // self-signed
		}
		_, err := handshake(addr, insecure(tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256))
		Expect(err).NotTo(HaveOccurred())
		_, err = handshake(addr, insecure(tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA))
		Expect(err).To(MatchError(ContainSubstring("handshake failure")), "a CBC suite, Old's only")
		_, err = handshake(addr, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}) //nolint:gosec // self-signed
		Expect(err).To(MatchError(ContainSubstring("protocol version")))
	})
})

// serviceCACertificate writes what OpenShift's service CA writes into a metrics Service's
// Secret, tls.crt and tls.key, for name, signed by a CA of its own; the directory and the
// CA's pool.
func serviceCACertificate(name string) (string, *x509.CertPool) {
	GinkgoHelper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "service-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	Expect(err).NotTo(HaveOccurred())
	caCert, err := x509.ParseCertificate(caDER)
	Expect(err).NotTo(HaveOccurred())
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalECPrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	dir := GinkgoT().TempDir()
	Expect(os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)).To(Succeed())
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return dir, pool
}
