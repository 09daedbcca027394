package serving

import (
	"crypto/tls"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestTLSFlags(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		args    []string
		min     uint16
		suites  []uint16
		certDir string
		err     string
	}{
		{name: "defaults: Intermediate", min: tls.VersionTLS12, suites: []uint16{
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256}},
		{name: "TLS 1.3", args: []string{"--tls-min-version=VersionTLS13"}, min: tls.VersionTLS13, suites: nil},
		{name: "suites of Old", args: []string{"--tls-min-version=VersionTLS10", "--tls-cipher-suites=TLS_RSA_WITH_3DES_EDE_CBC_SHA,TLS_RSA_WITH_AES_128_CBC_SHA"},
			min: tls.VersionTLS10, suites: []uint16{tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA, tls.TLS_RSA_WITH_AES_128_CBC_SHA}},
		{name: "a certificate", args: []string{"--metrics-cert-dir=" + dir}, min: tls.VersionTLS12, certDir: dir},
		{name: "an unknown version", args: []string{"--tls-min-version=TLSv1.2"}, err: `--tls-min-version: "TLSv1.2" is not one of`},
		{name: "an OpenSSL name", args: []string{"--tls-cipher-suites=ECDHE-RSA-AES128-GCM-SHA256"},
			err: `--tls-cipher-suites: "ECDHE-RSA-AES128-GCM-SHA256" is not a TLS 1.0-1.2 cipher suite Go implements`},
		{name: "a TLS 1.3 suite, which Go does not let be chosen", args: []string{"--tls-cipher-suites=TLS_AES_128_GCM_SHA256"},
			err: `"TLS_AES_128_GCM_SHA256" is not a TLS 1.0-1.2 cipher suite`},
		{name: "a certificate directory without the certificate yet", args: []string{"--metrics-cert-dir=" + t.TempDir()},
			err: "--metrics-cert-dir: stat "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("", flag.ContinueOnError)
			tt := TLSFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			o, err := Metrics(":0", true, tt)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := &tls.Config{}
			for _, f := range o.TLSOpts {
				f(c)
			}
			if c.MinVersion != tc.min {
				t.Errorf("MinVersion %x, want %x", c.MinVersion, tc.min)
			}
			if tc.suites != nil && !slices.Equal(c.CipherSuites, tc.suites) {
				t.Errorf("CipherSuites %x, want %x", c.CipherSuites, tc.suites)
			}
			if o.CertDir != tc.certDir || (tc.certDir != "" && (o.CertName != "tls.crt" || o.KeyName != "tls.key")) {
				t.Errorf("cert %q %q %q, want %q", o.CertDir, o.CertName, o.KeyName, tc.certDir)
			}
		})
	}
	// Plain HTTP (loopback only) takes no TLS at all.
	if o, err := Metrics("127.0.0.1:0", false, &TLS{MinVersion: "bogus"}); err != nil || o.SecureServing {
		t.Errorf("insecure: %+v %v", o, err)
	}
}
