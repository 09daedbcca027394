package operator

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nmoverlay/nmoverlay/internal/serving"
)

// APIServerGVK is OpenShift's cluster-wide API server configuration; the one object is
// named cluster. Its spec.tlsSecurityProfile is the TLS every served endpoint of the
// cluster's components follows.
var APIServerGVK = schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "APIServer"}

// TLSProfile is a TLS security profile as OpenShift's APIServer states it: a minimum
// version (VersionTLS12) and ciphers by their OpenSSL names (ECDHE-RSA-AES128-GCM-SHA256).
type TLSProfile struct {
	// Type is the profile's name (Old, Intermediate, Modern, Custom), for the log.
	Type          string
	MinTLSVersion string
	Ciphers       []string
}

// The profiles OpenShift names, as its API defines them (openshift/api config/v1,
// TLSProfiles; Mozilla's server-side TLS recommendations).
var (
	tls13Ciphers = []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}

	intermediateCiphers = append(append([]string{}, tls13Ciphers...),
		"ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
		"ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
		"DHE-RSA-AES128-GCM-SHA256", "DHE-RSA-AES256-GCM-SHA384")

	TLSProfiles = map[string]TLSProfile{
		"Old": {Type: "Old", MinTLSVersion: "VersionTLS10", Ciphers: append(append([]string{}, intermediateCiphers...),
			"DHE-RSA-CHACHA20-POLY1305", "ECDHE-ECDSA-AES128-SHA256", "ECDHE-RSA-AES128-SHA256", "ECDHE-ECDSA-AES128-SHA",
			"ECDHE-RSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA384", "ECDHE-RSA-AES256-SHA384", "ECDHE-ECDSA-AES256-SHA",
			"ECDHE-RSA-AES256-SHA", "DHE-RSA-AES128-SHA256", "DHE-RSA-AES256-SHA256", "AES128-GCM-SHA256",
			"AES256-GCM-SHA384", "AES128-SHA256", "AES256-SHA256", "AES128-SHA", "AES256-SHA", "DES-CBC3-SHA")},
		"Intermediate": {Type: "Intermediate", MinTLSVersion: "VersionTLS12", Ciphers: intermediateCiphers},
		"Modern":       {Type: "Modern", MinTLSVersion: "VersionTLS13", Ciphers: tls13Ciphers},
	}
)

// DefaultTLSProfile is OpenShift's default, and nmoverlay's where the cluster states none.
const DefaultTLSProfile = "Intermediate"

// TLSProfileOf reads an APIServer's spec.tlsSecurityProfile: a named profile, or Custom's
// own version and ciphers. nil, or no profile set, is the default.
func TLSProfileOf(apiServer *unstructured.Unstructured) (TLSProfile, error) {
	if apiServer == nil {
		return TLSProfiles[DefaultTLSProfile], nil
	}
	typ, _, _ := unstructured.NestedString(apiServer.Object, "spec", "tlsSecurityProfile", "type")
	switch typ {
	case "":
		return TLSProfiles[DefaultTLSProfile], nil
	case "Custom":
		min, _, _ := unstructured.NestedString(apiServer.Object, "spec", "tlsSecurityProfile", "custom", "minTLSVersion")
		ciphers, _, _ := unstructured.NestedStringSlice(apiServer.Object, "spec", "tlsSecurityProfile", "custom", "ciphers")
		if _, ok := tlsVersions[min]; !ok {
			return TLSProfile{}, fmt.Errorf("APIServer cluster: spec.tlsSecurityProfile.custom.minTLSVersion: %q is not one of VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13", min)
		}
		p := TLSProfile{Type: typ, MinTLSVersion: min, Ciphers: ciphers}
		if min != "VersionTLS13" && len(p.suites()) == 0 {
			// Go's defaults would then apply: more than the profile allows.
			return TLSProfile{}, fmt.Errorf("APIServer cluster: spec.tlsSecurityProfile.custom.ciphers: none of %q is a TLS 1.0-1.2 suite Go implements", ciphers)
		}
		return p, nil
	}
	p, ok := TLSProfiles[typ]
	if !ok {
		return TLSProfile{}, fmt.Errorf("APIServer cluster: spec.tlsSecurityProfile.type: %q is not one of Old, Intermediate, Modern, Custom", typ)
	}
	return p, nil
}

var tlsVersions = map[string]bool{"VersionTLS10": true, "VersionTLS11": true, "VersionTLS12": true, "VersionTLS13": true}

// ianaCiphers are the IANA names (Go's) of the OpenSSL-named suites Go's TLS 1.0-1.2
// implements. The others are left out: DHE and the CBC-SHA384 suites Go lacks, and the TLS
// 1.3 suites, which Go always offers and does not let be chosen.
var ianaCiphers = map[string]string{
	"ECDHE-ECDSA-AES128-GCM-SHA256": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
	"ECDHE-RSA-AES128-GCM-SHA256":   "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"ECDHE-ECDSA-AES256-GCM-SHA384": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
	"ECDHE-RSA-AES256-GCM-SHA384":   "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
	"ECDHE-ECDSA-CHACHA20-POLY1305": "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
	"ECDHE-RSA-CHACHA20-POLY1305":   "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
	"ECDHE-ECDSA-AES128-SHA256":     "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
	"ECDHE-RSA-AES128-SHA256":       "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
	"ECDHE-ECDSA-AES128-SHA":        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
	"ECDHE-RSA-AES128-SHA":          "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
	"ECDHE-ECDSA-AES256-SHA":        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
	"ECDHE-RSA-AES256-SHA":          "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
	"AES128-GCM-SHA256":             "TLS_RSA_WITH_AES_128_GCM_SHA256",
	"AES256-GCM-SHA384":             "TLS_RSA_WITH_AES_256_GCM_SHA384",
	"AES128-SHA256":                 "TLS_RSA_WITH_AES_128_CBC_SHA256",
	"AES128-SHA":                    "TLS_RSA_WITH_AES_128_CBC_SHA",
	"AES256-SHA":                    "TLS_RSA_WITH_AES_256_CBC_SHA",
	"DES-CBC3-SHA":                  "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
}

// Args are the daemons' flags for the profile (serving.TLSFlags): its minimum version, and
// the suites below TLS 1.3 by their IANA names, in the profile's order (a change of order
// would roll the pods). A profile of TLS 1.3 alone needs no suites.
func (p TLSProfile) Args() []string {
	args := []string{"--tls-min-version=" + p.MinTLSVersion}
	if names := p.suites(); p.MinTLSVersion != "VersionTLS13" && len(names) > 0 {
		args = append(args, "--tls-cipher-suites="+strings.Join(names, ","))
	}
	return args
}

// suites are the profile's TLS 1.0-1.2 suites Go implements, by their IANA names.
func (p TLSProfile) suites() []string {
	var names []string
	for _, c := range p.Ciphers {
		if n, ok := ianaCiphers[c]; ok {
			names = append(names, n)
		} else if _, ok := serving.CipherSuite(c); ok { // a Custom profile may name them the IANA way
			names = append(names, c)
		}
	}
	return names
}
