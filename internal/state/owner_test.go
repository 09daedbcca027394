package state

import "testing"

func TestOwnerOf(t *testing.T) {
	names := []string{"eth0", "eth0.100", "br-ex", "br-ex,type=ovs-bridge", "eth1"}
	for path, want := range map[string]string{
		"eth0.mtu":                          "eth0",
		"eth0.100.mtu":                      "eth0.100",
		"eth0.100":                          "eth0.100",
		"eth0.1000.mtu":                     "eth0",
		"br-ex,type=ovs-bridge.bridge.port": "br-ex,type=ovs-bridge",
		"br-ex.ipv4":                        "br-ex",
		"eth1: does not exist":              "eth1",
		"eth10.mtu":                         "",
		"routes.config[0]: missing":         "",
	} {
		if got := OwnerOf(path, names); got != want {
			t.Errorf("OwnerOf(%q) = %q, want %q", path, got, want)
		}
	}
}
