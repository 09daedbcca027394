package networkmanager

import (
	"testing"

	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/published"
)

// TestMACsecProfile maps nmstate's MACsec example to NetworkManager's settings as nmstate
// writes them (port 0 left to NetworkManager), and reads the profile back into a section
// that verifies against the example, the key aside.
func TestMACsecProfile(t *testing.T) {
	doc, err := published.Nmstate("macsec0_up.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := state.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	it := s.Interfaces[0]
	p, err := buildProfile(it, state.MACsec, nil, "", profileExtras{}, "u")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		key  string
		want any
	}{
		{"parent", "eth1"}, {"mode", int32(0)}, {"encrypt", true}, {"mka-cak", "50b71a8ef0bd5751ea76de6d6c98c03a"}, {"mka-cak-flags", uint32(0)},
		{"mka-ckn", "f2b4297d39da7330910a74abc0449feb45b5c0b9fc23df1430e1898fcf1c4550"}, {"validation", int32(2)}, {"send-sci", true},
	} {
		if got := p["macsec"][want.key].Value(); got != want.want {
			t.Errorf("macsec.%s: %#v, want %#v", want.key, got, want.want)
		}
	}
	if _, ok := p["macsec"]["port"]; ok {
		t.Errorf("macsec.port %v: nmstate's 0 leaves NetworkManager's", p["macsec"]["port"])
	}
	if p.str("connection", "type") != "macsec" {
		t.Errorf("connection.type %q", p.str("connection", "type"))
	}

	// Read back as NetworkManager hands it out: without the key, and without what has
	// NetworkManager's default (encrypt, send-sci, validation strict, port 1).
	for _, k := range []string{"mka-cak", "encrypt", "send-sci", "validation", "port"} {
		delete(p["macsec"], k)
	}
	got := state.Interface{Name: it.Name, Type: state.MACsec, State: state.Up}
	describe(&got, p, nil, nil, nil)
	if diffs := state.Verify(state.State{Interfaces: []state.Interface{it}}, state.State{Interfaces: []state.Interface{got}}); len(diffs) > 0 {
		t.Errorf("read back: %v", diffs)
	}
	state.SectionOf[*state.MACsecConfig](got).Encrypt = false
	if diffs := state.Verify(state.State{Interfaces: []state.Interface{it}}, state.State{Interfaces: []state.Interface{got}}); len(diffs) == 0 {
		t.Error("a MACsec interface that does not encrypt verifies as one that does")
	}
}
