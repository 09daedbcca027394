package keyfile

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// What Marshal writes, Read reads back the same, whatever the values hold.
func TestMarshalReadsBack(t *testing.T) {
	f := File{
		"ipv4":       {"method": "manual", "address1": "192.0.2.10/24"},
		"connection": {"id": "br 0", "uuid": "u", "type": "bridge"},
		"user":       {"nmstate.interface.description": " two\tlines\nand a \\ backslash "},
		"empty":      {},
	}
	b, err := f.Marshal("connection")
	if err != nil {
		t.Fatal(err)
	}
	want := "[connection]\nid=br 0\ntype=bridge\nuuid=u\n\n[ipv4]\naddress1=192.0.2.10/24\nmethod=manual\n\n[user]\n" +
		`nmstate.interface.description=\stwo\tlines\nand a \\ backslash\s` + "\n"
	if string(b) != want {
		t.Errorf("wrote\n%s\nwant\n%s", b, want)
	}
	path := filepath.Join(t.TempDir(), "p.nmconnection")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	delete(f, "empty")
	if !reflect.DeepEqual(got, f) {
		t.Errorf("read back %v, want %v", got, f)
	}
}

func TestMarshalRefusesNames(t *testing.T) {
	for _, f := range []File{
		{"a]b": {"k": "v"}},
		{"s": {"k=v": "v"}},
		{"s": {" k": "v"}},
		{"s": {"": "v"}},
	} {
		if _, err := f.Marshal(); err == nil {
			t.Errorf("%v: written", f)
		}
	}
}
