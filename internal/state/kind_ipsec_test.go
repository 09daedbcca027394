package state

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nmoverlay/nmoverlay/test/published"
)

const testPSK = "psk_password"

// TestIPsecExamples: nmstate's two IPsec examples parse, as type ipsec with no state
// (up, nmstate's default), and need the libreswan capability.
func TestIPsecExamples(t *testing.T) {
	for _, name := range []string{"ipsec_psk.yaml", "ipsec_x509.yaml"} {
		doc, err := published.Nmstate(name)
		if err != nil {
			t.Fatal(err)
		}
		s, needs, err := ParseNeeds([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		it := s.Interfaces[0]
		l := SectionOf[*LibreswanConfig](it)
		if it.Type != IPsec || it.State != "" || l == nil || l.Right != "192.0.2.252" || l.IKEv2 != "insist" {
			t.Errorf("%s: %+v", name, it)
		}
		if len(needs) != 1 || needs[0] != (Need{Path: "interfaces[0].type", Capability: CapabilityLibreswan}) {
			t.Errorf("%s: needs %v", name, needs)
		}
	}
}

// TestSecretNeverPrinted: the psk shows in no text made of the state: fmt with any verb,
// the section's String, verify's differences, a merge conflict.
func TestSecretNeverPrinted(t *testing.T) {
	doc, _ := published.Nmstate("ipsec_psk.yaml")
	s := mustParse(t, doc)
	l := SectionOf[*LibreswanConfig](s.Interfaces[0])
	if l.PSK != testPSK {
		t.Fatalf("psk %q", l.PSK)
	}
	var texts []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		texts = append(texts, fmt.Sprintf(verb, s), fmt.Sprintf(verb, *l), fmt.Sprintf(verb, l.PSK))
	}
	texts = append(texts, l.String(), s.Interfaces[0].Section.(fmt.Stringer).String())
	other := *l
	other.Right = "192.0.2.99"
	l.verify(func(f string, a ...any) { texts = append(texts, fmt.Sprintf(f, a...)) }, s.Interfaces[0], &other)
	if len(texts) == 0 || !strings.Contains(texts[len(texts)-1], "192.0.2.99") {
		t.Errorf("verify: no difference reported: %q", texts)
	}

	// Two policies with different psks, and two with different rights.
	doc2 := strings.Replace(doc, testPSK, "other_password", 1)
	_, err := Merge([]Source{{Policy: "a", State: s}, {Policy: "b", State: mustParse(t, doc2)}})
	if err == nil || !strings.Contains(err.Error(), "their secrets differ") {
		t.Errorf("merge of two psks: %v", err)
	} else {
		texts = append(texts, err.Error())
	}
	_, err = Merge([]Source{{Policy: "a", State: s}, {Policy: "b", State: mustParse(t, strings.Replace(doc, "192.0.2.252", "192.0.2.9", 1))}})
	if err == nil {
		t.Error("merge of two rights: no conflict")
	} else {
		texts = append(texts, err.Error())
	}
	for _, text := range texts {
		if strings.Contains(text, testPSK) || strings.Contains(text, "other_password") || strings.Contains(text, fmt.Sprintf("%x", testPSK)) {
			t.Errorf("the psk is printed: %s", text)
		}
	}

	// JSON keeps it: policies are merged through JSON.
	m, err := Merge([]Source{{Policy: "a", State: s}})
	if err != nil {
		t.Fatal(err)
	}
	if got := SectionOf[*LibreswanConfig](m.State.Interfaces[0]); got == nil || got.PSK != testPSK {
		t.Errorf("merged: psk lost: %v", got)
	}
	b, _ := json.Marshal(s)
	if !strings.Contains(string(b), testPSK) {
		t.Errorf("JSON dropped the psk: %s", b)
	}
}

// TestLibreswanVerify: everything but the psk is compared; numbers given as strings
// compare as numbers.
func TestLibreswanVerify(t *testing.T) {
	s := mustParse(t, `interfaces: [{name: c, type: ipsec, libreswan: {right: 192.0.2.252, psk: x, dpddelay: '0x1e', ipsec-interface: 9, leftmodecfgclient: false}}]`)
	want := SectionOf[*LibreswanConfig](s.Interfaces[0])
	got := &LibreswanConfig{Right: "192.0.2.252", DPDDelay: ptr(30), IPsecInterface: "9", LeftModeCfgClient: ptr(false)}
	var diffs []string
	add := func(f string, a ...any) { diffs = append(diffs, fmt.Sprintf(f, a...)) }
	want.verify(add, s.Interfaces[0], got)
	if len(diffs) > 0 {
		t.Errorf("differences: %v", diffs)
	}
	got.Kind = "transport"
	want.verify(add, s.Interfaces[0], got)
	want.verify(add, s.Interfaces[0], nil)
	if len(diffs) != 2 || !strings.Contains(diffs[0], `"type":"transport"`) || !strings.Contains(diffs[1], "none, want") {
		t.Errorf("differences: %q", diffs)
	}
}
