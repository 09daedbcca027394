package operator

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nmoverlay/nmoverlay/internal/serving"
)

func TestTLSProfileOf(t *testing.T) {
	apiServer := func(profile map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
		u.SetGroupVersionKind(APIServerGVK)
		if profile != nil {
			u.Object["spec"].(map[string]any)["tlsSecurityProfile"] = profile
		}
		return u
	}
	intermediate := "--tls-min-version=VersionTLS12 --tls-cipher-suites=" + strings.Join(serving.IntermediateCipherSuites, ",")
	for _, tc := range []struct {
		name      string
		apiServer *unstructured.Unstructured
		args, err string
	}{
		{name: "not OpenShift: Intermediate", args: intermediate},
		{name: "no profile set: Intermediate", apiServer: apiServer(nil), args: intermediate},
		{name: "Intermediate", apiServer: apiServer(map[string]any{"type": "Intermediate", "intermediate": map[string]any{}}), args: intermediate},
		{name: "Modern: TLS 1.3, whose suites Go does not let be chosen", apiServer: apiServer(map[string]any{"type": "Modern"}),
			args: "--tls-min-version=VersionTLS13"},
		{name: "Old: the suites Go implements, in the profile's order; DHE and CBC-SHA384 left out", apiServer: apiServer(map[string]any{"type": "Old"}),
			args: "--tls-min-version=VersionTLS10 --tls-cipher-suites=" + strings.Join(slices.Concat(serving.IntermediateCipherSuites, []string{
				"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
				"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
				"TLS_RSA_WITH_AES_128_GCM_SHA256", "TLS_RSA_WITH_AES_256_GCM_SHA384", "TLS_RSA_WITH_AES_128_CBC_SHA256",
				"TLS_RSA_WITH_AES_128_CBC_SHA", "TLS_RSA_WITH_AES_256_CBC_SHA", "TLS_RSA_WITH_3DES_EDE_CBC_SHA"}), ",")},
		{name: "Custom, OpenSSL and IANA names", apiServer: apiServer(map[string]any{"type": "Custom", "custom": map[string]any{
			"minTLSVersion": "VersionTLS12", "ciphers": []any{"ECDHE-RSA-AES256-GCM-SHA384", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "DHE-RSA-AES128-GCM-SHA256"}}}),
			args: "--tls-min-version=VersionTLS12 --tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"},
		{name: "Custom without a suite Go implements: refused, not Go's defaults", apiServer: apiServer(map[string]any{"type": "Custom", "custom": map[string]any{
			"minTLSVersion": "VersionTLS12", "ciphers": []any{"DHE-RSA-AES128-GCM-SHA256"}}}),
			err: `spec.tlsSecurityProfile.custom.ciphers: none of ["DHE-RSA-AES128-GCM-SHA256"] is a TLS 1.0-1.2 suite Go implements`},
		{name: "Custom with an unknown version", apiServer: apiServer(map[string]any{"type": "Custom", "custom": map[string]any{"minTLSVersion": "TLS1.2"}}),
			err: `spec.tlsSecurityProfile.custom.minTLSVersion: "TLS1.2" is not one of`},
		{name: "an unknown profile", apiServer: apiServer(map[string]any{"type": "Paranoid"}),
			err: `spec.tlsSecurityProfile.type: "Paranoid" is not one of Old, Intermediate, Modern, Custom`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := TLSProfileOf(tc.apiServer)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(p.Args(), " "); got != tc.args {
				t.Errorf("args\n %s\nwant\n %s", got, tc.args)
			}
		})
	}
}
