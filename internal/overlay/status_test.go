package overlay

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nmoverlay/nmoverlay/internal/paths"
	"github.com/nmoverlay/nmoverlay/test/ci"
)

func TestManifestDiff(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a.nmconnection", "a")
	write("b.nmconnection", "b")
	before, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d := before.Diff(before); len(d) != 0 {
		t.Fatalf("self diff %v", d)
	}
	write("a.nmconnection", "a2")
	write("c.nmconnection", "c")
	if err := os.Remove(filepath.Join(dir, "b.nmconnection")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	after, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"changed a.nmconnection", "removed b.nmconnection", "added c.nmconnection"}
	if got := before.Diff(after); !reflect.DeepEqual(got, want) {
		t.Errorf("diff %v, want %v", got, want)
	}
	// A mode change is a change too: NetworkManager refuses keyfiles that are not 0600.
	if err := os.Chmod(filepath.Join(dir, "c.nmconnection"), 0o644); err != nil {
		t.Fatal(err)
	}
	again, _ := ReadManifest(dir)
	if got := after.Diff(again); !reflect.DeepEqual(got, []string{"changed c.nmconnection"}) {
		t.Errorf("mode change: %v", got)
	}
}

// TestStatusClassifies builds the upper layer overlayfs would leave (a new file, a copied-up
// file, a whiteout) without mounting, and checks the classification. The whiteout is a 0/0
// character device, which needs CAP_MKNOD; the node tier checks the same on a real mount.
func TestStatusClassifies(t *testing.T) {
	if os.Geteuid() != 0 {
		ci.Require(t, "mknod of a whiteout needs root")
	}
	root := t.TempDir()
	l := paths.Layout{Lower: filepath.Join(root, "lower"), RunDir: filepath.Join(root, "run")}
	for _, d := range []string{l.Lower, l.Upper()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	profile := func(id, ifname string) []byte {
		return []byte("[connection]\nid=" + id + "\nuuid=u-" + id + "\ntype=ethernet\ninterface-name=" + ifname +
			"\n\n[user]\nnmstate.io/policy=p1\n")
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(l.Lower, "kept.nmconnection"), profile("kept", "eth0"), 0o600))
	must(os.WriteFile(filepath.Join(l.Lower, "mod.nmconnection"), profile("mod", "eth1"), 0o600))
	must(os.WriteFile(filepath.Join(l.Lower, "gone.nmconnection"), profile("gone", "eth2"), 0o600))
	must(os.WriteFile(filepath.Join(l.Upper(), "mod.nmconnection"), profile("mod", "eth1"), 0o600))
	must(os.WriteFile(filepath.Join(l.Upper(), "new.nmconnection"), profile("new", "br0"), 0o600))
	must(unix.Mknod(filepath.Join(l.Upper(), "gone.nmconnection"), unix.S_IFCHR|0o000, 0))

	got, err := Status(l)
	must(err)
	user := map[string]string{"nmstate.io/policy": "p1"}
	want := []ProfileChange{
		{File: "gone.nmconnection", Change: Deleted, ID: "gone", UUID: "u-gone", Type: "ethernet", Interface: "eth2", User: user},
		{File: "mod.nmconnection", Change: Modified, ID: "mod", UUID: "u-mod", Type: "ethernet", Interface: "eth1", User: user},
		{File: "new.nmconnection", Change: Added, ID: "new", UUID: "u-new", Type: "ethernet", Interface: "br0", User: user},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Status =\n%+v\nwant\n%+v", got, want)
	}
}
