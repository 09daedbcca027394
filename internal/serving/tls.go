package serving

import (
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// TLS is how a daemon serves metrics over HTTPS. The operator sets it from the cluster's
// TLS security profile (OpenShift's APIServer; Intermediate elsewhere) and, on OpenShift,
// points CertDir at the service CA's certificate for the metrics Service, so that
// Prometheus verifies whom it scrapes.
type TLS struct {
	// MinVersion is the lowest TLS version accepted: VersionTLS10 to VersionTLS13.
	MinVersion string
	// CipherSuites are the TLS 1.0-1.2 suites accepted, by their IANA names; TLS 1.3's are
	// always on, as Go has them.
	CipherSuites []string
	// CertDir holds tls.crt and tls.key (a kubernetes.io/tls Secret); empty: a self-signed
	// certificate.
	CertDir string
}

// IntermediateCipherSuites are the TLS 1.2 suites of Mozilla's Intermediate profile
// (OpenShift's default) that Go implements.
var IntermediateCipherSuites = []string{
	"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
	"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
}

var tlsVersions = map[string]uint16{
	"VersionTLS10": tls.VersionTLS10, "VersionTLS11": tls.VersionTLS11,
	"VersionTLS12": tls.VersionTLS12, "VersionTLS13": tls.VersionTLS13,
}

// CipherSuite is the ID of the TLS 1.0-1.2 cipher suite Go implements by the IANA name
// name; false for any other name, TLS 1.3's included (Go does not let them be chosen).
func CipherSuite(name string) (uint16, bool) {
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		if s.Name == name && !slices.Equal(s.SupportedVersions, []uint16{tls.VersionTLS13}) {
			return s.ID, true
		}
	}
	return 0, false
}

// defaultTLS is the Intermediate profile over a self-signed certificate.
func defaultTLS() *TLS {
	return &TLS{MinVersion: "VersionTLS12", CipherSuites: IntermediateCipherSuites}
}

// TLSFlags adds --tls-min-version, --tls-cipher-suites and --metrics-cert-dir to fs; their
// defaults are defaultTLS's.
func TLSFlags(fs *flag.FlagSet) *TLS {
	t := defaultTLS()
	fs.StringVar(&t.MinVersion, "tls-min-version", t.MinVersion, "lowest TLS version the metrics endpoint accepts: VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13")
	fs.Func("tls-cipher-suites", "comma-separated TLS 1.0-1.2 cipher suites the metrics endpoint accepts, by IANA name (default: Mozilla's Intermediate)", func(s string) error {
		t.CipherSuites = strings.Split(s, ",")
		return nil
	})
	fs.StringVar(&t.CertDir, "metrics-cert-dir", "", "directory with the metrics endpoint's tls.crt and tls.key (default: a self-signed certificate)")
	return t
}

// config is the TLS configuration t states, or what is wrong with it: a version or a suite
// Go does not know, or a certificate directory without its files (the service CA writes
// them shortly after the Service is created; the kubelet restarts the daemon until then).
func (t *TLS) config() (func(*tls.Config), error) {
	v, ok := tlsVersions[t.MinVersion]
	if !ok {
		return nil, fmt.Errorf("--tls-min-version: %q is not one of VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13", t.MinVersion)
	}
	var ids []uint16
	for _, name := range t.CipherSuites {
		id, ok := CipherSuite(strings.TrimSpace(name))
		if !ok {
			return nil, fmt.Errorf("--tls-cipher-suites: %q is not a TLS 1.0-1.2 cipher suite Go implements", name)
		}
		ids = append(ids, id)
	}
	if t.CertDir != "" {
		for _, f := range []string{"tls.crt", "tls.key"} {
			if _, err := os.Stat(filepath.Join(t.CertDir, f)); err != nil {
				return nil, fmt.Errorf("--metrics-cert-dir: %w", err)
			}
		}
	}
	return func(c *tls.Config) {
		c.MinVersion = v
		if len(ids) > 0 {
			c.CipherSuites = ids
		}
	}, nil
}
